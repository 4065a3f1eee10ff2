import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import TandemCore
import Testing
@testable import TandemNet

/// Strangers holding connections open, over real loopback sockets from several source addresses: what they hold
/// is bounded per address, per session and in all, it is given back, and real joiners still get in.
@Suite(.serialized)
struct ConnectionPressureTests {
    /// File descriptors this process has open.
    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    static func describeDescriptors() -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
            .sorted().joined(separator: " ")
    }

    /// Raises this process's soft limit on open files towards `wanted` (never above the hard limit).
    static func raiseDescriptorLimit(to wanted: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(wanted) else { return }
        limit.rlim_cur = min(limit.rlim_max, rlim_t(wanted))
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// Connects from `source`, authenticates to `session` with `secret` and waits for `accepted` (never joins).
    /// Returns the peer if the server accepted it, nil if it closed the connection first.
    static func authenticateAndIdle(port: Int, from source: String, session: String, secret: String,
                                    create: Bool = false) async -> RawPeer? {
        guard let peer = try? await RawPeer.connect(port: port, from: source) else { return nil }
        do {
            try await peer.authenticate(session: session, secret: secret, create: create)
        } catch {
            try? await peer.channel.close()
            return nil
        }
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline {
            if peer.count(of: .accepted) > 0 { return peer }
            if !peer.channel.isActive { return nil }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        try? await peer.channel.close()
        return nil
    }

    @Test("a thousand authenticate-and-idle connections from one address: bounded, a real join still works, all closed when their session expires")
    func authenticatedIdlers() async throws {
        let server = try await HardeningServerTests.startServer {
            $0.allowsRemoteSessionCreation = true
            $0.unjoinedSessionLifetime = .seconds(4)
            $0.joinTimeout = .seconds(60)  // the session's expiry, not the join deadline, is what ends them here
            $0.heartbeatTimeout = .seconds(30)
        }
        let real = try server.createSession(id: "movie-night")
        let host = try await TandemClient.connect(invite: real, name: "ann", options: clientOptions(asHost: true))
        // The event loops raw peers use are made on first use: make them before counting descriptors.
        try await RawPeer.connect(port: server.port, from: "127.0.0.3").channel.close()
        #expect(await HardeningServerTests.eventually(within: 2) { server.connectionCount == 1 })
        // So are the timers of delayed work (a timerfd, kept for the process's life).
        await withCheckedContinuation { done in DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5)) { done.resume() } }
        try await Task.sleep(for: .milliseconds(5))
        let baseline = Self.openDescriptors()

        // The attacker creates a session of its own from 127.0.0.2, then opens connections that authenticate to
        // it and never join, 50 at a time.
        let attacker = "127.0.0.2"
        let secret = "attacker-secret"
        guard let creator = await Self.authenticateAndIdle(port: server.port, from: attacker, session: "mine",
                                                           secret: secret, create: true) else {
            Issue.record("the attacker could not create its session")
            return
        }
        var held: [RawPeer] = [creator]
        var peakFromAttacker = 0
        for _ in 0..<20 {
            let batch = await withTaskGroup(of: RawPeer?.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        await Self.authenticateAndIdle(port: server.port, from: attacker, session: "mine", secret: secret)
                    }
                }
                var accepted: [RawPeer] = []
                for await peer in group { if let peer { accepted.append(peer) } }
                return accepted
            }
            held += batch
            peakFromAttacker = max(peakFromAttacker, server.connectionCount(from: attacker))
        }
        // At most maxWaitingToJoinPerSession of them are held in the session's waiting room.
        #expect(held.count <= server.configuration.maxWaitingToJoinPerSession,
                "\(held.count) authenticated idle connections accepted")
        #expect(peakFromAttacker <= server.configuration.maxConnectionsPerAddress)

        // A real joiner gets in within 2 s.
        let start = ContinuousClock.now
        let joiner = try await TandemClient.connect(invite: real, name: "bob", options: clientOptions())
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect(joiner.closedReason == nil && host.closedReason == nil)

        // The attacker's session expires (nobody joined it) and takes every connection authenticated to it along.
        #expect(await HardeningServerTests.eventually(within: 10) { server.connectionCount(from: attacker) == 0 },
                "\(server.connectionCount(from: attacker)) connections still open after the session expired")
        for peer in held { #expect(await peer.bytesUntilClosed(within: 2) != nil) }
        #expect(!server.sessionIDs.contains("mine"))
        await joiner.close()
        // Back to the count before the attack (or below it: in the whole suite, what earlier tests left may still
        // be closing meanwhile).
        #expect(await HardeningServerTests.eventually(within: 5) { Self.openDescriptors() <= baseline },
                "file descriptors: \(Self.openDescriptors()) against \(baseline) before the attack: \(Self.describeDescriptors())")
        await host.close()
        await server.shutdown()
    }

    @Test("an authenticated connection that does not join in time is closed")
    func joinDeadline() async throws {
        let server = try await HardeningServerTests.startServer {
            $0.joinTimeout = .milliseconds(700)
            $0.heartbeatTimeout = .seconds(30)
        }
        let invite = try server.createSession(id: "deadline")
        let peer = try await RawPeer.connect(port: server.port)
        try await peer.authenticate(session: invite.session, secret: invite.secret)
        _ = try await peer.waitForFrame(.accepted)
        let start = ContinuousClock.now
        #expect(await peer.closingErrorCode(within: 5) == .helloTimeout)
        #expect(ContinuousClock.now - start < .seconds(4))
        // One that joins in time stays.
        let member = try await TandemClient.connect(invite: invite, name: "stays", options: clientOptions())
        try await Task.sleep(nanoseconds: 1_200_000_000)
        #expect(member.closedReason == nil)
        await member.close()
        await server.shutdown()
    }

    @Test("connections from one address beyond its bound are closed at once; other addresses are not affected")
    func perAddressConnectionBound() async throws {
        let server = try await HardeningServerTests.startServer {
            $0.maxConnectionsPerAddress = 6
            $0.maxUnauthenticatedConnectionsPerAddress = 6
            $0.heartbeatTimeout = .seconds(30)
        }
        let invite = try server.createSession(id: "bounded")
        var members: [TandemClientConnection] = []
        for index in 0..<4 {
            members.append(try await TandemClient.connect(invite: invite, name: "m\(index)", options: clientOptions()))
        }
        let idle = try await (0..<2).asyncMap { _ in try await RawPeer.connect(port: server.port) }
        #expect(await HardeningServerTests.eventually(within: 2) { server.connectionCount(from: "127.0.0.1") == 6 })
        // Joined or not, six connections is the bound: a seventh is closed without a word.
        let seventh = try await RawPeer.connect(port: server.port)
        let refused = await seventh.bytesUntilClosed(within: 3)
        #expect(refused != nil && refused?.readableBytes == 0)
        let elsewhere = try await RawPeer.connect(port: server.port, from: "127.0.0.3")
        try await elsewhere.joinAndGoSilent(invite: invite, name: "other")
        #expect(members.allSatisfy { $0.closedReason == nil })
        for peer in idle { try? await peer.channel.close() }
        for member in members { await member.close() }
        await server.shutdown()
    }

    @Test("40 addresses x 16 idle connections, reopened as they close: a real join and a token reconnect get in within 2 s")
    func fullServerStaysJoinable() async throws {
        let server = try await HardeningServerTests.startServer {
            $0.maxUnauthenticatedConnections = 512
            $0.maxUnauthenticatedConnectionsPerAddress = 16
            $0.handshakeTimeout = .seconds(30)  // the strangers would otherwise be timed out; they must be pushed out
            $0.heartbeatTimeout = .seconds(30)
        }
        Self.raiseDescriptorLimit(to: 8_192)  // 640 strangers' sockets on both ends live in this process
        let invite = try server.createSession(id: "crowded")
        let host = try await TandemClient.connect(invite: invite, name: "ann", options: clientOptions(asHost: true))
        let guest = try await TandemClient.connect(invite: invite, name: "bob", options: clientOptions())

        // 640 strangers, each reopening its connection whenever the server closes it, for a bounded time.
        let stop = Counters()
        let opened = Counters()
        let strangers = Task {
            await withTaskGroup(of: Void.self) { group in
                for address in 2...41 {
                    for _ in 0..<16 {
                        group.addTask {
                            let deadline = ContinuousClock.now + .seconds(30)
                            while !stop.isSet, ContinuousClock.now < deadline {
                                guard let peer = try? await RawPeer.connect(port: server.port, from: "127.0.0.\(address)") else {
                                    try? await Task.sleep(nanoseconds: 20_000_000)
                                    continue
                                }
                                opened.add()
                                // Idle until closed (checked in slices, so that `stop` is seen).
                                while !stop.isSet, await peer.bytesUntilClosed(within: 0.25) == nil {}
                                try? await peer.channel.close()
                            }
                        }
                    }
                }
            }
        }
        #expect(await HardeningServerTests.eventually(within: 15) {
            server.unauthenticatedConnectionCount >= 500 && opened.count >= 640
        }, "the strangers did not fill the server: \(server.unauthenticatedConnectionCount) unauthenticated")

        // A new joiner from 127.0.0.1 gets in.
        var start = ContinuousClock.now
        let joiner = try await TandemClient.connect(invite: invite, name: "cid", options: clientOptions())
        #expect(ContinuousClock.now - start < .seconds(2))

        // Bob's link drops; he comes back as himself with his token.
        await guest.abort()
        var options = clientOptions(reconnectAs: guest.localParticipantID)
        options.reconnectToken = guest.welcome.reconnectToken
        start = ContinuousClock.now
        let back = try await TandemClient.connect(invite: invite, name: "bob", options: options)
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect(back.localParticipantID == guest.localParticipantID)
        #expect(host.closedReason == nil && joiner.closedReason == nil)
        #expect(server.unauthenticatedConnectionCount <= 512)
        #expect(server.admissionCounters.evicted > 0)

        stop.set()
        await strangers.value
        #expect(await HardeningServerTests.eventually(within: 5) { server.unauthenticatedConnectionCount == 0 })
        await back.close()
        await joiner.close()
        await host.close()
        await server.shutdown()
    }
}

/// A flag and a count shared by many tasks.
private final class Counters: Sendable {
    private let flag = Atomic<Bool>(false)
    private let value = Atomic<Int>(0)
    var isSet: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
    func add() { value.add(1, ordering: .relaxed) }
}

extension Sequence {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
