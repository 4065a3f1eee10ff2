import Foundation
import TandemCore

/// A file path or URI, checked before GStreamer sees it.
struct MediaLocation: Sendable {
    var uri: String
    var display: String
    var path: String
    var isFile: Bool

    init(_ location: String) throws(PlaybackError) {
        if let schemeEnd = location.range(of: "://") {
            let scheme = location[..<schemeEnd.lowerBound].lowercased()
            switch scheme {
            case "http", "https":
                self.init(uri: location, display: location, path: "", isFile: false)
                return
            case "file":
                guard let url = URL(string: location), url.isFileURL else { throw .noSuchFile(path: location) }
                try self.init(path: url.path)
                return
            default:
                throw .unsupportedScheme(scheme)
            }
        }
        guard !location.isEmpty else { throw .noSuchFile(path: location) }
        try self.init(path: location)
    }

    private init(uri: String, display: String, path: String, isFile: Bool) {
        self.uri = uri
        self.display = display
        self.path = path
        self.isFile = isFile
    }

    private init(path: String) throws(PlaybackError) {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory) else {
            throw .noSuchFile(path: path)
        }
        if isDirectory.boolValue { throw .isDirectory(path: path) }
        guard FileManager.default.isReadableFile(atPath: absolute) else {
            throw .unreachable(uri: path, detail: "permission denied")
        }
        self.init(uri: URL(fileURLWithPath: absolute).absoluteString, display: path, path: absolute, isFile: true)
    }
}
