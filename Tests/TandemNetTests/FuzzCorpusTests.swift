import Foundation
import NIOCore
import TandemCore
import TandemTesting
import TandemWireFuzzing
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
        var rng = SeededRandom(seed: 0x7A4D3)
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

    /// Hostile inputs worth keeping, and every input the fuzzer ever crashed on (none so far), so that what was
    /// fixed cannot come back.
    @Test(arguments: FuzzCorpusTests.regressions)
    func formerCrashes(_ input: [UInt8]) {
        WireFuzzing.exercise(input)
    }

    static let regressions: [[UInt8]] = [
        // A frame header announcing 4 GiB, then nothing (the security review's "4 GB length prefix").
        [0, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
    ]
}
