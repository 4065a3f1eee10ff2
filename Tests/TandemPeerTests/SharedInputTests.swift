import Foundation
import Synchronization
import Testing
import TandemPeer

/// Stdin shared by the consoles one process runs in turn: one reader, what it reads goes to the latest stream.
@Suite("Shared input: one reader for consoles in turn")
struct SharedInputTests {
    /// Lines written to a pipe, read by a `SharedInput` as a console's stdin would be.
    final class Pipe: Sendable {
        let fds: (read: Int32, write: Int32)
        init() {
            var pair: [Int32] = [0, 0]
            _ = pair.withUnsafeMutableBufferPointer { pipe($0.baseAddress!) }
            fds = (pair[0], pair[1])
        }
        func write(_ line: String) { _ = Array((line + "\n").utf8).withUnsafeBytes { Glibc.write(fds.write, $0.baseAddress, $0.count) } }
        func readLine() -> String? {
            var bytes: [UInt8] = []
            var byte: UInt8 = 0
            while Glibc.read(fds.read, &byte, 1) == 1 {
                if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
                bytes.append(byte)
            }
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
    }

    @Test("a second stream gets the next line (the first ends), a line read between streams waits for the next, the end ends all")
    func turns() async throws {
        let pipe = Pipe()
        let input = SharedInput { pipe.readLine() }
        var first = input.stream().makeAsyncIterator()
        pipe.write("play")
        #expect(await first.next() == "play")
        var second = input.stream().makeAsyncIterator()
        #expect(await first.next() == nil)
        pipe.write("pause")
        #expect(await second.next() == "pause")
        // No stream open: the line waits.
        second = AsyncStream<String> { $0.finish() }.makeAsyncIterator()
        var third: AsyncStream<String>.Iterator? = input.stream().makeAsyncIterator()
        third = nil
        try await Task.sleep(for: .milliseconds(50))
        pipe.write("leave")
        try await Task.sleep(for: .milliseconds(100))
        _ = third
        var fourth = input.stream().makeAsyncIterator()
        #expect(await fourth.next() == "leave")
        close(pipe.fds.write)
        #expect(await fourth.next() == nil)
        var fifth = input.stream().makeAsyncIterator()
        #expect(await fifth.next() == nil)
    }
}
