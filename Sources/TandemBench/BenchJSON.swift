import Foundation

/// Writes a benchmark's figures as pretty-printed JSON (sorted keys); non-finite numbers, which a run without
/// frames to compare has, as the strings `inf`, `-inf` and `nan`.
package enum BenchJSON {
    package static func write<Value: Encodable>(_ value: Value, to path: String) throws(BenchError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        do { try encoder.encode(value).write(to: URL(fileURLWithPath: path)) } catch {
            throw BenchError("cannot write the figures to \(path): \(error)")
        }
    }
}
