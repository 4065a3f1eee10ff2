import Testing
import TandemCore
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
        #expect(try UserCommand.parse(line: "fullscreen") == .toggleFullscreen)
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
        #expect(decoder.feed([0x1B, 0x5B, 0x42, 0x1B, 0x5B, 0x43]) == [.seekStep(.farBack), .seekStep(.forward)])
        #expect(decoder.feed([UInt8(ascii: "["), UInt8(ascii: "x"), 0x03, 0x04]) == [.rateStep(up: false), .leave, .leave])
        #expect(decoder.feed([0x1B, UInt8(ascii: "x")]) == [])
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
        #expect(decoder.feed([0x44, UInt8(ascii: " ")]) == [.seekStep(.back), .togglePlayPause])
        // An unfinished sequence is given up on once it is longer than any key's, keeping what follows.
        #expect(decoder.feed([0x1B, 0x5B] + Array(repeating: UInt8(ascii: "1"), count: 20) + [UInt8(ascii: "h")])
                    .last == .help)
    }

    @Test("the default rate steps run from 0.5× to 2× in order, inside the range 0.25 to 4 that the help names")
    func rateSteps() {
        let limits = PlaybackLimits()
        #expect(limits.rateSteps.first == 0.5)
        #expect(limits.rateSteps.last == 2)
        #expect(limits.rateSteps == limits.rateSteps.sorted())
        #expect(limits.rateSteps.allSatisfy { limits.refusingRate($0) == nil })
        #expect(UserCommand.lineHelp.contains("playback rate, 0.25 to 4"))
        #expect(UserCommand.keyHelp.contains("←/→ seek −/+10 s · ↑/↓ seek +/−60 s · [ ] rate −/+"))
    }
}

@Suite("Keys and the on-screen display")
struct WindowKeyAndDisplayTests {
    @Test("one table of keys: the terminal byte and the window's key name give the same command")
    func bindings() {
        var decoder = KeyDecoder()
        for binding in UserCommand.keyBindings {
            for byte in binding.terminal { var fresh = KeyDecoder(); #expect(fresh.feed([byte]) == [binding.command], "byte \(byte)") }
            for name in binding.window { #expect(UserCommand.windowKey(name) == binding.command, "\(name)") }
        }
        #expect(UserCommand.windowKey("Left") == .seekStep(.back))
        #expect(UserCommand.windowKey("F13") == nil)
        #expect(decoder.feed(Array("9m0-+o".utf8)) == [.volumeStep(up: false), .toggleMute, .volumeStep(up: true),
                                                       .offsetStep(milliseconds: -10), .offsetStep(milliseconds: 10),
                                                       .showStatus])
        // Every key is in the help.
        for key in ["space", "9/0", " m ", " s ", " a ", "−/+", " o ", " f ", " r "] {
            #expect(UserCommand.keyHelp.contains(key), "\(key) missing from the help")
        }
    }

    @Test("scripted lines for volume, mute, tracks, offset and status; bad ones say what is accepted")
    func outputLines() throws {
        #expect(try UserCommand.parse(line: "volume 80") == .volume(80))
        #expect(try UserCommand.parse(line: "mute") == .toggleMute)
        #expect(try UserCommand.parse(line: "sub off") == .subtitles(nil))
        #expect(try UserCommand.parse(line: "sub 2") == .subtitles(2))
        #expect(try UserCommand.parse(line: "audio 1") == .audio(1))
        #expect(try UserCommand.parse(line: "offset -120") == .offset(-120))
        #expect(try UserCommand.parse(line: "status") == .showStatus)
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "sub 0") }
        do {
            _ = try UserCommand.parse(line: "audio two")
        } catch {
            #expect(error.description == "'audio' needs an audio track number from 1, e.g. 'audio 2'")
        }
    }

    @Test("the display shows each notice for a few seconds, at most four, and the status line while asked")
    func display() {
        var osd = OnScreenDisplay()
        #expect(osd.text(now: 0, status: { "status" }) == nil)
        osd.post("bob joined", now: 0)
        osd.post("bob paused at 0:12\nfor a drink", now: 1)
        #expect(osd.text(now: 2, status: { "status" }) == "bob joined\nbob paused at 0:12 for a drink")
        #expect(osd.text(now: 4.5, status: { "status" }) == "bob paused at 0:12 for a drink")
        #expect(osd.text(now: 5.5, status: { "status" }) == nil)
        for i in 1...6 { osd.post("line \(i)", now: 10) }
        #expect(osd.text(now: 10, status: { "" }) == "line 3\nline 4\nline 5\nline 6")
        #expect(!osd.showsStatus(now: 20))
        osd.showStatus(now: 20)
        #expect(osd.showsStatus(now: 21) && !osd.showsStatus(now: 24.5))
        osd.post(String(repeating: "x", count: 500), now: 20)
        let shown = osd.text(now: 21, status: { "▶ 0:21 / 0:40" })
        #expect(shown?.hasPrefix("▶ 0:21 / 0:40\n") == true)
        #expect(shown?.split(separator: "\n").last?.count == OnScreenDisplay.maximumLineLength)
        #expect(osd.text(now: 25, status: { "s" }) == nil)
    }
}

@Suite("Chat lines")
struct ChatTests {
    @Test("c opens a line in the terminal: typed text, Backspace, Enter sends; Esc cancels; keys work again after")
    func chatPrompt() {
        var decoder = KeyDecoder()
        #expect(decoder.feed(Array("chi ".utf8)) == [.openChatPrompt])
        #expect(decoder.chatLine == "hi ")
        #expect(decoder.feed(Array("thereé".utf8) + [0x7F]) == [])
        #expect(decoder.chatLine == "hi there")
        #expect(decoder.feed([0x0D, 0x20]) == [.chat("hi there"), .togglePlayPause])
        #expect(decoder.chatLine == nil)
        #expect(decoder.feed(Array("cnever sent".utf8) + [0x1B]) == [.openChatPrompt])
        #expect(decoder.chatLine == nil)
        // An arrow pressed while typing cancels the line without seeking.
        #expect(decoder.feed(Array("cabc".utf8) + [0x1B, 0x5B, 0x44] + Array("m".utf8)) == [.openChatPrompt, .toggleMute])
        // An empty line sends nothing.
        #expect(decoder.feed(Array("c".utf8) + [0x0D]) == [.openChatPrompt])
    }

    @Test("chat TEXT on standard input; control characters and direction overrides removed; bounded length")
    func cleaning() throws {
        #expect(try UserCommand.parse(line: "chat  back in five ") == .chat("back in five"))
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "chat   ") }
        #expect(Chat.clean("red\u{1B}[31m alert\u{07}\nnext line\u{202E}dlrow") == "red[31m alert next linedlrow")
        #expect(Chat.clean(String(repeating: "é", count: 900))?.count == Chat.maximumLength)
        #expect(Chat.clean("\u{1B}\u{07}  ") == nil)
    }
}
