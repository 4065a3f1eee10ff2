// WatchTogether: watching a file together, in one file, on the Tandem library. Each participant plays its own
// copy; Tandem keeps the copies in step.
//
//   swift run WatchTogether host FILE   starts a session on 127.0.0.1, prints its invite, plays; Enter ends it
//   swift run WatchTogether join FILE   reads the invite from standard input and joins (its secret stays off
//                                       the command line, where every user of the machine could read it)
//   swift run WatchTogether demo FILE   a host and a guest in this process for a few seconds, without a window
import Foundation
import Tandem

// snippet: activity
/// What the group shares: a movie, by title.
struct MovieNight: GroupActivity {
    var title: String
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: title, type: .watchTogether) }
}
// snippet end

// snippet: viewer
/// One participant: its session, its player, and the coordinator that keeps the player in step with the group.
struct Viewer {
    let session: GroupSession<MovieNight>
    let player: GStreamerPlayer
    let coordinator: PlaybackCoordinator

    init(_ session: GroupSession<MovieNight>, file: String, window: Bool = true) throws {
        self.session = session
        player = try GStreamerPlayer(configuration: window ? .init() : .headless)   // or any PlaybackEngine
        coordinator = PlaybackCoordinator(engine: player, link: session.link, locate: { _ in file })
        Task { [session, coordinator] in          // the session's work, until it ends
            await withDiscardingTaskGroup { group in
                group.addTask { await session.run() }   // participants, activity, state
                await coordinator.run()                 // drives the player
                group.cancelAll()
            }
        }
        session.join()                            // a session from sessions(invites:) waits for this
    }

    var seconds: Double { player.currentItemTime()?.seconds ?? 0 }
}
// snippet end

// snippet: host
/// Starts a session for `file` on `server`: the returned invite is for the others.
func host(_ file: String, on server: ActivationServer, name: String, window: Bool = true) async throws
    -> (Viewer, Invite) {
    let movie = MovieNight(title: URL(fileURLWithPath: file).lastPathComponent)
    // SharePlay's prepareForActivation(): can a session start here, or should the app play alone?
    if case .activationDisabled(let reason) = await movie.prepareForActivation(on: server) {
        throw WatchError("cannot watch together: \(reason)")
    }
    let activation = try await movie.activate(on: server, name: name)   // joined, as the host
    return (try Viewer(activation.session, file: file, window: window), activation.invite)
}
// snippet end

// snippet: join
/// Joins the session `invite` leads to, playing this participant's own copy of `file`.
func join(_ invite: Invite, file: String, name: String, window: Bool = true) async throws -> Viewer {
    let inbox = InviteInbox()                     // invites as they arrive (a chat, a file, a link)
    inbox.deliver(invite)
    inbox.close()
    for await session in MovieNight.sessions(invites: inbox, name: name) {
        // Not joined yet: the activity and who is there are known; the app decides.
        let others = session.activeParticipants.map(\.name).sorted().joined(separator: ", ")
        show("\(name): joining \(session.activity?.title ?? "?") with \(others)")
        return try Viewer(session, file: file, window: window)
    }
    throw WatchError("cannot join with this invite")
}
// snippet end

/// Prints where `viewer` is once a second until the session ends (or the task is cancelled).
func report(_ viewer: Viewer, as name: String) async {
    while !Task.isCancelled {
        if case .invalidated(let reason) = viewer.session.state { return show("\(name): \(reason)") }
        let playing = await viewer.coordinator.timeline?.isPlaying == true
        show("\(name): \(String(format: "%.1f", viewer.seconds)) s, \(playing ? "playing" : "paused")")
        try? await Task.sleep(for: .seconds(1))
    }
}

/// Writes a line to standard output at once (unbuffered), also when it is a pipe.
func show(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

struct WatchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch (arguments.first, arguments.count) {
    case ("host", 2):
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0)   // `tandem host` reaches further
        let (viewer, invite) = try await host(arguments[1], on: .embedded(server), name: "host")
        show("invite: \(invite)")
        await viewer.coordinator.play()           // guests who join later join the running film
        let enter = Task { await withCheckedContinuation { done in
            DispatchQueue.global().async { _ = readLine(); done.resume() } } }
        let reporting = Task { await report(viewer, as: "host") }
        await enter.value
        reporting.cancel()
        try await viewer.session.end()            // for everyone: the server tells each of them, then this one
        for _ in 0..<50 where viewer.session.state == .joined { try await Task.sleep(for: .milliseconds(100)) }
        await server.shutdown()
    case ("join", 2):
        guard let line = readLine() else { throw WatchError("give the invite on standard input") }
        let viewer = try await join(try Invite(parsing: line), file: arguments[1], name: "guest")
        await report(viewer, as: "guest")
    case ("demo", 2):
        let file = arguments[1]
        // snippet: together
        let server = try await SessionServer.start(host: "127.0.0.1", port: 0)
        let (ann, invite) = try await host(file, on: .embedded(server), name: "ann", window: false)
        let bob = try await join(invite, file: file, name: "bob", window: false)
        await ann.coordinator.play()              // starts both together, once both have loaded
        for _ in 0..<150 where bob.seconds < 2 { try await Task.sleep(for: .milliseconds(100)) }
        show(String(format: "ann at %.3f s, bob at %.3f s", ann.seconds, bob.seconds))
        await ann.coordinator.pause()             // everyone stops at ann's position
        try await ann.session.end()
        // snippet end
        for _ in 0..<50 where bob.session.state == .joined { try await Task.sleep(for: .milliseconds(100)) }
        if case .invalidated(let reason) = bob.session.state { show("bob: \(reason)") }
        await server.shutdown()
    default:
        show("usage: WatchTogether host FILE | join FILE (the invite on standard input) | demo FILE")
        exit(2)
    }
} catch {
    show("WatchTogether: \(error)")
    exit(1)
}
