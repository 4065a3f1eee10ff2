import Foundation
import Testing
@testable import TandemBench
#if canImport(Glibc)
import Glibc
#endif

/// The bare relay of `tandem bench relay --floor`: real loopback sockets, the relay on a thread of its own.
@Suite("Bare relay (the bench's floor)", .serialized)
struct BareRelayTests {
    /// A running bare relay on 127.0.0.1 and the pipe that stops it.
    final class Running: @unchecked Sendable {
        // @unchecked Sendable: the descriptors are plain integers, written once before the thread starts.
        let port: Int
        let stopWrite: Int32
        let stopped = DispatchSemaphore(value: 0)

        init() throws {
            let (listener, port) = try BareSocket.listen()
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw BenchError("pipe failed") }
            self.port = port
            stopWrite = ends[1]
            let stopRead = ends[0]
            let stopped = stopped
            Thread {
                try? BareRelay.run(listener: listener, stop: stopRead)
                close(stopRead)
                stopped.signal()
            }.start()
        }

        /// Stops the relay and waits (at most 5 s) for its loop to end; false if it did not.
        func stop() -> Bool {
            var byte: UInt8 = 1
            _ = write(stopWrite, &byte, 1)
            close(stopWrite)
            return stopped.wait(timeout: .now() + 5) == .success
        }
    }

    /// A participant: connects and names its session.
    static func join(_ relay: Running, session: UInt32) throws -> Int32 {
        let fd = try BareSocket.connect(port: relay.port)
        var header = session.bigEndian
        #expect(write(fd, &header, 4) == 4)
        return fd
    }

    static func frame(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        return withUnsafeBytes(of: UInt32(payload.count).bigEndian, Array.init) + payload
    }

    /// Reads from `fd` until `count` bytes have come or 5 s have passed.
    static func read(_ fd: Int32, count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(5)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < count, Date() < deadline {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, Swift.min($0.count, count - bytes.count)) }
            if got > 0 { bytes += buffer[0..<got] } else if got == 0 { break } else { usleep(2_000) }
        }
        return bytes
    }

    /// Whether the relay closed `fd` within 5 s (a read sees the end of the stream).
    static func closedByRelay(_ fd: Int32) -> Bool {
        let deadline = Date().addingTimeInterval(5)
        var byte: UInt8 = 0
        while Date() < deadline {
            let got = Glibc.read(fd, &byte, 1)
            if got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return true }
            usleep(2_000)
        }
        return false
    }

    @Test("a frame goes to the others of its session, whole and in order, and to nobody else")
    func forwardsWithinTheSession() throws {
        let relay = try Running()
        let a = try Self.join(relay, session: 0), b = try Self.join(relay, session: 0), c = try Self.join(relay, session: 0)
        let stranger = try Self.join(relay, session: 1)
        defer { [a, b, c, stranger].forEach { close($0) } }
        usleep(100_000)  // the relay registers the sessions
        // One frame cut across three writes, then two frames in one write.
        let first = Self.frame("first message"), second = Self.frame("second"), third = Self.frame("third")
        _ = first.withUnsafeBytes { write(a, $0.baseAddress!, 3) }
        usleep(20_000)
        _ = first.withUnsafeBytes { write(a, $0.baseAddress! + 3, 5) }
        usleep(20_000)
        _ = first.withUnsafeBytes { write(a, $0.baseAddress! + 8, first.count - 8) }
        let both = second + third
        _ = both.withUnsafeBytes { write(a, $0.baseAddress!, both.count) }
        let expected = first + second + third
        #expect(Self.read(b, count: expected.count) == expected)
        #expect(Self.read(c, count: expected.count) == expected)
        // Nothing to the sender itself or to another session.
        usleep(100_000)
        var byte: UInt8 = 0
        #expect(Glibc.read(a, &byte, 1) < 0 && errno == EAGAIN)
        #expect(Glibc.read(stranger, &byte, 1) < 0 && errno == EAGAIN)
        #expect(relay.stop())
    }

    @Test("a frame longer than the limit, or a session beyond the limit, closes that connection alone")
    func boundsDropTheOffenderAlone() throws {
        let relay = try Running()
        let a = try Self.join(relay, session: 3), b = try Self.join(relay, session: 3)
        let offender = try Self.join(relay, session: 3)
        let farAway = try Self.join(relay, session: UInt32(BareRelay.maxSessions))
        defer { [a, b, offender, farAway].forEach { close($0) } }
        usleep(100_000)
        var length = UInt32(BareRelay.maxFrame + 1).bigEndian
        _ = write(offender, &length, 4)
        #expect(Self.closedByRelay(offender))
        #expect(Self.closedByRelay(farAway))
        let frame = Self.frame("still here")
        _ = frame.withUnsafeBytes { write(a, $0.baseAddress!, frame.count) }
        #expect(Self.read(b, count: frame.count) == frame)
        #expect(relay.stop())
    }
}
