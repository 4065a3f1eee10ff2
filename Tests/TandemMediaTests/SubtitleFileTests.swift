import Foundation
import Testing
import TandemCore
@testable import TandemMedia

@Suite("Subtitle files: SubRip, WebVTT, SSA/ASS")
struct SubtitleFileTests {
    static func ms(_ value: Int64) -> ItemTime { ItemTime(nanoseconds: value * 1_000_000) }

    @Test("SubRip: cues in order, markup dropped, CRLF and a byte-order mark accepted")
    func subRip() throws {
        let text = "\u{FEFF}2\r\n00:00:05,500 --> 00:00:07,000\r\n<i>Second</i>\r\n\r\n"
            + "1\r\n00:00:01,000 --> 00:00:02,250\r\nFirst line\r\n<font color=\"red\">second line</font>\r\n\r\n"
            + "3\r\n01:02:03,004 --> 01:02:04,000\r\nLate\r\n"
        let cues = try SubtitleFile.parse(text)
        #expect(cues == [SubtitleCue(start: Self.ms(1_000), end: Self.ms(2_250), text: "First line\nsecond line"),
                         SubtitleCue(start: Self.ms(5_500), end: Self.ms(7_000), text: "Second"),
                         SubtitleCue(start: Self.ms(3_723_004), end: Self.ms(3_724_000), text: "Late")])
    }

    @Test("WebVTT: hours optional, cue settings and voice tags ignored, NOTE blocks skipped")
    func webVTT() throws {
        let text = """
            WEBVTT

            NOTE a comment that is not a cue

            00:01.000 --> 00:02.500 align:start position:10%
            <v Bob>Hello &amp; welcome</v>

            00:00:03.000 --> 00:00:04.000
            <c.yellow>Bye</c>
            """
        let cues = try SubtitleFile.parse(text)
        #expect(cues == [SubtitleCue(start: Self.ms(1_000), end: Self.ms(2_500), text: "Hello & welcome"),
                         SubtitleCue(start: Self.ms(3_000), end: Self.ms(4_000), text: "Bye")])
    }

    @Test("SSA/ASS: the Format line's field order, commas in the text, override tags and \\N")
    func substationAlpha() throws {
        let text = """
            [Script Info]
            Title: test

            [Events]
            Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
            Dialogue: 0,0:00:01.50,0:00:03.00,Default,,0,0,0,,{\\an8}Hello, world\\Nsecond line
            Comment: 0,0:00:04.00,0:00:05.00,Default,,0,0,0,,not shown
            """
        let cues = try SubtitleFile.parse(text)
        #expect(cues == [SubtitleCue(start: Self.ms(1_500), end: Self.ms(3_000), text: "Hello, world\nsecond line")])
    }

    @Test("what is not subtitles is a clear error; files are bounded")
    func errors() throws {
        #expect(throws: SubtitleFile.ParseError.self) { try SubtitleFile.parse("just some text\nwith lines\n") }
        #expect(throws: SubtitleFile.ParseError.self) { try SubtitleFile.parse("1\n00:00:xx,000 --> 00:00:01,000\nBad\n") }
        do {
            _ = try SubtitleFile.parse("")
        } catch {
            #expect(error.description.contains(".srt"))
        }
        let directory = try Samples.scratch()
        defer { Samples.remove(directory) }
        let big = directory.appendingPathComponent("big.srt")
        try Data(count: SubtitleFile.maximumBytes + 1).write(to: big)
        #expect(throws: PlaybackError.badSubtitles(path: big.path, detail: "larger than 8 MB")) {
            try SubtitleFile.load(path: big.path)
        }
        let long = String(repeating: "x", count: 5_000)
        let cue = try SubtitleFile.parse("1\n00:00:01,000 --> 00:00:02,000\n\(long)\n")
        #expect(cue.first?.text.count == SubtitleFile.maximumCueLength)
        // Control characters never reach the overlay.
        let control = try SubtitleFile.parse("1\n00:00:01,000 --> 00:00:02,000\nbell\u{07} and escape\u{1B}[31m\n")
        #expect(control.first?.text == "bell and escape[31m")
    }
}
