import Foundation
import Tandem
import TandemPeer

/// `tandem bench stream`: a joiner without the file plays the host's copy (`--share-media`) through a slow,
/// distant link (`ThrottledLink`: a bandwidth that is a multiple of the media's bitrate, a one-way delay), next to
/// the host and a local peer with the file. Real players on fakesinks, the real server on 127.0.0.1; every figure
/// comes from the render probes (ground truth on the true clock), except bytes, which the link counts.
package enum StreamBench {
    package struct Configuration: Sendable {
        package var file: String
        /// Link bandwidths, as multiples of the media's average bitrate, one run each.
        package var factors: [Double] = [3, 1.5]
        package var delay: Duration = .milliseconds(50)
        /// Seconds of playing per run (at most the media's length less 2 s).
        package var duration: Double = 30
        /// Through a relay passing the host's copy (`serve --relay-media`), sealed, instead of the embedded server.
        package var relay = false

        package init(file: String) { self.file = file }
    }

    /// The command line that repeats a run of `configuration` (`file` as given, nil for the bundled sample).
    package static func reproduceCommand(_ configuration: Configuration, file: String?) -> String {
        let factors = configuration.factors.map { String(format: "%g", $0) }.joined(separator: " ")
        let delay = Double(configuration.delay.components.attoseconds) / 1e15 + Double(configuration.delay.components.seconds) * 1000
        return "tandem bench stream --factor \(factors) --delay \(String(format: "%g", delay)) "
            + "--duration \(String(format: "%g", configuration.duration))" + (configuration.relay ? " --relay" : "")
            + (file.map { " --file \($0)" } ?? "")
    }

    /// One run's figures; times in seconds, skews in milliseconds.
    package struct Run: Codable, Sendable {
        package var factor: Double
        package var linkBytesPerSecond: Int
        package var mediaBytesPerSecond: Int
        package var delayMs: Double
        /// From the group's play to the streamer's first rendered frame, and to the host's.
        package var firstFrame: Double?
        package var hostFirstFrame: Double?
        /// Gaps in the streamer's rendering after its first frame (a rebuffer the group waited for).
        package var rebuffers: Int
        package var rebuffersPerMinute: Double
        /// Seconds from the streamer's first frame to its last.
        package var watched: Double
        package var bytesFetched: Int64
        package var fileBytes: Int64
        /// Render skew between the host and the streamer, and between the host and a local peer (the reference),
        /// from two seconds after the first frame on.
        package var skew: Distribution
        package var localSkew: Distribution
    }

    /// A gap in rendering longer than this is a rebuffer (frames come every 33–40 ms while playing).
    static let rebufferGap = TimeSpan.milliseconds(250).nanoseconds

    package static func run(_ configuration: Configuration, say: @Sendable (String) -> Void) async throws -> [Run] {
        let probe = try await MediaProbe.probe(configuration.file)
        guard let length = probe.duration, length > .seconds(4) else {
            throw BenchError("\(configuration.file): the media must be longer than 4 s to stream it for a while")
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: configuration.file)[.size] as? NSNumber)?.int64Value ?? 0
        guard size > 0 else { throw BenchError("\(configuration.file) is empty") }
        let mediaRate = Int(Double(size) / length.seconds)
        let duration = min(configuration.duration, length.seconds - 2)
        var runs: [Run] = []
        for factor in configuration.factors {
            say(String(format: "link at %.1f× the media's bitrate (%d kB/s), %.0f ms each way", factor,
                       Int(Double(mediaRate) * factor / 1000), Double(configuration.delay / .microseconds(1)) / 1000))
            runs.append(try await once(configuration, factor: factor, mediaRate: mediaRate, size: size, duration: duration))
        }
        return runs
    }

    private static func once(_ configuration: Configuration, factor: Double, mediaRate: Int, size: Int64,
                             duration: Double) async throws -> Run {
        let ensemble = try await Ensemble.start(file: configuration.file, title: "stream bench", sharesMedia: true,
                                                relaysMedia: configuration.relay ? RelayMediaConfiguration() : nil)
        let link = try ThrottledLink(upstream: ensemble.invite.port, bytesPerSecond: Int(Double(mediaRate) * factor),
                                     delay: configuration.delay)
        defer { link.close() }
        let host = try await ensemble.add(.init(name: "host"))
        let local = try await ensemble.add(.init(name: "local"))
        guard await eventually(15, { host.player.mediaInfo != nil && local.player.mediaInfo != nil }) else {
            await ensemble.finish()
            throw BenchError("the local players did not load \(configuration.file) within 15 s")
        }
        var setup = Ensemble.PeerSetup(name: "streamer")
        setup.streams = true
        setup.port = link.port
        let streamer = try await ensemble.add(setup)
        // Play once the group knows the streamer is in (and loading): the play waits for it, as it would for anyone.
        if let hostPeer = host.peer as? LocalPeer {
            let joined = await eventually(15) {
                await hostPeer.status().others.contains { $0.participant.name == "streamer" && $0.hasJoined }
            }
            guard joined else {
                await ensemble.finish()
                throw BenchError("the streamer did not join through the link within 15 s")
            }
        }
        let playAt = trueNow()
        await host.peer.play()
        let end = ContinuousClock.now + .milliseconds(Int(duration * 1000))
        while ContinuousClock.now < end {
            try? await Task.sleep(for: .milliseconds(200))
            ensemble.collect()
        }
        await ensemble.finish()
        return ensemble.withTruth { truth in
            figures(truth, host: host.index, local: local.index, streamer: streamer.index, playAt: playAt,
                    factor: factor, link: link, mediaRate: mediaRate, size: size, delay: configuration.delay,
                    relay: configuration.relay)
        }
    }

    static func figures(_ truth: GroundTruth, host: Int, local: Int, streamer: Int, playAt: Int64, factor: Double,
                        link: ThrottledLink, mediaRate: Int, size: Int64, delay: Duration, relay: Bool = false) -> Run {
        let streamed = truth.frames[streamer].filter { $0.time >= playAt }
        let first = streamed.first?.time
        let hostFirst = truth.frames[host].first { $0.time >= playAt }?.time
        var rebuffers = 0
        for (a, b) in zip(streamed, streamed.dropFirst()) where b.time - a.time > rebufferGap { rebuffers += 1 }
        let watched = Double((streamed.last?.time ?? 0) - (first ?? 0)) / 1e9
        let steadyFrom = (first ?? playAt) + TimeSpan.seconds(2).nanoseconds
        func skew(_ other: Int) -> Distribution {
            let showings = truth.showings(peers: [host, other], window: TimeSpan.milliseconds(500).nanoseconds,
                                          since: steadyFrom)
            return Distribution(showings.filter { $0.median >= steadyFrom }.map(\.spread))
        }
        return Run(factor: factor, linkBytesPerSecond: link.bytesPerSecond, mediaBytesPerSecond: mediaRate,
                   delayMs: Double(delay / .microseconds(1)) / 1000,
                   firstFrame: first.map { Double($0 - playAt) / 1e9 }, hostFirstFrame: hostFirst.map { Double($0 - playAt) / 1e9 },
                   rebuffers: rebuffers, rebuffersPerMinute: watched > 0 ? Double(rebuffers) / watched * 60 : 0,
                   // Through a relay the media comes on the session link, with everything else the joiner hears.
                   watched: watched, bytesFetched: relay ? link.bytesDown : link.bytesFetched, fileBytes: size,
                   skew: skew(streamer), localSkew: skew(local))
    }

    /// The figures as text, against the targets.
    package static func report(_ runs: [Run]) -> String {
        var lines: [String] = []
        func ms(_ ns: Double) -> String { ns.isNaN ? "–" : String(format: "%.2f ms", ns / 1e6) }
        for run in runs {
            lines.append(String(format: "link %.1f× the bitrate (%d kB/s for %d kB/s of media), %.0f ms one way:",
                                run.factor, run.linkBytesPerSecond / 1000, run.mediaBytesPerSecond / 1000, run.delayMs))
            let first = run.firstFrame.map { String(format: "%.2f s", $0) } ?? "none"
            let hostFirst = run.hostFirstFrame.map { String(format: "%.2f s", $0) } ?? "none"
            lines.append("  first frame after play: streamer \(first), host \(hostFirst)"
                + (run.factor >= 3 ? " (target ≤ 3 s)" : ""))
            lines.append(String(format: "  rebuffers after the start: %d in %.1f s (%.1f a minute)%@", run.rebuffers,
                                run.watched, run.rebuffersPerMinute, run.factor >= 1.5 ? " (target 0)" : ""))
            lines.append(String(format: "  bytes fetched: %.2f MB (the file: %.2f MB)", Double(run.bytesFetched) / 1e6,
                                Double(run.fileBytes) / 1e6))
            lines.append("  render skew host–streamer: p50 \(ms(run.skew.p50)), p99 \(ms(run.skew.p99)), max \(ms(run.skew.max)) "
                + "(\(run.skew.count) frames); host–local peer: p50 \(ms(run.localSkew.p50)), p99 \(ms(run.localSkew.p99)) "
                + "(\(run.localSkew.count) frames)")
        }
        return lines.joined(separator: "\n")
    }

    static func trueNow() -> Int64 { SystemMonotonicClock().now.nanoseconds }

    static func eventually(_ seconds: Double, _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return await condition()
    }
}
