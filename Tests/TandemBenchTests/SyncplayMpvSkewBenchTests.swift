import Foundation
import Testing
import TandemBench
import TandemPeer

@Suite("mpv's frames as ground truth, and the Syncplay client skew benchmark", .serialized)
struct SyncplayMpvSkewBenchTests {
    /// A strip as mpv's `tct` output writes it: each cell a background colour and a space.
    static func strip(milliseconds: Int64, check: Int64? = nil, gray: Int? = nil) -> [UInt8] {
        var bits = [true, false]
        bits += (0..<24).map { milliseconds >> Int64($0) & 1 == 1 }
        bits += (0..<6).map { (check ?? milliseconds % 59) >> Int64($0) & 1 == 1 }
        let cells = bits.enumerated().map { index, bit in
            let value = index == 5 ? gray ?? (bit ? 255 : 0) : (bit ? 255 : 0)
            return "\u{1B}[48;2;\(value);\(value);\(value)m "
        }
        return Array(("\u{1B}[0;0f" + cells.joined() + "\u{1B}[0m\n").utf8)
    }

    @Test("stamped pictures are taken out of the client's text, each frame once, torn or unchecked ones refused")
    func decodesStrips() {
        var stamps = MpvFrameStamps()
        let text = Array("[12:00:00] bob unpaused\n".utf8)
        var first = stamps.consume(text + Self.strip(milliseconds: 20_033), arrival: 1_000)
        #expect(first.frames.map(\.item) == [20_033_000_000])
        #expect(first.frames.map(\.time) == [1_000])
        #expect(String(decoding: first.text, as: UTF8.self).hasPrefix("[12:00:00] bob unpaused\n"))
        // A picture split across reads counts when its end arrives; a redraw of the same frame does not count again.
        let next = Self.strip(milliseconds: 20_067)
        first = stamps.consume(next[0..<100], arrival: 2_000)
        #expect(first.frames.isEmpty)
        first = stamps.consume(next[100...] + Self.strip(milliseconds: 20_067), arrival: 3_000)
        #expect(first.frames.map(\.item) == [20_067_000_000])
        #expect(first.frames.map(\.time) == [3_000])
        // Text alone comes out whole at once; only what may begin a picture waits for the next read.
        let line = stamps.consume(Array("[12:00:01] ann paused\n\u{1B}[0".utf8), arrival: 3_500)
        #expect(String(decoding: line.text, as: UTF8.self) == "[12:00:01] ann paused\n")
        #expect(String(decoding: stamps.consume(Array("m done\n".utf8), arrival: 3_600).text, as: UTF8.self) == "\u{1B}[0m done\n")
        // A wrong check, a cell neither black nor white, or a black picture (before the first frame) is no stamp.
        let bad = stamps.consume(Self.strip(milliseconds: 20_100, check: 1) + Self.strip(milliseconds: 20_100, gray: 128)
                                     + Array(("\u{1B}[0;0f" + String(repeating: "\u{1B}[48;2;0;0;0m ", count: 32) + "\u{1B}[0m\n").utf8),
                                 arrival: 4_000)
        #expect(bad.frames.isEmpty)
        #expect(stamps.rejected == 3)
    }

    @Test("arrivals are placed against mpv's own flip stamps across the run's breaks, a whole frame's shift refused")
    func placesArrivalsAgainstFlips() throws {
        // Three stretches of 30 fps with breaks between them, on mpv's clock; two flips (black frames) never arrive.
        var flips: [Int64] = []
        for (start, count) in [(Int64(10_000_000_000), 100), (14_000_000_000, 100), (19_000_000_000, 100)] {
            flips += (0..<count).map { start + Int64($0) * 33_333_333 }
        }
        let offset: Int64 = 5_000_000_000_123
        // Delays of 1 or 2 ms, one of 5 ms; and a picture with no flip near it.
        let arrivals = flips.dropFirst(2).enumerated().map { index, flip in
            flip + offset + (index == 150 ? 5_000_000 : index % 3 == 0 ? 2_000_000 : 1_000_000)
        } + [13_500_000_000 + offset]
        let delays = MpvFlipCheck.delays(arrivals: arrivals.sorted(), flips: flips)
        #expect(delays.count == 298)
        #expect(delays.filter { $0 == 0 }.count == 198, "\(delays.prefix(20))")
        #expect(delays.max() == 4_000_000)
        // mpv's file: only its flips' ends count.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tandem-stats-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try "10162381 start video-draw\n10162400 start video-flip\n10162415 end video-flip\n10162420 value 0.03 x\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        #expect(MpvFlipCheck.flips(in: file) == [10_162_415_000])
    }

    @Test("mpv with the stamping options writes each frame's own media time, from where it starts")
    func realMpvStampsItsFrames() throws {
        guard FileManager.default.isExecutableFile(atPath: SyncplayClientProcess.mpv) else {
            Issue.record("mpv is not installed — `make deps` installs it")
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: SyncplayClientProcess.mpv)
        process.arguments = ["--no-config", "--terminal=no", "--start=20", "--length=0.5", "--framedrop=no"] + MpvFrameStamps.mpvArguments
            + [try Samples.path("countdown.webm")]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var stamps = MpvFrameStamps()
        let items = stamps.consume(data, arrival: 0).frames.map(\.item)
        #expect(items.count >= 10, "\(items)")
        #expect(items.first.map { abs($0 - 20_000_000_000) < 50_000_000 } == true, "\(items)")
        // 30 frames a second, in order, none left out (no frame dropping): 33 or 34 ms apart (the file's times are
        // whole milliseconds).
        #expect(zip(items, items.dropFirst()).allSatisfy { [33_000_000, 34_000_000].contains($1 - $0) }, "\(items)")
    }

    @Test("a Tandem host and syncplay + mpv in her session: frames presented by both, skew and settling reported")
    func smoke() async throws {
        let report = try await SyncplayMpvSkewBench.run(media: try Samples.path("countdown.webm"), duration: 10)
        #expect(report.showings > 20, "\(report)")
        // Bounds for a loaded machine: Syncplay's own rules leave up to seconds of drift alone.
        #expect(report.p99 < 2_000_000_000, "\(report)")
        #expect(report.settling.map(\.command) == ["play", "seek", "play again"])
        #expect(report.description.contains("syncplay + mpv bob"))
        #expect(report.description.contains("mpv ahead of ann's player"), "\(report)")
        #expect(report.description.contains("after its own flip stamps"), "\(report)")
    }
}
