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

    @Test("the rate steps run from 0.5× to 2× in order")
    func rateSteps() {
        #expect(UserCommand.rateSteps.first == 0.5)
        #expect(UserCommand.rateSteps.last == 2)
        #expect(UserCommand.rateSteps == UserCommand.rateSteps.sorted())
    }
}
