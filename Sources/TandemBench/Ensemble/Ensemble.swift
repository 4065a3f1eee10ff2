import Foundation
import Logging
import Synchronization
import Tandem
import TandemPeer
import TandemTesting

/// Several peers in this process around one embedded session server, with ground truth about what each renders:
/// what `tandem demo` and `tandem bench sync` run. Every peer is the real thing — its own `GStreamerPlayer`,
/// its own TCP connection to the real server, its own `PlaybackCoordinator` — only faults (a slow load, a stall,
/// a wrong clock, a slow link) are injected on purpose.
package final class Ensemble: Sendable {
    /// How to set up one peer.
    package struct PeerSetup: Sendable {
        package var name: String
        /// Extra time its first load takes.
        package var loadDelay: Duration = .zero
        /// Its local clock reads true time + `clockOffset`, running `clockDriftPPM` fast.
        package var clockOffset: Int64 = 0
        package var clockDriftPPM: Double = 0
        /// A simulated network path to the server, or nil for plain loopback.
        package var impairment: (any NetworkImpairment)?
        /// Timelines over TCP only (`TandemClient.Options.timelinesOverDatagrams` off): to compare.
        package var timelinesOverTCPOnly = false
        package var player: GStreamerPlayer.Configuration = .headless
        package var coordinator: PlaybackCoordinator.Configuration = .init()
        /// Which rules drive the peer: Tandem's coordinator, or a baseline's.
        package var policy: SyncPolicy = .tandem
        /// Plays the host's copy over HTTP instead of the file (the ensemble must share it: `start(sharesMedia:)`).
        package var streams = false
        /// The port it reaches the server on, when not the server's own (a link in between: `ThrottledLink`).
        package var port: Int?
    }

    /// One running peer.
    package final class Member: Sendable {
        package let index: Int
        package let setup: PeerSetup
        package let peer: any PeerDriver
        package let player: GStreamerPlayer
        package let drill: DrillEngine
        /// True time at which it started to join.
        package let joinStarted: Int64
        /// The local clock's mapping from true time (its wrong view of time).
        package let localClock: ClockMapping
        fileprivate let task: Mutex<Task<Void, Never>?> = Mutex(nil)

        package init(index: Int, setup: PeerSetup, peer: any PeerDriver, player: GStreamerPlayer, drill: DrillEngine,
             joinStarted: Int64, localClock: ClockMapping) {
            self.index = index
            self.setup = setup
            self.peer = peer
            self.player = player
            self.drill = drill
            self.joinStarted = joinStarted
            self.localClock = localClock
        }

        package var name: String { setup.name }

        /// The error of the peer's session-time estimate against the truth now (ns): estimated minus true session
        /// time. Session time is the server's CLOCK_MONOTONIC, which in one process is the true clock. Nil for a
        /// peer that keeps no estimate (a baseline without clock sync).
        package func clockError() async -> Int64? {
            let now = SystemMonotonicClock().now
            let local = LocalInstant(nanoseconds: localClock.sessionTime(atLocal: now).nanoseconds)
            guard let estimate = await peer.estimatedSessionTime(atLocal: local) else {
                return nil
            }
            return estimate.nanoseconds - now.nanoseconds
        }

        /// The error of the clock this peer's sinks wait on (ns): its reading minus true session time. For Tandem
        /// it follows the estimate, slewing; a baseline's reads its own local time.
        package func engineClockError() -> Int64 {
            player.pipelineClockNow().nanoseconds - SystemMonotonicClock().now.nanoseconds
        }
    }

    package let server: SessionServer
    package let invite: Invite
    package let file: String
    /// The host's items through the relay (`start(relaysMedia:)`): what it offers, and its answers once it is in.
    private let relayOffers: SharedMedia?
    private let relayHost = Mutex<RelayedMediaHost?>(nil)
    private let truth = Mutex(GroundTruth())
    private let members = Mutex<[Member]>([])

    private init(server: SessionServer, invite: Invite, file: String, relayOffers: SharedMedia? = nil) {
        self.relayOffers = relayOffers
        self.server = server
        self.invite = invite
        self.file = file
    }

    /// Starts an embedded server on loopback with a session for `file`.
    /// With `sharesMedia`, the server offers `file` to the members as `--share-media` does (with `web`'s bounds);
    /// with `relaysMedia` too, the server is a relay passing the host's copy (`serve --relay-media`) instead.
    package static func start(file: String, title: String, authority: AuthorityConfiguration = .init(),
                      sharesMedia: Bool = false, relaysMedia: RelayMediaConfiguration? = nil,
                      web: WebConfiguration = WebConfiguration(),
                      logger: Logger = Logger(label: "tandem.ensemble")) async throws -> Ensemble {
        let probe = try await MediaProbe.probe(file)
        var activity = MediaActivity(probe: probe, path: file, title: title, subtitle: nil, type: nil, fallbackURL: nil)
        var configuration = ServerConfiguration(authority: authority)
        configuration.maxSessions = 4
        let shared = SharedMedia()
        if sharesMedia, let relaysMedia {
            activity.sharedByHost = true
            activity.sharedThroughRelay = true
            configuration.relayMedia = relaysMedia
        } else if sharesMedia {
            activity.sharedByHost = true
            configuration.web = web
            configuration.web?.servesPage = false
            configuration.web?.sharedMedia = shared
        }
        var quiet = logger
        quiet.logLevel = .warning
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0, configuration: configuration, logger: quiet)
        let invite = try server.createSession(activity: try activity.envelope)
        if sharesMedia {
            shared.offer(session: invite.session, item: activity.itemID, path: file, contentID: probe.contentID)
        }
        return Ensemble(server: server, invite: invite, file: file,
                        relayOffers: sharesMedia && relaysMedia != nil ? shared : nil)
    }

    package var all: [Member] { members.withLock { $0 } }

    /// Connects a new peer and starts it playing with the group. The first peer added is the session's host.
    @discardableResult
    package func add(_ setup: PeerSetup) async throws -> Member {
        let joinStarted = SystemMonotonicClock().now.nanoseconds
        let skewed = SkewedClock(base: SystemMonotonicClock(), offset: TimeSpan(nanoseconds: setup.clockOffset), driftPPM: setup.clockDriftPPM)
        let player = try GStreamerPlayer(configuration: setup.player, localTimeModel: skewed.skew)
        let drill = DrillEngine(player: player, loadDelay: setup.loadDelay)
        var options = TandemClient.Options()
        options.clock = skewed
        if let impairment = setup.impairment { options.impair(with: impairment) }
        options.timelinesOverDatagrams = !setup.timelinesOverTCPOnly
        options.asHost = members.withLock { $0.isEmpty }
        var invite = self.invite
        if let port = setup.port { invite.port = port }
        let peer: any PeerDriver
        switch setup.policy {
        case .tandem where setup.streams:
            // As `tandem join --stream` does: enter, take the host's copy's URL, take part.
            let joining = try await JoiningPeer.enter(invite: invite, name: setup.name, options: options)
            let media = try await joining.media(file: nil, mediaDirectory: nil, stream: true)
            peer = try await joining.takePart(name: setup.name, player: player, path: media.path, mediaDirectory: nil,
                                              stream: true, engine: drill, clock: skewed,
                                              configuration: setup.coordinator).peer
        case .tandem:
            peer = try await LocalPeer.connect(invite: invite, name: setup.name, file: file, player: player,
                                               engine: drill, options: options, configuration: setup.coordinator)
        case .syncplayRules, .jellyfinRules:
            peer = try await BaselinePeer.connect(invite: invite, name: setup.name, file: file, player: player,
                                                  engine: drill, options: options,
                                                  rules: setup.policy == .syncplayRules ? .syncplay : .jellyfin)
        }
        if let relayOffers, options.asHost, let host = peer as? LocalPeer {
            relayHost.withLock { $0 = RelayedMediaHost(connection: host.connection, offers: relayOffers) }
        }
        let index = truth.withLock { $0.addPeer() }
        let member = Member(index: index, setup: setup, peer: peer, player: player, drill: drill,
                            joinStarted: joinStarted, localClock: skewed.skew)
        members.withLock { $0.append(member) }
        member.task.withLock { $0 = Task { await peer.run() } }
        return member
    }

    /// Drains every peer's render probe into the ground truth. Call it often enough that probes do not overflow
    /// (a few times a second).
    package func collect() {
        let current = all
        truth.withLock { truth in
            for member in current { truth.collect(member.index, from: member.player.renderProbe) }
        }
    }

    /// Reads the ground truth under its lock.
    package func withTruth<T: Sendable>(_ body: (GroundTruth) -> T) -> T {
        truth.withLock { body($0) }
    }

    /// Ends the session for everyone, waits for every peer to stop, and stops the server.
    package func finish() async {
        let current = all
        if let host = current.first { try? await host.peer.end() }
        for member in current {
            let task = member.task.withLock { $0 }
            await task?.value
        }
        collect()
        await server.shutdown()
    }
}
