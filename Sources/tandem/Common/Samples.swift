import Foundation

/// Finds the bundled media samples: `media-samples/` in the current directory, or next to the source tree the
/// executable was built in (`.build/<config>/tandem` → `../../media-samples`).
enum Samples {
    static func path(_ name: String) throws(CLIError) -> String {
        var candidates = [FileManager.default.currentDirectoryPath + "/media-samples/" + name]
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(directory.appendingPathComponent("media-samples/" + name).path)
            directory.deleteLastPathComponent()
        }
        if let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) { return found }
        throw CLIError(.badMedia, "cannot find the bundled sample media-samples/\(name) — run from the Tandem source directory, or pass --file")
    }
}
