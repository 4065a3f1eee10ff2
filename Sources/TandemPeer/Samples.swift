import Foundation

/// Finds the bundled media samples (`media-samples/`): in the current directory, next to the source tree the
/// executable was built in (`.build/<config>/tandem` → `../../media-samples`), where `make install` put them
/// (`PREFIX/bin/tandem` → `PREFIX/share/tandem/media-samples`), or in the source tree this file was compiled from
/// (tests). The one place that looks; the demo, the benchmarks and the tests all ask here.
package enum Samples {
    /// The first `media-samples` directory found, or nil.
    package static var directory: URL? {
        var candidates = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath)]
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(directory)
            candidates.append(directory.appendingPathComponent("share/tandem"))
            directory.deleteLastPathComponent()
        }
        candidates.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent())
        var isDirectory: ObjCBool = false
        return candidates.map { $0.appendingPathComponent("media-samples") }.first {
            FileManager.default.fileExists(atPath: $0.path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
    }

    /// The path of the sample `name`.
    package static func path(_ name: String) throws(MissingSample) -> String {
        guard let path = directory?.appendingPathComponent(name).path, FileManager.default.fileExists(atPath: path) else {
            throw MissingSample(name: name)
        }
        return path
    }
}

/// A bundled sample that cannot be found.
package struct MissingSample: Error, CustomStringConvertible {
    package let name: String
    package var description: String {
        "cannot find the bundled sample media-samples/\(name) — run from the Tandem source directory, or pass --file"
    }
}
