import Foundation
import Tandem

/// A joiner on its way in: it has entered the session without taking part (it sees the activity and who is there,
/// and nothing shared flows yet), finds and checks its file, then takes part.
package struct JoiningPeer: Sendable {
    package let connection: TandemClientConnection
    /// The session's activity, when it is a media activity this peer understands.
    package let activity: MediaActivity?

    /// Enters the session named by `invite` (waiting to join, attachments fetched only when wanted).
    package static func enter(invite: Invite, name: String,
                              options: TandemClient.Options) async throws(TandemClientError) -> JoiningPeer {
        var options = options
        options.waitsToJoin = true
        options.lazyAttachments = true
        let connection = try await TandemClient.connect(invite: invite, name: name, options: options)
        let activity = connection.welcome.activity.flatMap { try? JSONDecoder().decode(MediaActivity.self, from: $0.payload) }
        return JoiningPeer(connection: connection, activity: activity)
    }

    /// What the joiner is shown first: what is shared and who is there.
    package var header: [String] {
        MediaActivity.joinHeader(welcome: connection.welcome, me: connection.localParticipantID)
    }

    /// The title of the video window: the activity's title, else its file name.
    package var title: String? {
        activity.map { $0.metadata.title ?? $0.fileName } ?? connection.welcome.activity?.metadata.title
    }

    /// The file to play and its probe: `file` when given, else the host's file name in `mediaDirectory` (or the
    /// current directory). When it cannot be played, the connection is closed and the problem says where to get a
    /// copy.
    package func media(file: String?, mediaDirectory: String?) async throws(PeerFailure) -> (path: String, probe: MediaProbe) {
        let path = file ?? activity.map { activity in
            mediaDirectory.map { URL(fileURLWithPath: $0).appendingPathComponent(activity.fileName).path } ?? activity.fileName
        }
        let problem: String
        if let path {
            do { return (path, try await MediaProbe.probe(path)) } catch { problem = error.description }
        } else {
            problem = "no media file given and the session does not name one — add your copy: tandem join INVITE FILE"
        }
        await connection.close()
        throw PeerFailure(.badMedia, MediaActivity.whereToGet(activity, envelope: connection.welcome.activity,
                                                                 problem: problem, given: file))
    }

    /// A warning when `probe` differs from the host's media.
    package func warnings(for probe: MediaProbe) -> [String] {
        activity.flatMap { $0.difference(from: probe) }.map { ["\($0) — you may not be watching the same thing"] } ?? []
    }

    /// Takes part with `player` playing `path` (later items are looked for in `mediaDirectory`, default the current
    /// directory). The track proposals are subscribed before joining, so one the host sends a newcomer at once is
    /// not missed.
    package func takePart(name: String, player: GStreamerPlayer, path: String, mediaDirectory: String?)
        async throws(TandemClientError) -> (peer: LocalPeer, proposals: AsyncStream<(TrackProposal, ParticipantID)>) {
        let directory = mediaDirectory ?? FileManager.default.currentDirectoryPath
        let participant = LocalPeer(name: name, player: player, connection: connection, file: path,
                                    media: QueueMedia(directory: directory))
        let proposals = participant.trackProposals()
        do { try await connection.send(.takePart) } catch {
            await connection.close()
            throw .unreachable("the connection closed while joining: \(error)")
        }
        return (participant, proposals)
    }
}
