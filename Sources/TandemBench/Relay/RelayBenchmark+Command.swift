import Foundation

extension RelayBenchmark {
    /// What `tandem bench relay` was asked for.
    package struct Request: Sendable {
        package var participants: Int
        package var perSession: Int
        package var rate: Double
        package var duration: Double
        package var settle: Double
        package var ramp: Bool
        package var maxParticipants: Int
        package var inProcess: Bool
        package var floor: Bool
        package var linkReports: Bool

        package init(participants: Int, perSession: Int, rate: Double, duration: Double, settle: Double, ramp: Bool,
                     maxParticipants: Int, inProcess: Bool, floor: Bool, linkReports: Bool) {
            (self.participants, self.perSession, self.rate, self.duration) = (participants, perSession, rate, duration)
            (self.settle, self.ramp, self.maxParticipants) = (settle, ramp, maxParticipants)
            (self.inProcess, self.floor, self.linkReports) = (inProcess, floor, linkReports)
        }

        /// The command line that repeats it.
        package var command: String {
            var command = "tandem bench relay --participants \(participants) --per-session \(perSession) --rate \(String(format: "%g", rate)) --duration \(String(format: "%g", duration))"
            if settle != 40 { command += " --settle \(String(format: "%g", settle))" }
            if ramp { command += " --ramp" }
            if ramp && maxParticipants != 16_000 { command += " --max-participants \(maxParticipants)" }
            if inProcess { command += " --in-process" }
            if floor { command += " --floor" }
            if !linkReports { command += " --no-link-reports" }
            return command
        }
    }

    /// Measures at the requested number of participants, and with `ramp` doubles it while the targets are met (up to
    /// `maxParticipants`); says each result, a table of them when there are several, the machine and the command.
    package static func run(_ request: Request, say: @Sendable (String) -> Void) async throws {
        var level = request.participants
        var rows: [Result] = []
        while true {
            let result = try await measure(participants: level, perSession: request.perSession, rate: request.rate,
                                           duration: request.duration, settle: request.settle, standalone: !request.inProcess,
                                           floor: request.floor, linkReports: request.linkReports)
            rows.append(result)
            say(result.description)
            say("")
            guard request.ramp, result.meetsTargets, level * 2 <= request.maxParticipants else { break }
            level *= 2
        }
        if rows.count > 1 { say(Result.table(rows)) }
        say("machine: \(machineDescription())")
        say("reproduce: \(request.command)")
    }
}
