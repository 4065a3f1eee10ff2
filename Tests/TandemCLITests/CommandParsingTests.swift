import Foundation
import Testing
import TandemPeer
@testable import tandem

@Suite struct CommandParsingTests {
    @Test func scriptedLines() throws {
        #expect(try UserCommand.parse(line: "play") == .play)
        #expect(try UserCommand.parse(line: "  pause ") == .pause)
        #expect(try UserCommand.parse(line: "seek 90.5") == .seek(to: 90.5))
        #expect(try UserCommand.parse(line: "rate 1.5") == .rate(1.5))
        #expect(try UserCommand.parse(line: "leave") == .leave)
        #expect(try UserCommand.parse(line: "end") == .end)
        #expect(try UserCommand.parse(line: "") == nil)
        #expect(try UserCommand.parse(line: "next") == .next)
        #expect(try UserCommand.parse(line: "prev") == .previous)
        #expect(try UserCommand.parse(line: "queue") == .queueList)
        #expect(try UserCommand.parse(line: "  queue  add  My Movie (2).webm ") == .queueAdd("My Movie (2).webm"))
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "queue add") }
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "queue clear") }
    }

    @Test func queueEditingLines() throws {
        #expect(try UserCommand.parse(line: "jump 2") == .jump(2))
        #expect(try UserCommand.parse(line: "queue remove 3") == .queueRemove(3))
        #expect(try UserCommand.parse(line: " queue  move 3  1 ") == .queueMove(3, to: 1))
        for bad in ["jump", "jump 0", "jump two", "jump 1 2", "queue remove", "queue remove -1", "queue move 2",
                    "queue move 2 x", "queue move 0 1"] {
            #expect(throws: UserCommandError.self, "\(bad)") { try UserCommand.parse(line: bad) }
        }
        do {
            _ = try UserCommand.parse(line: "queue move 2 first")
            Issue.record("expected an error")
        } catch {
            #expect(error.description == "'first' is not a position: use a number from 1, as 'queue' lists the items")
        }
    }

    @Test func everyLineCommandIsParsedHelpedAndInTheREADME() throws {
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("README.md"), encoding: .utf8)
        for command in UserCommand.lineCommands {
            // An example of each syntax parses (its placeholders filled in).
            let example = command.syntax.replacingOccurrences(of: "SECONDS", with: "90")
                .replacingOccurrences(of: "PERCENT", with: "80").replacingOccurrences(of: "N|off", with: "1")
                .replacingOccurrences(of: "MS", with: "-20").replacingOccurrences(of: "TEXT", with: "hi")
                .replacingOccurrences(of: "PATH", with: "a.webm").replacingOccurrences(of: " R", with: " 1.5")
                .replacingOccurrences(of: " N", with: " 1").replacingOccurrences(of: " K", with: " 2")
                .replacingOccurrences(of: " TO", with: " 1")
            #expect(try UserCommand.parse(line: example) != nil, "\(example)")
            #expect(UserCommand.lineHelp.contains(command.syntax))
            // In a table a | is written \\|.
            let inTable = command.syntax.replacingOccurrences(of: "|", with: "\\|")
            #expect(readme.contains("`\(inTable)`"), "the README does not list `\(command.syntax)`")
        }
    }

    @Test func playlistsSkipCommentsAndResolveAgainstTheirDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("playlist-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let list = directory.appendingPathComponent("list.txt")
        try "# films\na.webm\n\n  /abs/b.webm\nhttps://example.com/c.webm\n".write(to: list, atomically: true, encoding: .utf8)
        #expect(try Playlist.read(list.path)
                == [directory.appendingPathComponent("a.webm").path, "/abs/b.webm", "https://example.com/c.webm"])
        try String(repeating: "x.webm\n", count: 101).write(to: list, atomically: true, encoding: .utf8)
        #expect(throws: PeerFailure.self) { try Playlist.read(list.path) }
        #expect(throws: PeerFailure.self) { try Playlist.read(directory.appendingPathComponent("none").path) }
    }

    @Test func badLinesSayWhatIsAccepted() {
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "seek") }
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "seek soon") }
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "rate nan") }
        do {
            _ = try UserCommand.parse(line: "skip 3")
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("use play, pause, seek SECONDS"))
        }
    }

    @Test func keysDecodeIncludingSplitEscapeSequences() {
        var decoder = KeyDecoder()
        #expect(decoder.feed([UInt8(ascii: " ")]) == [.togglePlayPause])
        #expect(decoder.feed([0x1B]) == [])
        #expect(decoder.feed([UInt8(ascii: "[")]) == [])
        #expect(decoder.feed([UInt8(ascii: "D")]) == [.seekStep(.back)])
        #expect(decoder.feed([0x1B, 0x5B, 0x41, UInt8(ascii: "]"), UInt8(ascii: "q")]) == [.seekStep(.farForward), .rateStep(up: true), .leave])
        #expect(decoder.feed([UInt8(ascii: "E"), UInt8(ascii: "r"), UInt8(ascii: "?")]) == [.end, .restart, .help])
        #expect(decoder.feed([UInt8(ascii: "n"), UInt8(ascii: "p")]) == [.next, .previous])
    }
}
