import Foundation
import Testing

/// The layers of docs/ARCHITECTURE.md, checked on the sources: each target imports only what its row allows, so an
/// arrow that points up (the core importing NIO, the library importing the bench) fails here, not in review.
@Suite("Layers: what each target may import")
struct LayerImportTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// Platform modules every target may use.
    static let platform: Set<String> = ["Foundation", "Synchronization", "Dispatch", "Glibc", "Darwin"]

    static let allowed: [String: Set<String>] = [
        "TandemCore": [],
        "TandemCrypto": ["CTandemCrypto"],
        "TandemTLS": ["CTandemTLS", "NIOCore", "NIOTLS"],
        "TandemMedia": ["TandemCore", "CTandemGStreamer", "CTandemGStreamerShim", "TandemCrypto", "Logging"],
        "TandemNet": ["TandemCore", "NIOCore", "NIOPosix", "NIOFoundationCompat", "NIOHTTP1", "NIOWebSocket",
                      "TandemTLS", "TandemCrypto", "Logging", "CTandemBareSockets"],
        "Tandem": ["TandemCore", "TandemMedia", "TandemNet"],
        "TandemPeer": ["Tandem", "TandemCore", "TandemMedia", "TandemNet", "TandemSyncplay", "TandemPortMapping", "Logging",
                       "ServiceLifecycle"],
        "TandemPortMapping": ["TandemCore", "CTandemPortMapping"],
        "TandemOps": ["TandemCore", "TandemNet", "NIOCore", "NIOPosix", "NIOHTTP1", "CoreMetrics", "Prometheus"],
        "TandemRelayState": ["TandemCore", "TandemNet", "CTandemSQLite", "Logging"],
        "TandemTesting": ["TandemCore", "TandemNet", "NIOCore"],
        "TandemSyncplay": ["TandemCore", "NIOCore", "NIOPosix", "TandemTLS", "NIOTLS", "TandemCrypto"],
        "TandemBench": ["TandemPeer", "Tandem", "TandemSyncplay", "TandemCore", "TandemMedia", "TandemNet", "TandemTesting", "NIOCore",
                        "NIOPosix", "Logging", "Histogram", "CTandemBareSockets"],
        "tandem": ["Tandem", "TandemPeer", "TandemBench", "TandemSyncplay", "TandemOps", "TandemRelayState", "ArgumentParser", "Logging",
                   "ServiceLifecycle", "UnixSignals"],
    ]

    static func imports(of target: String) throws -> [String: Set<String>] {
        let root = sources.appendingPathComponent(target)
        var found: [String: Set<String>] = [:]
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        #expect(!files.isEmpty, "no sources under \(root.path)")
        let pattern = try Regex(#"^(?:@[\w()]+\s+)*import\s+(?:(?:struct|class|enum|func|protocol)\s+)?(\w+)"#)
        for file in files {
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if let match = trimmed.firstMatch(of: pattern), let module = match.output[1].substring {
                    found[String(module), default: []].insert(file.lastPathComponent)
                }
            }
        }
        return found
    }

    @Test("each target imports only the layers below it", arguments: allowed.keys.sorted())
    func onlyAllowedImports(target: String) throws {
        let permitted = Self.allowed[target]!.union(Self.platform)
        for (module, files) in try Self.imports(of: target) where !permitted.contains(module) {
            Issue.record("\(target) imports \(module) (in \(files.sorted().joined(separator: ", "))): not in its row of docs/ARCHITECTURE.md")
        }
    }

    @Test("the core imports neither GStreamer nor NIO nor the layers above it")
    func coreIsPure() throws {
        let modules = Set(try Self.imports(of: "TandemCore").keys)
        #expect(modules.isSubset(of: Self.platform), "TandemCore imports \(modules.subtracting(Self.platform).sorted())")
    }
}
