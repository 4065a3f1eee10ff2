import Foundation
import Logging
import Synchronization
import Tandem

/// `tandem bench clock --transfer`: clock sync over a real server on loopback while large journal attachments
/// keep the measured peer's TCP connection busy both ways, with clock probes over UDP datagrams and over TCP only.
///
/// The measured peer joins while a helper already uploads attachments (which it receives, as a late joiner receives
/// the journal), and uploads attachments of its own from then on. Its clock is offset and drifts against
/// `CLOCK_MONOTONIC`; the server's session time is `CLOCK_MONOTONIC` itself, read in this process, so the true
/// session time of every local reading is known and the error of the estimate is exact.
package enum ClockTransferBench {
    package struct Configuration: Sendable {
        /// Seconds measured per mode.
        package var duration = 20.0
        /// Size of each attachment (MB); uploads repeat for the whole run.
        package var attachmentMB = 40
        /// The measured peer's clock error.
        package var offset = TimeSpan.seconds(1)
        package var driftPPM = 100.0
        package init() {}
    }

    package struct Outcome: Sendable {
        /// "tcp", "udp" or "udp+tcp".
        package var probes: String
        /// |estimate − truth| every 10 ms after the first second (ns).
        package var errors: Distribution
        /// The clock samples the estimator received, their round trips (ns), and how many came as datagrams.
        package var samples: Int
        package var roundTrips: Distribution
        package var datagramSamples: Int
        /// Attachment bytes the measured peer sent and received while measured.
        package var megabytesUp: Double
        package var megabytesDown: Double
    }

    /// Runs TCP-only probes, then datagram probes, each on a fresh server.
    package static func run(_ configuration: Configuration, progress: @Sendable (String) -> Void = { _ in }) async throws -> [Outcome] {
        var outcomes: [Outcome] = []
        for mode in ProbeMode.allCases {
            progress("probes: \(mode.rawValue)")
            outcomes.append(try await measure(configuration, mode: mode))
        }
        return outcomes
    }

    /// Which paths the measured peer's clock probes take.
    package enum ProbeMode: String, CaseIterable, Sendable {
        case tcp
        case udp
        case both = "udp+tcp"
    }

    static func measure(_ configuration: Configuration, mode: ProbeMode) async throws -> Outcome {
        var authority = AuthorityConfiguration()
        authority.endsWhenHostLeaves = false
        var server = ServerConfiguration(authority: authority)
        server.maxFramesPerSecond = 20_000
        var logger = Logger(label: "tandem.bench.server")
        logger.logLevel = .error
        let sessionServer = try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: server, logger: logger)
        let invite = try sessionServer.createSession()
        var helperOptions = TandemClient.Options()
        helperOptions.lazyAttachments = true
        let helper = try await TandemClient.connect(invite: invite, name: "sender", options: helperOptions)
        // Its content does not matter: it is sealed (random-looking) on the wire.
        let payload = Data(count: configuration.attachmentMB * 1_000_000)
        let counts = Counts()
        // The helper's uploads are under way when the measured peer joins.
        let helperUploads = Task { await uploadLoop(helper, payload: payload, counts: counts, counted: false) }
        try await Task.sleep(for: .milliseconds(300))

        let truth = SystemMonotonicClock()
        let skewed = SkewedClock(base: truth, offset: configuration.offset, driftPPM: configuration.driftPPM)
        var options = TandemClient.Options()
        options.clock = skewed
        options.clockProbesOverDatagrams = mode != .tcp
        options.clockProbesAlsoOverTCP = mode == .both
        let peer = try await TandemClient.connect(invite: invite, name: "measured", options: options)
        let joined = truth.now
        let drained = Task {
            for await message in peer.serverMessages() {
                if case .journal(.chunk(_, _, let bytes)) = message { counts.down.add(bytes.count, ordering: .relaxed) }
            }
        }
        let samples = peer.clockSamples()
        let sampleTask = Task { () -> [ClockSample] in
            var all: [ClockSample] = []
            for await sample in samples { all.append(sample) }
            return all
        }
        let peerUploads = Task { await uploadLoop(peer, payload: payload, counts: counts, counted: true) }

        var errors: [Int64] = []
        let end = joined + TimeSpan.seconds(1 + configuration.duration)
        var upAtStart = 0, downAtStart = 0
        while truth.now < end {
            try await Task.sleep(for: .milliseconds(10))
            // One reading of the true clock: the peer's own reading follows from it exactly.
            let now = truth.now
            guard now - joined >= .seconds(1) else { continue }
            if errors.isEmpty {
                upAtStart = counts.up.load(ordering: .relaxed)
                downAtStart = counts.down.load(ordering: .relaxed)
            }
            let local = LocalInstant(nanoseconds: skewed.skew.sessionTime(atLocal: now).nanoseconds)
            guard let estimate = peer.clockMapping()?.sessionTime(atLocal: local) else { continue }
            errors.append(abs(estimate.nanoseconds - now.nanoseconds))
        }
        let upBytes = counts.up.load(ordering: .relaxed) - upAtStart
        let downBytes = counts.down.load(ordering: .relaxed) - downAtStart
        let datagramSamples = peer.datagramStatus.clockPongsReceived
        counts.stop.store(true, ordering: .relaxed)
        await peerUploads.value
        await helperUploads.value
        await peer.close()
        await helper.close()
        drained.cancel()
        let collected = await sampleTask.value
        await sessionServer.shutdown()
        return Outcome(probes: mode.rawValue, errors: Distribution(errors), samples: collected.count,
                       roundTrips: Distribution(collected.map(\.roundTrip.nanoseconds)), datagramSamples: datagramSamples,
                       megabytesUp: Double(upBytes) / 1e6, megabytesDown: Double(downBytes) / 1e6)
    }

    /// What the run's tasks share.
    final class Counts: Sendable {
        let stop = Atomic<Bool>(false)
        /// Attachment bytes the measured peer uploaded and received.
        let up = Atomic<Int>(0)
        let down = Atomic<Int>(0)
    }

    /// Uploads `payload` again and again (removing each copy after it) until `counts.stop`.
    static func uploadLoop(_ connection: TandemClientConnection, payload: Data, counts: Counts, counted: Bool) async {
        var round = 0
        while !counts.stop.load(ordering: .relaxed) {
            round += 1
            let id = "load-\(round)"
            do {
                try await connection.uploadAttachment(payload, name: "load.bin", id: id)
                if counted { counts.up.add(payload.count, ordering: .relaxed) }
                try await connection.removeAttachment(id: id)
            } catch {
                return
            }
        }
    }

    /// The report: both modes side by side, and how to reproduce it.
    package static func report(_ outcomes: [Outcome], configuration: Configuration) -> String {
        var lines = [
            "clock sync on loopback while \(configuration.attachmentMB) MB attachments go up from and down to the measured peer",
            "(real server and client; the peer's clock \(String(format: "%+.0f", configuration.offset.seconds * 1000)) ms and "
                + "\(String(format: "%+.0f", configuration.driftPPM)) ppm off; error = |estimate − true session time| every 10 ms)",
            "",
            "probes   error p50    error p99    error max    samples (udp)  sample rtt p50  rtt p99      MB up/down",
            "-------  -----------  -----------  -----------  -------------  --------------  -----------  ----------",
        ]
        for o in outcomes {
            lines.append(o.probes.padding(toLength: 9, withPad: " ", startingAt: 0)
                + [ms(o.errors.p50), ms(o.errors.p99), ms(o.errors.max)].map { $0.padding(toLength: 13, withPad: " ", startingAt: 0) }.joined()
                + "\(o.samples) (\(o.datagramSamples))".padding(toLength: 15, withPad: " ", startingAt: 0)
                + ms(o.roundTrips.p50).padding(toLength: 16, withPad: " ", startingAt: 0)
                + ms(o.roundTrips.p99).padding(toLength: 13, withPad: " ", startingAt: 0)
                + String(format: "%.0f/%.0f", o.megabytesUp, o.megabytesDown))
        }
        lines.append("")
        lines.append("reproduce: tandem bench clock --transfer --duration \(String(format: "%g", configuration.duration)) "
                     + "--attachment-mb \(configuration.attachmentMB)")
        return lines.joined(separator: "\n")
    }
}
