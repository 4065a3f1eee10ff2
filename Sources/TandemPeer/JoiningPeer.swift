import Foundation
import Tandem

/// A joiner on its way in: it has entered the session without taking part (it sees the activity and who is there,
/// and nothing shared flows yet), finds and checks its file, then takes part.
package struct JoiningPeer: Sendable {
    package let connection: TandemClientConnection
    /// The session's activity, when it is a media activity this peer understands.
    package let activity: MediaActivity?
    /// The invite it entered with (the host's copies are streamed from its address, with tokens from its secret).
    package let invite: Invite
    /// Where the player reads the host's copies when they pass through the session's relay (nil: from the host's
    /// embedded server, or not shared).
    package let relayed: LoopbackMediaServer?

    /// Enters the session named by `invite` (waiting to join, attachments fetched only when wanted).
    package static func enter(invite: Invite, name: String,
                              options: TandemClient.Options) async throws(TandemClientError) -> JoiningPeer {
        var options = options
        options.waitsToJoin = true
        options.lazyAttachments = true
        let connection = try await TandemClient.connect(invite: invite, name: name, options: options)
        let activity = connection.welcome.activity.flatMap { try? JSONDecoder().decode(MediaActivity.self, from: $0.payload) }
        var relayed: LoopbackMediaServer?
        if activity?.sharedByHost == true, activity?.sharedThroughRelay == true {
            relayed = try? await LoopbackMediaServer.start(reader: RelayedMediaReader(connection: connection))
        }
        return JoiningPeer(connection: connection, activity: activity, invite: invite, relayed: relayed)
    }

    /// What the joiner is shown first: what is shared and who is there.
    package var header: [String] {
        MediaActivity.joinHeader(welcome: connection.welcome, me: connection.localParticipantID)
    }

    /// The title of the video window: the activity's title, else its file name.
    package var title: String? {
        activity.map { $0.metadata.title ?? $0.fileName } ?? connection.welcome.activity?.metadata.title
    }

    /// The file to play and its probe: `file` when given, else the item's URL when it is one (everyone streams it
    /// from there; no probe), else the host's file name in `mediaDirectory` (or the
    /// current directory), else — or at once with `stream` — the host's copy when it shares it (no probe: the
    /// player fingerprints what it streams). When nothing can be played, the connection is closed and the problem
    /// says where to get a copy.
    package func media(file: String?, mediaDirectory: String?, stream: Bool = false)
        async throws(PeerFailure) -> (path: String, probe: MediaProbe?) {
        // An item that is a URL plays from there for everyone (there is no host's copy to prefer).
        if file == nil, let url = activity?.url { return (url, nil) }
        let streamed = activity.flatMap { $0.sharedByHost == true ? hostStreams(preferred: stream).url($0.itemID) : nil }
        if stream {
            if let streamed { return (try await checkedThroughRelay(streamed), nil) }
            await connection.close()
            throw PeerFailure(.badMedia, "the host does not share its copy (it would start with --share-media) — join "
                + "with your own: tandem join INVITE FILE")
        }
        let path = file ?? activity.map { activity in
            mediaDirectory.map { URL(fileURLWithPath: $0).appendingPathComponent(activity.fileName).path } ?? activity.fileName
        }
        let problem: String
        if let path {
            do { return (path, try await MediaProbe.probe(path)) } catch { problem = error.description }
        } else {
            problem = "no media file given and the session does not name one — add your copy: tandem join INVITE FILE"
        }
        if let streamed, file == nil { return (try await checkedThroughRelay(streamed), nil) }
        await connection.close()
        throw PeerFailure(.badMedia, MediaActivity.whereToGet(activity, envelope: connection.welcome.activity,
                                                                 problem: problem, given: file))
    }

    /// `url`, once one byte of the item has come through the relay when the host's copies pass there; else the
    /// connection is closed and the problem says what to do (a relay without `--relay-media`: ask its operator).
    private func checkedThroughRelay(_ url: String) async throws(PeerFailure) -> String {
        guard let relayed, let item = activity?.itemID else { return url }
        do {
            _ = try await relayed.reader.read(item: item, offset: 0, length: 1)
            return url
        } catch {
            await connection.close()
            if case .relayRefuses(let why) = error { throw PeerFailure(.badMedia, why) }
            throw PeerFailure(.badMedia, "cannot stream the host's copy through the relay: \(error) — try again, or join "
                + "with your own copy: tandem join INVITE FILE")
        }
    }

    /// The host's copies for this joiner: through the relay (a loopback URL of `relayed`), else URLs on the
    /// invite's address with this participant's tokens.
    package func hostStreams(preferred: Bool) -> HostStreams {
        let invite = self.invite
        let me = connection.localParticipantID.rawValue
        let host = connection.welcome.participants.first(where: \.isHost)?.participant.name ?? "the host"
        if let relayed {
            var streams = HostStreams(host: host, preferred: preferred) { item in relayed.url(item: item) }
            streams.knows = { item, contentID in relayed.know(contentID: contentID, of: item) }
            if let activity, let contentID = activity.contentID { relayed.know(contentID: contentID, of: activity.itemID) }
            return streams
        }
        return HostStreams(host: host, preferred: preferred) { item in SharedMedia.url(invite: invite, item: item, participant: me) }
    }

    /// A warning when `probe` differs from the host's media.
    package func warnings(for probe: MediaProbe?) -> [String] {
        guard let probe else { return [] }
        return activity.flatMap { $0.difference(from: probe) }.map { ["\($0) — you may not be watching the same thing"] } ?? []
    }

    /// Takes part with `player` playing `path` (later items are looked for in `mediaDirectory`, default the current
    /// directory, or streamed from the host when it shares them: first with `stream`). The track proposals are subscribed before joining, so one the host sends a newcomer at once is
    /// not missed.
    package func takePart(name: String, player: GStreamerPlayer, path: String, mediaDirectory: String?, stream: Bool = false,
                          engine: (any PlaybackEngine)? = nil, clock: any MonotonicClock = SystemMonotonicClock(),
                          configuration: PlaybackCoordinator.Configuration = .init()) async throws(TandemClientError) -> (peer: LocalPeer, proposals: AsyncStream<(TrackProposal, ParticipantID)>) {
        let directory = mediaDirectory ?? FileManager.default.currentDirectoryPath
        let media = QueueMedia(directory: directory)
        var streams = hostStreams(preferred: stream)
        if let activity, activity.sharedByHost == true, path == streams.url(activity.itemID) { streams.resolved.insert(path) }
        media.streamFrom(streams)
        let participant = LocalPeer(name: name, player: player, engine: engine, connection: connection, file: path,
                                    media: media, clock: clock, configuration: configuration)
        let proposals = participant.trackProposals()
        do { try await connection.send(.takePart) } catch {
            await connection.close()
            throw .unreachable("the connection closed while joining: \(error)")
        }
        return (participant, proposals)
    }
}
