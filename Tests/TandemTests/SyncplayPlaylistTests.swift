import Foundation
import Testing
import TandemCore
@testable import TandemSyncplay

/// A Syncplay room's shared playlist against a session's queue, on a manual clock: who follows whom, the room's
/// echoes of our own changes, and the steps that bring a queue to a playlist.
@Suite("Syncplay: the room's shared playlist and the session's queue")
struct SyncplayPlaylistTests {
    typealias Sync = SyncplayPlaylistSync

    static func at(_ seconds: Double) -> LocalInstant { LocalInstant(nanoseconds: Int64(seconds * 1e9)) }

    /// Applies `nextStep` until the queue agrees (at most 4 steps an entry); the queue reached and the steps taken.
    static func converge(_ files: [String], current: Int?, to target: [String], index: Int?)
        -> (files: [String], current: Int?, steps: Int)? {
        var files = files, current = current, steps = 0
        while let step = Sync.nextStep(files: files, current: current, target: target, targetIndex: index) {
            steps += 1
            guard steps <= 4 * (target.count + files.count) + 4 else { return nil }
            switch step {
            case .select(let i): current = i
            case .add(let names, let at):
                files.insert(contentsOf: names, at: at)
                if let c = current, c >= at { current = c + names.count }
            case .remove(let i):
                #expect(i != current, "the entry that plays is never removed")
                files.remove(at: i)
                if let c = current, c > i { current = c - 1 }
            case .move(let from, let to):
                let playing = current.map { files[$0] }
                let name = files.remove(at: from)
                files.insert(name, at: to)
                if playing != nil, let c = current { current = c == from ? to : (from < c && to >= c ? c - 1 : (from > c && to <= c ? c + 1 : c)) }
            }
        }
        return (files, current, steps)
    }

    @Test("the steps bring a queue to the room's playlist and select its entry: appends, removals, reorders, a new selection, duplicates, an emptied playlist")
    func stepsConverge() throws {
        let cases: [(files: [String], current: Int?, target: [String], index: Int?)] = [
            (["a"], 0, ["a", "b", "c"], 0),
            (["a", "b", "c"], 0, ["a", "c"], 0),
            (["a", "b", "c"], 1, ["c", "b", "a"], 1),
            (["a", "b"], 0, ["x", "y"], 1),
            (["a", "b"], 0, ["b", "a", "b"], 2),
            (["a"], 0, ["b", "c"], nil),          // no index: the room's first plays, "a" then goes
            (["a", "b"], 1, ["c", "b"], nil),     // no index, the playing entry is listed: it stays
            ([], nil, ["a", "b"], 1),
        ]
        for c in cases {
            let result = try #require(Self.converge(c.files, current: c.current, to: c.target, index: c.index))
            #expect(result.files == c.target, "\(c)")
            if let index = c.index { #expect(result.current == index, "\(c)") }
        }
        // An emptied playlist leaves only the entry that plays (it cannot be removed while it plays).
        let emptied = try #require(Self.converge(["a", "b", "c"], current: 1, to: [], index: nil))
        #expect(emptied.files == ["b"] && emptied.current == 0)
        // A room's full playlist, shuffled: bounded steps.
        let names = (0..<250).map { "episode-\($0).mkv" }
        let shuffled = try #require(Self.converge(Array(names.shuffled().prefix(100)), current: 3, to: names, index: 249))
        #expect(shuffled.files == names && shuffled.current == 249)
        #expect(shuffled.steps <= 3 * 250 + 8)
        // Already the same: nothing to do.
        #expect(Sync.nextStep(files: ["a", "b"], current: 1, target: ["a", "b"], targetIndex: 1) == nil)
    }

    @Test("an empty room gets the session's queue; the room's echo of it is not followed; another user's change is")
    func bothWays() {
        var sync = Sync()
        #expect(sync.sessionQueue(["movie.webm"], index: 0, following: false, now: Self.at(0)).isEmpty,
                "nothing goes to the room before its own playlist arrived")
        // The room's first playlist is empty: ours becomes the room's, with its index, as Syncplay's clients do.
        #expect(sync.roomPlaylist([], by: nil, username: "ann", now: Self.at(0.1)) == [
            .send(.playlistChange(user: nil, files: ["movie.webm"])), .send(.playlistIndex(user: nil, index: 0))])
        // The server sends both back to us, set by us: nothing to follow.
        #expect(sync.roomPlaylist(["movie.webm"], by: "ann", username: "ann", now: Self.at(0.2)).isEmpty)
        #expect(sync.roomIndex(0, by: "ann", username: "ann", now: Self.at(0.2)).isEmpty)
        // bob shares a playlist and selects its second entry: the session follows.
        #expect(sync.roomPlaylist(["movie.webm", "b.mkv"], by: "bob", username: "ann", now: Self.at(1)) == [.follow])
        #expect(sync.roomIndex(1, by: "bob", username: "ann", now: Self.at(1.1)) == [.follow])
        #expect(sync.roomFiles == ["movie.webm", "b.mkv"] && sync.roomIndex == 1)
        // The bridge's own steps while following are not the user's changes.
        #expect(sync.sessionQueue(["movie.webm", "b.mkv"], index: 0, following: true, now: Self.at(1.2)).isEmpty)
        #expect(sync.sessionQueue(["movie.webm", "b.mkv"], index: 1, following: true, now: Self.at(1.3)).isEmpty)
        // The user goes back to item 1: the room is told the index only.
        #expect(sync.sessionQueue(["movie.webm", "b.mkv"], index: 0, following: false, now: Self.at(2)) == [
            .send(.playlistIndex(user: nil, index: 0))])
        // bob's change that reaches the server before ours is overridden by ours there: not followed.
        #expect(sync.roomIndex(1, by: "bob", username: "ann", now: Self.at(2.05)).isEmpty)
        #expect(sync.roomIndex(0, by: "ann", username: "ann", now: Self.at(2.1)).isEmpty)
        // The user adds a file: the whole playlist and the index, as Syncplay's clients send them.
        #expect(sync.sessionQueue(["movie.webm", "b.mkv", "c.mkv"], index: 0, following: false, now: Self.at(3)) == [
            .send(.playlistChange(user: nil, files: ["movie.webm", "b.mkv", "c.mkv"])), .send(.playlistIndex(user: nil, index: 0))])
        // An echo that never comes (the server refused the change) is forgotten after `echoLimit`.
        #expect(sync.roomPlaylist(["x.mkv"], by: "bob", username: "ann", now: Self.at(4)).isEmpty)
        #expect(sync.roomPlaylist(["x.mkv"], by: "bob", username: "ann", now: Self.at(9)) == [.follow])
    }

    @Test("a room that has a playlist gives it to the session; an emptied one is not answered with the entry left playing; over-long playlists go neither way")
    func boundsAndEmptying() {
        var sync = Sync()
        _ = sync.sessionQueue(["movie.webm"], index: 0, following: false, now: Self.at(0))
        #expect(sync.roomPlaylist(["a.mkv", "movie.webm"], by: nil, username: "ann", now: Self.at(0.1)) == [.follow])
        #expect(sync.roomIndex(1, by: nil, username: "ann", now: Self.at(0.1)) == [.follow])
        _ = sync.sessionQueue(["a.mkv", "movie.webm"], index: 1, following: true, now: Self.at(0.2))
        // bob empties the playlist: the session keeps only what plays, and does not tell the room about it.
        #expect(sync.roomPlaylist([], by: "bob", username: "ann", now: Self.at(1)) == [.follow])
        #expect(sync.sessionQueue(["movie.webm"], index: 0, following: false, now: Self.at(1.2)).isEmpty)
        // A playlist longer than Syncplay allows is not followed, and a queue that long is not sent.
        let long = (0..<251).map { "e\($0)" }
        let wide = (0..<20).map { _ in String(repeating: "x", count: 600) }
        for playlist in [long, wide] {
            let actions = sync.roomPlaylist(playlist, by: "bob", username: "ann", now: Self.at(2))
            #expect(actions.count == 1 && { if case .notice = actions[0] { true } else { false } }(), "\(actions)")
        }
        let refused = sync.sessionQueue(wide, index: 0, following: false, now: Self.at(3))
        #expect(refused.count == 1 && { if case .notice = refused[0] { true } else { false } }(), "\(refused)")
        #expect(!Sync.fits(long) && !Sync.fits(wide) && Sync.fits(["a", "b"]))
    }

    @Test("playlist settings are sent as Syncplay's clients send them, hostile ones bounded on reading")
    func wire() throws {
        #expect(SyncplayCodec.encode(.set([.playlistChange(user: nil, files: ["a.mkv", "b.mkv"])]))
                == #"{"Set":{"playlistChange":{"files":["a.mkv","b.mkv"]}}}"#)
        #expect(SyncplayCodec.encode(.set([.playlistIndex(user: nil, index: 1)])) == #"{"Set":{"playlistIndex":{"index":1}}}"#)
        let hostile = #"{"Set":{"playlistChange":{"user":"bob","files":["../../etc/passwd","a\u0000b\u001b[2J",42]}}}"#
        #expect(try SyncplayCodec.decode(hostile) == [.set([.playlistChange(user: "bob", files: ["../../etc/passwd", "ab[2J"])])])
    }
}
