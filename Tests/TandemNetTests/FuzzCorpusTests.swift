import Foundation
import NIOCore
import TandemCore
import Testing
@testable import TandemNet

/// The fuzzer's harness on its seed corpus and on seeded mutations of it: a short smoke of `make fuzz`, and the
/// place where every input the fuzzer ever crashed on is kept as a regression test.
@Suite struct FuzzCorpusTests {
    static let corpus: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/corpus").standardized

    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted()
        return names.compactMap { name in
            FileManager.default.contents(atPath: corpus.appendingPathComponent(name).path).map { (name, Array($0)) }
        }
    }

    @Test func seedCorpusIsValidWhereItShouldBe() throws {
        let seeds = try Self.seeds()
        #expect(seeds.count >= 30)
        // The JSON seeds are real session messages (so the fuzzer starts from inputs that get deep), and the
        // handshake stream splits into the frames it was made of.
        for seed in seeds where seed.name.hasPrefix("json-") {
            var body = ByteBufferAllocator().buffer(capacity: seed.bytes.count)
            body.writeBytes(seed.bytes.dropFirst())
            #expect(throws: Never.self, "\(seed.name)") {
                _ = try SessionCodec.decodeClientMessage(Frame(kind: .session, body: body))
            }
        }
        for seed in seeds { WireFuzzing.exercise(seed.bytes) }
    }

    @Test func seededMutationsNeverCrash() throws {
        let seeds = try Self.seeds()
        var rng = SplitMix(seed: 0x7A4D3)
        for _ in 0..<20_000 {
            var input = seeds[Int(rng.next() % UInt64(seeds.count))].bytes
            for _ in 0..<(1 + rng.next() % 8) {
                let position = input.isEmpty ? 0 : Int(rng.next() % UInt64(input.count))
                switch rng.next() % 4 {
                case 0 where !input.isEmpty: input[position] = UInt8(truncatingIfNeeded: rng.next())
                case 1: input.insert(UInt8(truncatingIfNeeded: rng.next()), at: position)
                case 2 where input.count > 1: input.remove(at: max(1, position))
                default: input[position...].reverse()
                }
            }
            WireFuzzing.exercise(input)
        }
    }

    /// Inputs the fuzzer found crashes with, each fixed; they stay here so the crash cannot come back.
    @Test(arguments: FuzzCorpusTests.regressions)
    func formerCrashes(_ input: [UInt8]) {
        WireFuzzing.exercise(input)
    }

    static let regressions: [[UInt8]] = [
        // A frame header announcing 4 GiB, then nothing.
        [0, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
    ]
}

/// A small deterministic generator for reproducible mutations.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
