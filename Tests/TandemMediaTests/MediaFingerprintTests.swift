import Foundation
import Testing
@testable import TandemMedia

@Suite("Media fingerprint")
struct MediaFingerprintTests {
    /// The committed samples' fingerprints, by the definition the C shim used before the fingerprint moved to
    /// Swift (the WebM samples' values are those of their remake with the audio starting 10 ms in, computed with
    /// coreutils as below): peers running either version must agree.
    @Test("the samples keep the fingerprints the C shim gave them", arguments: [
        ("countdown.opus", "29421004c6315ee73095b1b3a1a5b41fb02c0aa55bebc1ac41c8e36b8d7ee23d"),
        ("countdown.webm", "581e200835632c0d127bb525f0541f61360d3f10a8a3ea7e9e4d20ac3edf9c7e"),
        ("not-media.webm", "2896b50ca78f4777f6d5c1fe7afbbcff20f8cf788e653cd5fb76793bca55495e"),
        ("short.webm", "cf6c0d5c3002e99c7e68eb96f9351fabf3c0744fc748caac875424b3f15e3903"),
    ])
    func pinned(name: String, fingerprint: String) {
        #expect(MediaFingerprint.ofFile(atPath: Samples.path(name)) == fingerprint)
    }

    /// What a server says in `Tandem-Content-ID` is taken only in the fingerprint's own form.
    @Test("a content ID header is taken only as 64 lowercase hex digits")
    func headerForm() {
        #expect(MediaFingerprint.isFingerprint(String(repeating: "0a", count: 32)))
        for said in ["", String(repeating: "0A", count: 32), String(repeating: "0a", count: 33),
                     String(repeating: "0a", count: 31) + "0g", "../" + String(repeating: "0", count: 61)] {
            #expect(!MediaFingerprint.isFingerprint(said), "\(said)")
        }
    }

    /// The definition, checked against coreutils: SHA-256 of "<size>\n", the first and the last 64 KiB.
    @Test("equals sha256sum of the size, the first and the last 64 KiB",
          arguments: [0, 1, 65_535, 65_536, 65_537, 200_000])
    func matchesSha256sum(size: Int) throws {
        let directory = try Samples.scratch()
        defer { Samples.remove(directory) }
        let file = directory.appendingPathComponent("data.bin")
        var generator = SystemRandomNumberGenerator()
        try Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: file)

        let script = "{ printf '%s\\n' \"$(stat -c %s \"$1\")\"; head -c 65536 \"$1\"; tail -c 65536 \"$1\"; } "
            + "| sha256sum"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script, "sh", file.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let expected = try #require(text.split(separator: " ").first.map(String.init))
        #expect(expected.count == 64)
        #expect(MediaFingerprint.ofFile(atPath: file.path) == expected)
    }

    @Test("a file that cannot be opened has none")
    func missingFile() {
        #expect(MediaFingerprint.ofFile(atPath: "/nonexistent/tandem-\(UUID().uuidString)") == nil)
    }
}
