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

    @Test func playlistsSkipCommentsAndResolveAgainstTheirDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("playlist-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let list = directory.appendingPathComponent("list.txt")
        try "# films\na.webm\n\n  /abs/b.webm\nhttps://example.com/c.webm\n".write(to: list, atomically: true, encoding: .utf8)
        #expect(try HostCommand.readPlaylist(list.path)
                == [directory.appendingPathComponent("a.webm").path, "/abs/b.webm", "https://example.com/c.webm"])
        try String(repeating: "x.webm\n", count: 101).write(to: list, atomically: true, encoding: .utf8)
        #expect(throws: CLIError.self) { try HostCommand.readPlaylist(list.path) }
        #expect(throws: CLIError.self) { try HostCommand.readPlaylist(directory.appendingPathComponent("none").path) }
    }

    @Test func badLinesSayWhatIsAccepted() {
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "seek") }
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "seek soon") }
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "rate nan") }
        do {
            _ = try UserCommand.parse(line: "jump 3")
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
        #expect(decoder.feed([UInt8(ascii: "D")]) == [.seekBy(-10)])
        #expect(decoder.feed([0x1B, 0x5B, 0x41, UInt8(ascii: "]"), UInt8(ascii: "q")]) == [.seekBy(60), .rateStep(up: true), .leave])
        #expect(decoder.feed([UInt8(ascii: "E"), UInt8(ascii: "r"), UInt8(ascii: "?")]) == [.end, .restart, .help])
        #expect(decoder.feed([UInt8(ascii: "n"), UInt8(ascii: "p")]) == [.next, .previous])
    }
}
