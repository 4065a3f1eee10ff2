import CTandemBareSockets
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension BareRelay {
    /// The bench's load against a bare relay at 127.0.0.1:`port` (process `serverPID`): the participants,
    /// sessions, rate, payload and pacing of `tandem bench relay` against Tandem's server (`LoopSenders`: everyone
    /// due within 0.25 ms of the earliest goes together, phases spread evenly over the interval), over plain
    /// sockets on one thread, one `write` per message. Latency is from the sender's stamp to the read that
    /// completes the frame, on this process's `CLOCK_MONOTONIC`.
    static func load(_ configuration: RelayBenchmark.Configuration, port: Int,
                     serverPID: Int32?) throws(BenchError) -> RelayBenchmark.Result {
        let sessions = Swift.max(1, configuration.sessions)
        let serverMemoryAtStart = serverPID.flatMap(RelayBenchmark.processMemory)?.0
        var connections: [BareConnection] = []
        var sessionOfSender: [Int] = []
        var failures: [String] = []
        for index in 0..<configuration.participants {
            do {
                let fd = try BareSocket.connect(port: port)
                // A fresh socket's buffer takes the 4-byte header whole.
                var header = UInt32(index % sessions).bigEndian
                _ = write(fd, &header, 4)
                connections.append(BareConnection(fd: fd, expectsHeader: false))
                sessionOfSender.append(index % sessions)
            } catch {
                failures.append(error.description)
            }
        }
        defer { for connection in connections { close(connection.fd) } }
        var sessionSizes = [Int](repeating: 0, count: sessions)
        for session in sessionOfSender { sessionSizes[session] += 1 }
        let others = sessionOfSender.map { sessionSizes[$0] - 1 }
        let poll = try BareEpoll(capacity: 1024)
        var byDescriptor = [BareConnection?](repeating: nil, count: Int(connections.map(\.fd).max() ?? 0) + 1)
        for connection in connections {
            byDescriptor[Int(connection.fd)] = connection
            poll.add(connection.fd, BareEpoll.readable)
        }
        let timer = tdm_bare_timer_create()
        guard timer >= 0 else { throw BenchError("timerfd_create failed: \(String(cString: strerror(errno)))") }
        defer { close(timer) }
        poll.add(timer, BareEpoll.readable)
        // The relay has registered everyone well within this (it accepts as fast as the connections come).
        usleep(1_000_000)

        let count = connections.count
        let interval = Int64(1e9 / Swift.max(0.001, configuration.messagesPerSecond))
        let slack: Int64 = 250_000
        let payloadSize = Swift.max(16, configuration.payloadSize)
        let loadStart = RelayBenchmark.LoadStart(serverPID: serverPID)
        let start = BareSocket.now() + 10_000_000
        let endAt = start + Int64(configuration.duration * 1e9)
        let drainUntil = endAt + 1_000_000_000
        /// When send number `k` is due: participant k mod count, phases spread over the interval.
        func due(_ k: Int) -> Int64 {
            start + Int64(k / Swift.max(1, count)) * interval + Int64(k % Swift.max(1, count)) * interval / Int64(Swift.max(1, count))
        }
        func arm(_ at: Int64) { _ = tdm_bare_timer_arm_at(timer, at) }
        var latencies: [Int64] = []
        latencies.reserveCapacity(Int(Double(count) * configuration.messagesPerSecond * configuration.duration) * 4)
        var lags: [Int64] = []
        var sent = 0, expected = 0, failed = 0
        var next = 0
        var frame = [UInt8](repeating: 0, count: 4 + payloadSize)
        frame.withUnsafeMutableBytes { $0.storeBytes(of: UInt32(payloadSize).bigEndian, as: UInt32.self) }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
        defer { scratch.deallocate() }
        if count > 0 { arm(due(0)) }

        func fire() {
            var expirations: UInt64 = 0
            _ = read(timer, &expirations, 8)
            let now = BareSocket.now()
            while count > 0, due(next) <= now + slack, due(next) < endAt {
                let sender = next % count
                lags.append(Swift.max(0, now - due(next)))
                frame.withUnsafeMutableBytes { raw in
                    raw.storeBytes(of: now, toByteOffset: 4, as: Int64.self)
                    raw.storeBytes(of: Int64(sender), toByteOffset: 12, as: Int64.self)
                }
                let connection = connections[sender]
                connection.outbound.append(contentsOf: frame)
                if connection.flush(poll) {
                    sent += 1
                    expected += others[sender]
                } else {
                    failed += 1
                }
                next += 1
            }
            if count > 0, due(next) < endAt { arm(due(next)) }
        }

        while true {
            let now = BareSocket.now()
            guard now < drainUntil else { break }
            let ready = poll.wait(timeout: Int32(Swift.min(100, (drainUntil - now) / 1_000_000 + 1)))
            for index in 0..<ready {
                let (fd, mask) = poll.event(at: index)
                if fd == timer {
                    fire()
                    continue
                }
                guard let connection = byDescriptor[Int(fd)] else { continue }
                if mask & BareEpoll.writable != 0 { _ = connection.flush(poll) }
                guard mask & ~BareEpoll.writable != 0 else { continue }
                var arrivedAt: Int64 = 0
                let open = connection.read(into: scratch) { payload in
                    if arrivedAt == 0 { arrivedAt = BareSocket.now() }
                    guard payload.count >= 8 else { return }
                    latencies.append(arrivedAt - payload.loadUnaligned(as: Int64.self))
                }
                if !open {
                    poll.modify(fd, 0)
                    byDescriptor[Int(fd)] = nil
                }
            }
        }

        let figures = loadStart.read(elapsed: Double(BareSocket.now() - start))
        var result = RelayBenchmark.Result(
            configuration: configuration, joined: count, connectFailures: failures, sent: sent, expected: expected,
            received: latencies.count, p50: Distribution.percentile(50, of: latencies) ?? 0,
            p99: Distribution.percentile(99, of: latencies) ?? 0, max: latencies.max() ?? 0,
            residentMemory: nil, residentMemoryBefore: nil, sendFailures: failed,
            generatorLagP99: Distribution.percentile(99, of: lags), serverResidentMemoryAtStart: serverMemoryAtStart)
        figures.write(into: &result)
        return result
    }
}
