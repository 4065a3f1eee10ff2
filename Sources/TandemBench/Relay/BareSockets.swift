import CTandemBareSockets
import Foundation
import TandemCore
#if canImport(Glibc)
import Glibc
#endif

/// Plain loopback TCP sockets and epoll for the bare relay (`BareRelay`): system calls and nothing else, so that
/// what it costs is the kernel's.
enum BareSocket {
    /// A listening socket on 127.0.0.1 (`port` 0: any free port) and the port it got.
    static func listen(port: Int = 0) throws(BenchError) -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket() failed: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 4096) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw BenchError("cannot listen on 127.0.0.1:\(port): \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        var actual = sockaddr_in()
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: actual.sin_port)))
    }

    /// A connection to 127.0.0.1:`port`, made blocking and then switched to non-blocking, with Nagle's delay off
    /// (as Tandem's server and clients have it).
    static func connect(port: Int) throws(BenchError) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket() failed: \(String(cString: strerror(errno)))") }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw BenchError("cannot connect to 127.0.0.1:\(port): \(reason)")
        }
        prepare(fd)
        return fd
    }

    /// Non-blocking, without Nagle's delay.
    static func prepare(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }

    /// `CLOCK_MONOTONIC` (ns), read as Tandem's bench reads it when it stamps messages.
    static func now() -> Int64 { SystemMonotonicClock().now.nanoseconds }
}

/// An epoll set, level-triggered, with room for `capacity` events a wait (`CTandemBareSockets`).
final class BareEpoll {
    let fd: Int32
    private var readyDescriptors: [Int32]
    private var readyBits: [UInt32]

    init(capacity: Int = 512) throws(BenchError) {
        fd = tdm_bare_epoll_create()
        guard fd >= 0 else { throw BenchError("epoll_create1 failed: \(String(cString: strerror(errno)))") }
        readyDescriptors = [Int32](repeating: -1, count: Swift.min(512, capacity))
        readyBits = [UInt32](repeating: 0, count: Swift.min(512, capacity))
    }

    deinit { close(fd) }

    static let readable = UInt32(TDM_BARE_READABLE)
    static let writable = UInt32(TDM_BARE_WRITABLE)

    func add(_ socket: Int32, _ mask: UInt32) {
        _ = tdm_bare_epoll_watch(fd, socket, mask, 0)
    }

    func modify(_ socket: Int32, _ mask: UInt32) {
        _ = tdm_bare_epoll_watch(fd, socket, mask, 1)
    }

    /// Waits up to `timeout` ms (-1: no limit) and returns how many events are ready (`event(at:)`).
    func wait(timeout: Int32) -> Int {
        let capacity = Int32(readyDescriptors.count)
        let count = readyDescriptors.withUnsafeMutableBufferPointer { fds in
            readyBits.withUnsafeMutableBufferPointer { bits in
                tdm_bare_epoll_wait(fd, fds.baseAddress, bits.baseAddress, capacity, timeout)
            }
        }
        return Int(Swift.max(0, count))
    }

    func event(at index: Int) -> (fd: Int32, mask: UInt32) {
        (readyDescriptors[index], readyBits[index])
    }
}

/// One bare connection's bytes: what has arrived and not yet made a whole frame, and what waits for the socket.
/// Frames are a 4-byte big-endian length and the payload.
final class BareConnection {
    let fd: Int32
    /// Bytes received that do not yet make a whole frame.
    var inbound: [UInt8] = []
    /// Bytes to write, from `written` on.
    var outbound: [UInt8] = []
    var written = 0
    /// Whether it is in this tick's list of connections to write.
    var dirty = false
    /// Whether epoll watches it for writability (the socket did not take everything).
    var waitingToWrite = false
    /// Whether the 4-byte header in front of the frames is still to come (a relay's side of a connection).
    private var awaitingHeader: Bool

    init(fd: Int32, expectsHeader: Bool) {
        self.fd = fd
        awaitingHeader = expectsHeader
    }

    /// The length the partial frame kept in `inbound` declares, once its 4 bytes have come.
    var partialFrameLength: Int? {
        guard !awaitingHeader, inbound.count >= 4 else { return nil }
        return Int(UInt32(bigEndian: inbound.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }))
    }

    /// Writes what is waiting (one system call); returns false when the connection failed.
    func flush(_ poll: BareEpoll) -> Bool {
        dirty = false
        let pending = outbound.count - written
        guard pending > 0 else { return true }
        let result = outbound.withUnsafeBytes { write(fd, $0.baseAddress! + written, pending) }
        if result < 0 && errno != EAGAIN && errno != EWOULDBLOCK { return false }
        written += Swift.max(0, result)
        if written == outbound.count {
            outbound.removeAll(keepingCapacity: true)
            written = 0
            if waitingToWrite {
                waitingToWrite = false
                poll.modify(fd, BareEpoll.readable)
            }
        } else if !waitingToWrite {
            waitingToWrite = true
            poll.modify(fd, BareEpoll.readable | BareEpoll.writable)
        }
        return true
    }

    /// Reads once (as an event loop does for a readable socket) into `scratch`, then calls `start` with the
    /// header when it is whole (if one is expected) and `frame` with each whole frame's payload, in order; keeps a
    /// partial frame for the next read. Returns false at the end of the stream or on an error.
    func read(into scratch: UnsafeMutableRawBufferPointer, frame: (UnsafeRawBufferPointer) -> Void,
              start: (UInt32) -> Void = { _ in }) -> Bool {
        let count = Glibc.read(fd, scratch.baseAddress!, scratch.count)
        if count == 0 { return false }
        if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK }
        let arrived = UnsafeRawBufferPointer(rebasing: scratch[0..<count])
        guard awaitingHeader || !inbound.isEmpty else {
            // The common case: whole frames straight from the read, only a trailing partial one kept.
            let used = Self.frames(in: arrived, frame)
            if used < count { inbound.append(contentsOf: arrived[used...]) }
            return true
        }
        inbound.append(contentsOf: arrived)
        if awaitingHeader {
            guard inbound.count >= 4 else { return true }
            awaitingHeader = false
            start(inbound.withUnsafeBytes { UInt32(bigEndian: $0.loadUnaligned(as: UInt32.self)) })
            inbound.removeFirst(4)
        }
        let used = inbound.withUnsafeBytes { Self.frames(in: $0, frame) }
        inbound.removeFirst(used)
        return true
    }

    /// Calls `frame` with each whole frame's payload in `bytes`; returns how many bytes they took.
    private static func frames(in bytes: UnsafeRawBufferPointer, _ frame: (UnsafeRawBufferPointer) -> Void) -> Int {
        var offset = 0
        while bytes.count - offset >= 4 {
            let length = Int(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            guard bytes.count - offset - 4 >= length else { break }
            frame(UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + 4 + length)]))
            offset += 4 + length
        }
        return offset
    }
}
