import CTandemBareSockets
import Foundation
import NIOCore
import NIOPosix
import Synchronization
import TandemCore
import Testing
@_spi(Testing) @testable import TandemNet

/// Clock probes' send times from the kernel's transmit stamps, with real sockets on 127.0.0.1: the sender beside a
/// channel's socket never takes its datagrams, its stamps lie within the send and before the arrival, and a client
/// and a server end up with samples whose four times are all the kernels'.
@Suite(.serialized) struct KernelSendStampTests {
    /// Reads one datagram from `descriptor` without waiting: its first 8 bytes (big-endian), or nil when there is none.
    static func readNow(_ descriptor: CInt) -> Int64? {
        var value: Int64 = 0
        let count = withUnsafeMutableBytes(of: &value) { recv(descriptor, $0.baseAddress, 8, Int32(MSG_DONTWAIT)) }
        return count == 8 ? Int64(bigEndian: value) : nil
    }

    static func address(of descriptor: CInt) throws -> SocketAddress {
        var storage = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        #expect(result == 0)
        return try SocketAddress(ipAddress: "127.0.0.1", port: Int(UInt16(bigEndian: storage.sin_port)))
    }

    @Test("the sender shares the port but never receives: every datagram to the port reaches the first socket")
    func everyDatagramGoesToTheChannelsSocket() throws {
        let loopback = try SocketAddress(ipAddress: "127.0.0.1", port: 0)
        let receiving = try KernelReceiveStamps.boundSocket(at: loopback, sharing: true)
        defer { close(receiving.descriptor) }
        let sender = try #require(KernelSendStamps.open(beside: receiving.descriptor))
        defer { sender.close() }
        let port = try Self.address(of: receiving.descriptor)
        #expect(try Self.address(of: sender.descriptor) == port)

        // From 20 sockets (20 source ports: the kernel would spread them by their hash without the program).
        let others = (0..<20).map { _ in tdm_stamped_udp_socket(AF_INET) }
        defer { for other in others { close(other) } }
        for (index, other) in others.enumerated() {
            var value = Int64(index).bigEndian
            _ = port.withSockAddr { pointer, length in
                withUnsafeBytes(of: &value) { sendto(other, $0.baseAddress, 8, 0, pointer, socklen_t(length)) }
            }
        }
        usleep(20_000)
        var received: [Int64] = []
        while let value = Self.readNow(receiving.descriptor) { received.append(value) }
        #expect(received.sorted() == (0..<20).map(Int64.init))
        #expect(Self.readNow(sender.descriptor) == nil)
    }

    @Test("a send's stamp lies within the send call, and the datagram arrived at or after it")
    func stampLiesWithinTheSend() throws {
        let loopback = try SocketAddress(ipAddress: "127.0.0.1", port: 0)
        let receiving = try KernelReceiveStamps.boundSocket(at: loopback, sharing: true)
        defer { close(receiving.descriptor) }
        let sender = try #require(KernelSendStamps.open(beside: receiving.descriptor))
        defer { sender.close() }
        let target = try KernelReceiveStamps.boundSocket(at: loopback)
        defer { close(target.descriptor) }
        let targetAddress = try Self.address(of: target.descriptor)
        let clock = SystemMonotonicClock()
        var stamped = 0
        for index in 0..<20 {
            var payload = ByteBuffer()
            payload.writeInteger(Int64(index))
            let before = clock.now
            let result = sender.send(payload, to: targetAddress)
            let after = clock.now
            #expect(result.sent)
            guard let departure = result.departure else { continue }
            stamped += 1
            #expect(departure >= before && departure <= after, "\(before) \(departure) \(after)")
            usleep(1_000)
            #expect(Self.readNow(target.descriptor) == Int64(index))
            let arrival = try #require(target.lastArrival(now: clock.now))
            // On loopback the packet is handed to the receiving side within the same send.
            #expect(arrival >= departure - .microseconds(50) && arrival - departure < .milliseconds(100),
                    "departure \(departure), arrival \(arrival)")
        }
        // Loopback stamps every send.
        #expect(stamped == 20)
    }

    @Test("probes and answers leave with kernel stamps: samples whose four times are all the kernels', and the UDP path stays up")
    func samplesAreKernelStampedBothWays() async throws {
        let server = try await KernelReceiveStampTests.server(kernelReceiveStamps: true)
        let invite = try server.createSession(id: "sent-stamped")
        var options = DatagramTests.options()
        options.clockProbesAlsoOverTCP = false
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: options)
        let samples = ann.clockSamples()
        let gathered = Task {
            var both: [ClockSample] = []
            for await sample in samples where sample.departure == .kernel && sample.arrival == .kernel {
                both.append(sample)
                if both.count == 5 { break }
            }
            return both
        }
        #expect(await waitUntil(15) { ann.datagramStatus.clockSamplesSendStamped >= 5 })
        gathered.cancel()
        let both = await gathered.value
        #expect(both.count == 5)
        let status = ann.datagramStatus
        #expect(status.sendStamps == .kernel)
        #expect(status.clockPingsSendStamped >= 5 && status.clockPongStampsTaken >= 5)
        #expect(status.rejected == 0)
        let statistics = try #require(server.datagramStatistics)
        #expect(statistics.clockPongsSendStamped >= 5)
        #expect(statistics.clockPongsSendStamped <= statistics.clockPingsAnswered)
        for sample in both {
            #expect(sample.roundTrip >= .zero && sample.roundTrip < .milliseconds(100), "\(sample)")
        }
        // The error queues were read by the senders: the channels were not closed, and datagrams still go both ways.
        let answered = ann.datagramStatus.clockPongsReceived
        #expect(await waitUntil(10) { ann.datagramStatus.clockPongsReceived >= answered + 3 })
        #expect(ann.unreliablePath == .udp)
        #expect(ann.clockQuality() != nil)
        await ann.close()
        await server.shutdown()
    }

    @Test("over IPv6 loopback (dual-stack sockets) the stamps come both ways too")
    func samplesAreKernelStampedOverIPv6() async throws {
        var configuration = ServerConfiguration(authority: AuthorityConfiguration())
        configuration.kernelReceiveStamps = true
        let server: SessionServer
        do {
            server = try await SessionServer.start(host: "::1", port: 0, configuration: configuration)
        } catch {
            // A machine without IPv6 loopback has nothing to test here.
            return
        }
        let invite = try server.createSession(id: "v6-stamped", advertisedHost: "::1")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: DatagramTests.options())
        #expect(await waitUntil(15) { ann.datagramStatus.clockSamplesSendStamped >= 3 })
        #expect(ann.datagramStatus.sendStamps == .kernel && ann.datagramStatus.clockStamps == .kernel)
        #expect(server.datagramStatistics!.clockPongsSendStamped >= 3)
        #expect(ann.unreliablePath == .udp)
        await ann.close()
        await server.shutdown()
    }

    @Test("a peer that does not ask gets no stamps after its answers; a server without them leaves the samples as they were")
    func withoutSendStampsNothingWaits() async throws {
        // The peer turns them off: no follow-ups from the server, none of its samples has kernel departures.
        let server = try await KernelReceiveStampTests.server(kernelReceiveStamps: true)
        let invite = try server.createSession(id: "unasked")
        var off = DatagramTests.options()
        off.kernelSendStamps = false
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: off)
        #expect(await waitUntil(10) { ann.datagramStatus.clockPongsReceived >= 5 })
        #expect(ann.datagramStatus.clockPingsSendStamped == 0)
        #expect(ann.datagramStatus.clockPongStampsTaken == 0)
        #expect(ann.datagramStatus.sendStamps == .user)
        #expect(server.datagramStatistics!.clockPongsSendStamped == 0)
        await ann.close()
        await server.shutdown()

        // The server has them off: the peer's probes are still stamped, and its answers are not held back.
        var configuration = ServerConfiguration(authority: AuthorityConfiguration())
        configuration.kernelSendStamps = false
        let plain = try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: configuration)
        let bob = try await TandemClient.connect(invite: try plain.createSession(id: "plain"), name: "bob",
                                                 options: DatagramTests.options())
        #expect(await waitUntil(10) { bob.datagramStatus.clockPongsReceived >= 5 })
        #expect(bob.datagramStatus.clockPingsSendStamped >= 5)
        #expect(bob.datagramStatus.clockPongStampsTaken == 0)
        #expect(bob.datagramStatus.sendStamps == .user)
        #expect(plain.datagramStatistics!.clockPongsSendStamped == 0)
        await bob.close()
        await plain.shutdown()
    }

    @Test("answers whose stamp does not come still become samples, with their own t3, and stamps are taken again when they return")
    func answersWithoutTheirStampAreTakenAsTheyAre() async throws {
        let server = try await KernelReceiveStampTests.server(kernelReceiveStamps: true)
        let invite = try server.createSession(id: "lost-stamps")
        var options = DatagramTests.options()
        options.clockProbesAlsoOverTCP = false
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: options)
        #expect(await waitUntil(10) { ann.datagramStatus.clockPongStampsTaken >= 3 })
        let samples = ann.clockSamples()
        let counted = Mutex<(all: Int, withoutStamps: Int)>((0, 0))
        let counting = Task {
            for await sample in samples {
                #expect(sample.roundTrip >= .zero, "\(sample)")
                counted.withLock {
                    $0.all += 1
                    if sample.departure == .user { $0.withoutStamps += 1 }
                }
            }
        }
        server.setWithholdsSendStamps(true)
        // Let the stream start, then count answers and samples from a quiet moment.
        try await Task.sleep(for: .milliseconds(100))
        let taken = ann.datagramStatus.clockPongStampsTaken
        let received = ann.datagramStatus.clockPongsReceived
        let before = counted.withLock { $0 }
        #expect(await waitUntil(10) { ann.datagramStatus.clockPongsReceived >= received + 6 })
        try await Task.sleep(for: .milliseconds(100))
        let answers = ann.datagramStatus.clockPongsReceived - received
        let after = counted.withLock { $0 }
        counting.cancel()
        // Every answer still reached the estimator (each held one after its wait), none with a stamp.
        #expect(abs((after.all - before.all) - answers) <= 1, "\(after) \(before) \(answers)")
        #expect(after.withoutStamps - before.withoutStamps == after.all - before.all)
        #expect(ann.datagramStatus.clockPongStampsTaken == taken)
        server.setWithholdsSendStamps(false)
        #expect(await waitUntil(10) { ann.datagramStatus.clockPongStampsTaken >= taken + 3 })
        #expect(ann.unreliablePath == .udp)
        await ann.close()
        await server.shutdown()
    }

    @Test("a send stamp from a client is dropped as malformed and changes nothing")
    func aStampFromAClientIsDropped() async throws {
        let server = try await DatagramTests.server()
        let invite = try server.createSession(id: "forged-stamp")
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: DatagramTests.options())
        #expect(await waitUntil(10) { ann.unreliablePath == .udp })
        let link = try #require(ann.shared.datagramLink)
        let before = server.datagramStatistics!.malformed
        var body = ByteBuffer()
        body.writeInteger(UInt32(1))
        body.writeInteger(Int64(42))
        let raw = try await RawDatagramSocket.open()
        try await raw.send(try #require(link.seal(.clockPongStamp, body: body)),
                           to: try SocketAddress(ipAddress: "127.0.0.1", port: server.port))
        #expect(await waitUntil(5) { server.datagramStatistics!.malformed == before + 1 })
        #expect(ann.closedReason == nil)
        await ann.close()
        await server.shutdown()
    }
}
