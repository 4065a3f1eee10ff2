import Foundation
import Synchronization
import Tandem
import TandemPeer
import TandemTesting

/// One soak run against a server already listening on 127.0.0.1:`port`.
package struct Soak: Sendable {
    package var port: Int
    package var serverPID: Int32
    package var duration: Double
    package var stable: Int
    package var churners: Int
    package var rate: Double
    package var seed: UInt64

    package init(port: Int, serverPID: Int32, duration: Double, stable: Int, churners: Int, rate: Double, seed: UInt64) {
        self.port = port
        self.serverPID = serverPID
        self.duration = duration
        self.stable = stable
        self.churners = churners
        self.rate = rate
        self.seed = seed
    }

    package struct Report: Sendable {
        package var stable = 0, churners = 0
        package var duration = 0.0
        package var joins = 0, leaves = 0, kills = 0, reconnects = 0, reconnectsKeptIdentity = 0, joinFailures = 0
        package var stableSent = 0, stableExpected = 0, stableDelivered = 0, lost = 0
        package var churnDelivered = 0
        package var duplicated = 0, reordered = 0
        package var sendFailures = 0
        package var rssIdle: Int64?, rssWarm: Int64?, rssEnd: Int64?
        package var fdsBaseline: Int?, fdsEnd: Int?
        package var fdDifference: String?

        package var rssGrowth: Int64? { rssWarm.flatMap { warm in rssEnd.map { $0 - warm } } }
        package var meetsTargets: Bool {
            lost == 0 && duplicated == 0 && reordered == 0 && (rssGrowth ?? .max) <= 5 * 1_048_576
                && fdsEnd != nil && fdsEnd == fdsBaseline
        }

        package var rendered: String {
            func mb(_ v: Int64?) -> String { v.map { String(format: "%.1f MB", Double($0) / 1_048_576) } ?? "–" }
            let growth = rssGrowth.map { String(format: "%+.1f MB", Double($0) / 1_048_576) } ?? "–"
            return """
            soak: \(String(format: "%g", duration)) s, \(stable) stable + \(churners) churning participants, standalone server
              churn: \(joins) joins (\(joinFailures) refused or failed), \(leaves) leaves, \(kills) kills, \(reconnects) reconnects (\(reconnectsKeptIdentity) kept their identity)
              reliable, stable → stable: sent \(stableSent), delivered \(stableDelivered)/\(stableExpected), lost \(lost)
              reliable, all senders as seen by stable receivers: duplicated \(duplicated), reordered \(reordered) (\(churnDelivered) from churning senders); send failures \(sendFailures)
              server: RSS \(mb(rssIdle)) idle, \(mb(rssWarm)) after warm-up, \(mb(rssEnd)) at the end (\(growth)); fds \(fdsBaseline.map(String.init) ?? "–") before clients, \(fdsEnd.map(String.init) ?? "–") after\(fdDifference.map { " (\($0))" } ?? "")
              targets (0 lost, 0 duplicated, 0 reordered, RSS growth ≤ 5 MB, fds back to baseline): \(meetsTargets ? "met" : "NOT met")
            """
        }
    }

    /// What each stable receiver saw: per sender incarnation, the last number, and counts.
    private final class Ledger: Sendable {
        package struct State {
            package var last: [String: Int] = [:]
            package var delivered: [String: Int] = [:]
            package var duplicated = 0
            package var reordered = 0
        }
        package let state = Mutex(State())

        package func record(_ payload: Data) {
            // "sender/incarnation/number"
            let parts = String(decoding: payload, as: UTF8.self).split(separator: "/")
            guard parts.count == 3, let number = Int(parts[2]) else { return }
            let stream = "\(parts[0])/\(parts[1])"
            state.withLock { s in
                let last = s.last[stream] ?? 0
                if number <= last { s.duplicated += 1; return }
                if number != last + 1 { s.reordered += 1 }
                s.last[stream] = number
                s.delivered[stream, default: 0] += 1
            }
        }
    }

    private final class Counters: Sendable {
        package let value = Mutex(Report())
    }

    package func run() async throws(BenchError) -> Report {
        let counters = Counters()
        // The server sets up its signal handling just after it says where it listens: let it settle first.
        try? await Task.sleep(for: .seconds(1))
        let baselineFDs = ProcessProbe.openFiles(serverPID)
        let baselineKinds = ProcessProbe.openFileKinds(serverPID)
        let idle = ProcessProbe.residentMemory(serverPID)
        var fresh = Invite.random(host: "127.0.0.1", port: port)
        fresh.session = "soak"
        let invite = fresh
        var hostOptions = TandemClient.Options()
        hostOptions.createSession = true
        hostOptions.asHost = true
        let host: TandemClientConnection
        do { host = try await TandemClient.connect(invite: invite, name: "stable-0", options: hostOptions) } catch {
            throw BenchError("cannot create the soak session: \(error)")
        }
        var stableLinks: [TandemClientConnection] = [host]
        for index in 1..<stable {
            do { stableLinks.append(try await TandemClient.connect(invite: invite, name: "stable-\(index)")) } catch {
                throw BenchError("stable participant \(index) cannot join: \(error)")
            }
        }
        let links = stableLinks
        let ledgers = links.map { _ in Ledger() }
        // Every receiver listens before anyone sends: a message that reaches a link nobody listens on yet is not
        // kept for a later listener, and a receiver task that starts late on a busy machine would miss the first.
        let inboxes = links.map { GroupSessionMessenger(link: $0).messages(of: Data.self) }
        let sentByStable = Locked<[String: Int]>([:])
        let deadline = ContinuousClock.now + .seconds(duration)
        let warmUp = ContinuousClock.now + .seconds(duration / 10)
        let interval = Duration.seconds(1 / rate)
        let rssWarm = Locked<Int64?>(nil)
        let pid = serverPID
        let churners = self.churners
        let seed = self.seed
        let rate = self.rate

        await withTaskGroup(of: Void.self) { group in
            // Stable receivers.
            for index in stableLinks.indices {
                let ledger = ledgers[index]
                let inbox = inboxes[index]
                group.addTask {
                    for await (payload, _) in inbox {
                        ledger.record(payload)
                        if ContinuousClock.now > deadline + .seconds(3) { break }
                    }
                }
            }
            // Stable senders.
            for (index, link) in stableLinks.enumerated() {
                let messenger = GroupSessionMessenger(link: link)
                group.addTask {
                    var number = 0
                    while ContinuousClock.now < deadline {
                        number += 1
                        do {
                            try await messenger.send(Data("stable-\(index)/0/\(number)".utf8))
                            sentByStable.withLock { $0["stable-\(index)", default: 0] = number }
                        } catch {
                            counters.value.withLock { $0.sendFailures += 1 }
                            number -= 1
                        }
                        try? await Task.sleep(for: interval)
                    }
                }
            }
            // Memory after the warm-up.
            group.addTask {
                try? await Task.sleep(until: warmUp)
                rssWarm.withLock { $0 = ProcessProbe.residentMemory(pid) }
            }
            // Churners.
            for index in 0..<churners {
                group.addTask {
                    var rng = SeededRandom(seed: seed &+ UInt64(index) &* 7919)
                    var incarnation = 0
                    while ContinuousClock.now < deadline {
                        incarnation += 1
                        let name = "churn-\(index)"
                        let link: TandemClientConnection
                        do {
                            link = try await TandemClient.connect(invite: invite, name: name)
                            counters.value.withLock { $0.joins += 1 }
                        } catch {
                            counters.value.withLock { $0.joinFailures += 1 }
                            try? await Task.sleep(for: .milliseconds(200))
                            continue
                        }
                        var current = link
                        // Each life: send for a while, then leave, get killed, or get cut and come back as itself.
                        for life in 0..<3 {
                            let stream = "\(name)-\(incarnation)/\(life)"
                            let messenger = GroupSessionMessenger(link: current)
                            let lifetime = ContinuousClock.now + .milliseconds(Int(300 + rng.next() % 2_700))
                            var number = 0
                            while ContinuousClock.now < min(lifetime, deadline) {
                                number += 1
                                do { try await messenger.send(Data("\(stream)/\(number)".utf8)) } catch { break }
                                try? await Task.sleep(for: .seconds(1 / rate))
                            }
                            let ending = rng.next() % 3
                            if ending == 2, life < 2, ContinuousClock.now < deadline {
                                // Cut, then reconnect as the same participant with its token.
                                let id = current.localParticipantID
                                let token = current.welcome.reconnectToken
                                await current.abort()
                                try? await Task.sleep(for: .milliseconds(Int(50 + rng.next() % 400)))
                                var options = TandemClient.Options()
                                options.reconnectAs = id
                                options.reconnectToken = token
                                do {
                                    let again = try await TandemClient.connect(invite: invite, name: name, options: options)
                                    counters.value.withLock {
                                        $0.reconnects += 1
                                        if again.localParticipantID == id { $0.reconnectsKeptIdentity += 1 }
                                    }
                                    current = again
                                    continue
                                } catch {
                                    counters.value.withLock { $0.joinFailures += 1 }
                                    break
                                }
                            }
                            if ending == 0 {
                                await current.close()
                                counters.value.withLock { $0.leaves += 1 }
                            } else {
                                await current.abort()
                                counters.value.withLock { $0.kills += 1 }
                            }
                            break
                        }
                        try? await Task.sleep(for: .milliseconds(Int(rng.next() % 500)))
                    }
                }
            }
            // Stop the receivers once everything has had time to arrive.
            group.addTask {
                try? await Task.sleep(until: deadline + .seconds(3))
                for link in links { await link.close() }
            }
        }

        // Every client is gone: wait for the server to let go of their sockets.
        var fdsEnd = ProcessProbe.openFiles(pid)
        let settle = ContinuousClock.now + .seconds(10)
        while fdsEnd != baselineFDs, ContinuousClock.now < settle {
            try? await Task.sleep(for: .milliseconds(200))
            fdsEnd = ProcessProbe.openFiles(pid)
        }

        var report = counters.value.withLock { $0 }
        report.stable = stable
        report.churners = churners
        report.duration = duration
        report.rssIdle = idle
        report.rssWarm = rssWarm.withLock { $0 }
        report.rssEnd = ProcessProbe.residentMemory(pid)
        report.fdsBaseline = baselineFDs
        report.fdsEnd = fdsEnd
        if fdsEnd != baselineFDs {
            let now = ProcessProbe.openFileKinds(pid)
            report.fdDifference = Set(now.keys).union(baselineKinds.keys).sorted().compactMap { kind in
                let change = (now[kind] ?? 0) - (baselineKinds[kind] ?? 0)
                return change == 0 ? nil : "\(kind) \(change > 0 ? "+" : "")\(change)"
            }.joined(separator: ", ")
        }
        let sent = sentByStable.withLock { $0 }
        report.stableSent = sent.values.reduce(0, +)
        for (index, ledger) in ledgers.enumerated() {
            ledger.state.withLock { s in
                report.duplicated += s.duplicated
                report.reordered += s.reordered
                for (sender, count) in sent where sender != "stable-\(index)" {
                    report.stableExpected += count
                    let got = s.delivered["\(sender)/0"] ?? 0
                    report.stableDelivered += got
                    report.lost += max(0, count - got)
                }
                report.churnDelivered += s.delivered.filter { $0.key.hasPrefix("churn-") }.values.reduce(0, +)
            }
        }
        return report
    }
}

/// Reads another process's memory and open files from /proc.
enum ProcessProbe {
    static func residentMemory(_ pid: Int32) -> Int64? { RelayBenchmark.processMemory(pid)?.0 }

    static func openFiles(_ pid: Int32) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }

    /// Open descriptors by kind ("socket", "anon_inode:[eventfd]", "/dev/null", …), to say what a difference is.
    static func openFileKinds(_ pid: Int32) -> [String: Int] {
        var kinds: [String: Int] = [:]
        for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)") else { continue }
            let kind = target.hasPrefix("socket:") ? "socket" : target.hasPrefix("pipe:") ? "pipe" : target
            kinds[kind, default: 0] += 1
        }
        return kinds
    }
}
