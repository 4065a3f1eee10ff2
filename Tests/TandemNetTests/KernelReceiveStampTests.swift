import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import TandemCore
import Testing
@_spi(Testing) @testable import TandemNet

/// Clock probes' receive times from the kernel's arrival stamps, with real sockets on 127.0.0.1: the stamp is
/// present, on the local CLOCK_MONOTONIC (moved from CLOCK_REALTIME right), and the fallback to the event loop's
/// reading works where stamps do not apply.
@Suite(.serialized) struct KernelReceiveStampTests {
    /// Records, for each datagram read, the loop's reading and the kernel's stamp.
    final class Recorder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let stamps: KernelReceiveStamps
        let reads = Mutex<[(payload: Int64, now: LocalInstant, stamp: LocalInstant?)]>([])
        init(stamps: KernelReceiveStamps) { self.stamps = stamps }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let now = SystemMonotonicClock().now
            let stamp = stamps.lastArrival(now: now)
            let payload = unwrapInboundIn(data).data.getInteger(at: 0, as: Int64.self) ?? -1
            reads.withLock { $0.append((payload, now, stamp)) }
        }
    }

    static func server(kernelReceiveStamps: Bool) async throws -> SessionServer {
        var authority = AuthorityConfiguration()
        authority.endsWhenHostLeaves = false
        var configuration = ServerConfiguration(authority: authority)
        configuration.kernelReceiveStamps = kernelReceiveStamps
        var logger = Logger(label: "tandem.test.server")
        logger.logLevel = .warning
        return try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: configuration, logger: logger)
    }

    @Test("a datagram's kernel stamp lies between the moment before it was sent and the moment it was read")
    func stampIsTheArrivalOnTheMonotonicClock() async throws {
        let stamps = try KernelReceiveStamps.boundSocket(at: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
        let recorder = Recorder(stamps: stamps)
        let receiver = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(recorder) }
            }
            .withBoundSocket(stamps.descriptor).get()
        let sender = try await RawDatagramSocket.open()
        let target = try #require(receiver.localAddress)
        let clock = SystemMonotonicClock()
        // A first datagram, not judged: the kernel may turn its stamps on (for the whole machine) a moment after
        // the socket asked.
        var warmUp = ByteBuffer()
        warmUp.writeInteger(Int64(-1))
        try await sender.send(warmUp, to: target)
        #expect(await waitUntil(10) { recorder.reads.withLock { $0.count } == 1 })
        try await Task.sleep(for: .milliseconds(50))
        var sentBefore: [Int64] = []
        for index in 0..<20 {
            var bytes = ByteBuffer()
            bytes.writeInteger(Int64(index))
            sentBefore.append(clock.now.nanoseconds)
            try await sender.send(bytes, to: target)
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(await waitUntil(10) { recorder.reads.withLock { $0.count } == 21 })
        let reads = recorder.reads.withLock { $0 }.filter { $0.payload >= 0 }
        #expect(reads.count == 20)
        for read in reads {
            let stamp = try #require(read.stamp, "datagram \(read.payload) has no kernel stamp")
            let before = sentBefore[Int(read.payload)]
            // Not before it was sent (give or take the conversion's bracket, well under a microsecond) and not
            // after the loop read it: a stamp left on CLOCK_REALTIME, or off by the namespace's or the boot's
            // shift, would be seconds to decades off.
            #expect(stamp.nanoseconds >= before - 2_000, "stamp \(stamp.nanoseconds - before) ns after the send")
            #expect(stamp <= read.now)
            #expect(read.now.nanoseconds - before < 2_000_000_000)
        }
        await sender.close()
        try await receiver.close()
    }

    @Test func conversionMovesRealtimeByTheSampledOffsetAndRejectsImplausibleStamps() {
        let (offset, bracket) = KernelReceiveStamps.realtimeMinusMonotonic()
        #expect(bracket >= 0 && bracket < 1_000_000, "bracket \(bracket) ns")
        // The offset agrees with a fresh reading of both clocks in Swift.
        var real = timespec()
        var mono = timespec()
        clock_gettime(CLOCK_MONOTONIC, &mono)
        clock_gettime(CLOCK_REALTIME, &real)
        let fresh = (Int64(real.tv_sec) * 1_000_000_000 + Int64(real.tv_nsec))
            - (Int64(mono.tv_sec) * 1_000_000_000 + Int64(mono.tv_nsec))
        #expect(abs(fresh - offset) < 1_000_000, "offset \(offset) against \(fresh)")

        let now = LocalInstant(nanoseconds: 5_000_000_000_000)
        let realtimeOf = { (mono: Int64) in mono + offset }
        // 30 µs before the read: taken as it is.
        #expect(KernelReceiveStamps.monotonic(realtime: realtimeOf(now.nanoseconds - 30_000), offset: offset,
                                              bracket: 100, now: now)?.nanoseconds == now.nanoseconds - 30_000)
        // Later than the read by less than the bracket's slack: the read's time.
        #expect(KernelReceiveStamps.monotonic(realtime: realtimeOf(now.nanoseconds + 500), offset: offset,
                                              bracket: 100, now: now) == now)
        // Later by more, or older than a second: not this datagram's, or a clock stepped; the loop's reading.
        #expect(KernelReceiveStamps.monotonic(realtime: realtimeOf(now.nanoseconds + 50_000), offset: offset,
                                              bracket: 100, now: now) == nil)
        #expect(KernelReceiveStamps.monotonic(realtime: realtimeOf(now.nanoseconds - 2_000_000_000), offset: offset,
                                              bracket: 100, now: now) == nil)
        // Only the machine's monotonic clock takes them.
        #expect(KernelReceiveStamps.applies(to: SystemMonotonicClock()))
        #expect(KernelReceiveStamps.applies(to: AnyMonotonicClock(SystemMonotonicClock())))
        #expect(!KernelReceiveStamps.applies(to: SkewedClock(base: SystemMonotonicClock(), offset: .seconds(1),
                                                              driftPPM: 0)))
    }

    @Test("datagram probes are kernel-stamped at both ends, and each stamped answer arrived after its ping left")
    func probesAreKernelStampedAtBothEnds() async throws {
        let server = try await Self.server(kernelReceiveStamps: true)
        let invite = try server.createSession(id: "stamped")
        var options = DatagramTests.options()
        options.clockProbesAlsoOverTCP = false
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: options)
        let samples = ann.clockSamples()
        let gathered = Task {
            var kernel: [(ClockSample, LocalInstant)] = []
            for await sample in samples where sample.arrival == .kernel {
                kernel.append((sample, SystemMonotonicClock().now))
                if kernel.count == 5 { break }
            }
            return kernel
        }
        #expect(await waitUntil(10) { ann.datagramStatus.clockPongsKernelStamped >= 5 })
        gathered.cancel()
        let kernel = await gathered.value
        #expect(ann.datagramStatus.clockStamps == .kernel)
        let statistics = try #require(server.datagramStatistics)
        #expect(statistics.clockPingsKernelStamped > 0)
        #expect(statistics.clockPingsKernelStamped <= statistics.clockPingsAnswered)
        for (sample, seenAt) in kernel {
            #expect(sample.t4 >= sample.t1 && sample.t4 <= seenAt)
            #expect(sample.roundTrip >= .zero && sample.roundTrip < .seconds(1), "\(sample)")
        }
        #expect(ann.clockQuality() != nil)
        await ann.close()
        await server.shutdown()
    }

    @Test("without kernel stamps (turned off, or a clock other than CLOCK_MONOTONIC) probes are stamped by the loop")
    func fallsBackToTheLoopsReading() async throws {
        let server = try await Self.server(kernelReceiveStamps: false)
        let invite = try server.createSession(id: "unstamped")
        var off = DatagramTests.options()
        off.kernelReceiveStamps = false
        var skewed = DatagramTests.options()
        skewed.clock = SkewedClock(base: SystemMonotonicClock(), offset: .seconds(5), driftPPM: 0)
        let ann = try await TandemClient.connect(invite: invite, name: "ann", options: off)
        let bob = try await TandemClient.connect(invite: invite, name: "bob", options: skewed)
        #expect(await waitUntil(10) {
            ann.datagramStatus.clockPongsReceived >= 3 && bob.datagramStatus.clockPongsReceived >= 3
        })
        for peer in [ann, bob] {
            #expect(peer.datagramStatus.clockPongsKernelStamped == 0)
            #expect(peer.datagramStatus.clockStamps == .user)
            #expect(peer.clockQuality() != nil)
        }
        let statistics = try #require(server.datagramStatistics)
        #expect(statistics.clockPingsAnswered >= 6)
        #expect(statistics.clockPingsKernelStamped == 0)
        await ann.close()
        await bob.close()
        await server.shutdown()
    }
}
