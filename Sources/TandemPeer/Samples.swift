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

/// A bundled sample that cannot be found.
package struct MissingSample: Error, CustomStringConvertible {
    package let name: String
    package var description: String {
        "cannot find the bundled sample media-samples/\(name) — run from the Tandem source directory, or pass --file"
    }
}
