import Foundation

extension RelayBenchmark {
    /// The CPU the external server and this generator had used when the load began, so that what each used while
    /// it ran can be read at the end — the one way both generators (Tandem clients and the bare load) fill in a
    /// run's server and generator figures.
    struct LoadStart {
        let serverPID: Int32?
        private let serverCPU: (user: Int64, system: Int64)?
        private let ownCPU: Int64?

        /// Reads both now (call it as the load begins).
        init(serverPID: Int32?) {
            self.serverPID = serverPID
            serverCPU = serverPID.flatMap(RelayBenchmark.processCPUTimes)
            ownCPU = RelayBenchmark.processCPUTime(getpid())
        }

        /// The server's memory, descriptors and CPU since the start, and this generator's CPU, read now (while
        /// everyone is still connected); `elapsed` (ns) is the time since the start. Empty without a server process
        /// of its own.
        func read(elapsed: Double) -> Figures {
            var figures = Figures()
            guard let pid = serverPID else { return figures }
            let memory = RelayBenchmark.processMemory(pid)
            figures.serverResidentMemory = memory?.0
            figures.serverPeakMemory = memory?.1
            figures.serverFileDescriptors = BenchProcess.openFileDescriptors(pid)
            if let before = serverCPU, let now = RelayBenchmark.processCPUTimes(pid) {
                let used = now.user + now.system - before.user - before.system
                figures.serverCPUTime = used
                figures.serverKernelCPUTime = now.system - before.system
                figures.serverCPUPercent = Double(used) / elapsed * 100
            }
            if let before = ownCPU, let now = RelayBenchmark.processCPUTime(getpid()) {
                figures.generatorCPUPercent = Double(now - before) / elapsed * 100
            }
            return figures
        }
    }

    /// What `LoadStart.read` found, for a run's result.
    struct Figures {
        var serverResidentMemory: Int64?
        var serverPeakMemory: Int64?
        var serverFileDescriptors: Int?
        var serverCPUTime: Int64?
        var serverKernelCPUTime: Int64?
        var serverCPUPercent: Double?
        var generatorCPUPercent: Double?

        func write(into result: inout Result) {
            result.serverResidentMemory = serverResidentMemory
            result.serverPeakMemory = serverPeakMemory
            result.serverFileDescriptors = serverFileDescriptors
            result.serverCPUTime = serverCPUTime
            result.serverKernelCPUTime = serverKernelCPUTime
            result.serverCPUPercent = serverCPUPercent
            result.generatorCPUPercent = generatorCPUPercent
        }
    }
}
