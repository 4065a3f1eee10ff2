import Foundation

/// Finds the bundled media samples (`media-samples/`): in the current directory, next to the source tree the
/// executable was built in (`.build/<config>/tandem` → `../../media-samples`), where `make install` put them
/// (`PREFIX/bin/tandem` → `PREFIX/share/tandem/media-samples`), or in the source tree this file was compiled from
/// (tests). The one place that looks; the demo, the benchmarks and the tests all ask here.
package enum Samples {
    /// Where `media-samples` may be, in the order looked at.
    private static var candidates: [URL] {
        var bases = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath)]
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            bases.append(directory)
            bases.append(directory.appendingPathComponent("share/tandem"))
            directory.deleteLastPathComponent()
        }
        bases.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent())
        return bases.map { $0.appendingPathComponent("media-samples") }
    }

    /// The first `media-samples` directory found, or nil.
    package static var directory: URL? {
        candidates.first { candidate in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
    }

    /// The path of the sample `name`: the first candidate that has it.
    package static func path(_ name: String) throws(MissingSample) -> String {
        let paths = candidates.map { $0.appendingPathComponent(name).path }
        guard let found = paths.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw MissingSample(name: name)
        }
        return found
    }
}

extension Samples {
    /// Makes a file with two audio tracks (languages `audio`: English, then French) and an embedded subtitle track
    /// (German), 3 s of test video, with a real GStreamer pipeline (`gst-launch-1.0`) in `directory`; returns its
    /// path and gst-launch's exit status. For tests and trying out track choices (`--audio-track`, `--share-tracks`).
    package static func makeMultiTrackFile(in directory: URL, audio: (String, String) = ("eng", "fra"),
                                           name: String = "tracks.mkv") throws -> (path: String, status: Int32) {
        let srt = directory.appendingPathComponent("subs.srt").path
        let cues = (1...6).map { "\($0)\n00:00:0\($0),000 --> 00:00:0\($0),800\nCue number \($0) of the embedded track\n" }
        try cues.joined(separator: "\n").write(toFile: srt, atomically: true, encoding: .utf8)
        let output = directory.appendingPathComponent(name).path
        // matroskamux writes the track headers, languages included, once every waiting pad has data, and it stops
        // waiting for a subtitle pad when that pad's caps arrive. A language tagged after the subtitle parser
        // reaches the muxer after those caps (caps go before tags on a pad), so on a loaded machine the header
        // could be written without it and the track read back as Matroska's default, English. Tagged ahead of
        // the parser, the language passes the pad before the caps do, on the same thread: it is always in the
        // header. (The audio pads wait for their first buffer, which their tags precede.)
        let pipeline = """
            matroskamux name=m ! filesink location=\(output) \
            videotestsrc num-buffers=90 ! video/x-raw,width=160,height=120,framerate=30/1 ! vp8enc deadline=1 ! m. \
            audiotestsrc num-buffers=150 ! audio/x-raw,rate=48000,channels=2 ! vorbisenc ! \
            taginject tags=language-code=\(audio.0) ! m. \
            audiotestsrc num-buffers=150 freq=880 ! audio/x-raw,rate=48000,channels=1 ! vorbisenc ! \
            taginject tags=language-code=\(audio.1) ! m. \
            filesrc location=\(srt) ! taginject tags=language-code=deu ! subparse ! m.
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gst-launch-1.0", "-q"] + pipeline.split(separator: " ").map(String.init)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return (output, process.terminationStatus)
    }
}

/// A bundled sample that cannot be found.
package struct MissingSample: Error, CustomStringConvertible {
    package let name: String
    package var description: String {
        "cannot find the bundled sample media-samples/\(name) — run from the Tandem source directory, or pass --file"
    }
}
