import Testing
import TandemPeer

@Suite("User commands")
struct UserCommandTests {
    @Test("every scripted verb parses, case-insensitively, with its number")
    func verbs() throws {
        #expect(try UserCommand.parse(line: "PLAY") == .play)
        #expect(try UserCommand.parse(line: "toggle") == .togglePlayPause)
        #expect(try UserCommand.parse(line: "restart") == .restart)
        #expect(try UserCommand.parse(line: "quit") == .leave)
        #expect(try UserCommand.parse(line: "exit") == .leave)
        #expect(try UserCommand.parse(line: "?") == .help)
        #expect(try UserCommand.parse(line: "\tseek\t12") == .seek(to: 12))
        #expect(try UserCommand.parse(line: "rate 0.75") == .rate(0.75))
        #expect(try UserCommand.parse(line: "   ") == nil)
    }

    @Test("a verb that needs a number says so, with an example")
    func missingNumber() {
        do {
            _ = try UserCommand.parse(line: "rate")
            Issue.record("expected an error")
        } catch {
            #expect(error.description == "'rate' needs one number (playback rate), e.g. 'rate 1.5'")
        }
        do {
            _ = try UserCommand.parse(line: "seek 1 2")
            Issue.record("expected an error")
        } catch {
            #expect(error.description == "'seek' needs one number (seconds), e.g. 'seek 90'")
        }
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "seek inf") }
    }

    @Test("keys: arrows, rate steps, quitting keys; unknown bytes and stray escapes are dropped")
    func keys() {
        var decoder = KeyDecoder()
        #expect(decoder.feed([0x1B, 0x5B, 0x42, 0x1B, 0x5B, 0x43]) == [.seekBy(-60), .seekBy(10)])
        #expect(decoder.feed([UInt8(ascii: "["), UInt8(ascii: "x"), 0x03, 0x04]) == [.rateStep(up: false), .leave, .leave])
        #expect(decoder.feed([0x1B, UInt8(ascii: "a")]) == [])
        #expect(decoder.feed([UInt8(ascii: "h")]) == [.help])
        #expect(decoder.feed([0x1B, 0x5B, 0x5A]) == [])
    }

    @Test("keys: Esc followed by another key keeps that key; longer sequences are skipped whole, even split")
    func escapeSequences() {
        var decoder = KeyDecoder()
        // Esc then space and `]` in one read: only the Esc is dropped.
        #expect(decoder.feed([0x1B, UInt8(ascii: " "), UInt8(ascii: "]")]) == [.togglePlayPause, .rateStep(up: true)])
        // Ctrl-Right (Esc [ 1 ; 5 C) and F5 (Esc [ 1 5 ~) are not plain arrows and leave nothing behind.
        #expect(decoder.feed(Array("\u{1B}[1;5C\u{1B}[15~h".utf8)) == [.help])
        // An arrow split across reads.
        #expect(decoder.feed([0x1B]) == [])
        #expect(decoder.feed([0x5B]) == [])
        #expect(decoder.feed([0x44, UInt8(ascii: " ")]) == [.seekBy(-10), .togglePlayPause])
        // An unfinished sequence is given up on once it is longer than any key's, keeping what follows.
        #expect(decoder.feed([0x1B, 0x5B] + Array(repeating: UInt8(ascii: "1"), count: 20) + [UInt8(ascii: "h")])
                    .last == .help)
    }

    @Test("the rate steps run from 0.5× to 2× in order")
    func rateSteps() {
        #expect(UserCommand.rateSteps.first == 0.5)
        #expect(UserCommand.rateSteps.last == 2)
        #expect(UserCommand.rateSteps == UserCommand.rateSteps.sorted())
    }
}
