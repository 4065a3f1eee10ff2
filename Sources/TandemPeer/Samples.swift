import Foundation

/// Finds the bundled media samples: `media-samples/` in the current directory, next to the source tree the
/// executable was built in (`.build/<config>/tandem` → `../../media-samples`), or where `make install` put them
/// (`PREFIX/bin/tandem` → `PREFIX/share/tandem/media-samples`).
package enum Samples {
    package static func path(_ name: String) throws(MissingSample) -> String {
        var candidates = [FileManager.default.currentDirectoryPath + "/media-samples/" + name]
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(directory.appendingPathComponent("media-samples/" + name).path)
            candidates.append(directory.appendingPathComponent("share/tandem/media-samples/" + name).path)
            directory.deleteLastPathComponent()
        }
        if let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) { return found }
        throw MissingSample(name: name)
    }
}

/// A bundled sample that cannot be found.
package struct MissingSample: Error, CustomStringConvertible {
    package let name: String
    package var description: String {
        "cannot find the bundled sample media-samples/\(name) — run from the Tandem source directory, or pass --file"
    }
}
