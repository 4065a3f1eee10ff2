import Foundation
import TandemCore
#if canImport(Glibc)
import Glibc
#endif

/// A slow, distant link between one peer and the session port, in this process: a TCP proxy on 127.0.0.1 that
/// forwards each connection to `127.0.0.1:upstream`, every byte arriving `delay` after it left and the bytes of all
/// connections in one direction sharing `bytesPerSecond` (a bottleneck link: what one connection takes, the others
/// wait for). There is no netem on the machines the benchmarks run on, so the link is built here.
///
/// A direction reads from its source only as fast as the link drains, so a faster sender is held back by TCP's
/// own flow control, as behind a real bottleneck; in flight at once are at most `bytesPerSecond × delay` bytes.
/// Blocking sockets, two threads a direction: nothing here runs on Swift's cooperative pool.
package final class ThrottledLink: @unchecked Sendable {
    // Safe: `lock` guards `connections`, `closed` and the counters; the rest is set once in `init`.
    package let port: Int
    package let delay: Duration
    private let listener: Int32
    private let upstream: Int
    private let down: Bottleneck
    private let up: Bottleneck
    private let lock = NSLock()
    private var connections: [Int32] = []
    private var closed = false
    private var fetched: Int64 = 0
    private var total: Int64 = 0

    /// Listens on 127.0.0.1 (a free port) for connections to forward to `127.0.0.1:upstream`.
    package init(upstream: Int, bytesPerSecond: Int, delay: Duration) throws(BenchError) {
        guard bytesPerSecond > 0 else { throw BenchError("a link needs a bandwidth above 0") }
        self.upstream = upstream
        self.delay = delay
        down = Bottleneck(bytesPerSecond: bytesPerSecond)
        up = Bottleneck(bytesPerSecond: bytesPerSecond)
        (listener, port) = try Self.listen()
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "tandem-link-accept"
        thread.start()
    }

    /// The link's bandwidth each way now.
    package var bytesPerSecond: Int { down.bytesPerSecond }

    /// Changes the bandwidth each way from now on (a link that gets slower or faster).
    package func setBytesPerSecond(_ rate: Int) {
        down.bytesPerSecond = max(1, rate)
        up.bytesPerSecond = max(1, rate)
    }

    /// Bytes the far end sent back on HTTP requests (media fetched) and on every connection, so far.
    package var bytesFetched: Int64 { lock.withLock { fetched } }
    package var bytesDown: Int64 { lock.withLock { total } }

    /// Stops accepting and cuts every connection.
    package func close() {
        let open: [Int32] = lock.withLock {
            closed = true
            return connections
        }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        for fd in open { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            guard let server = try? Self.connect(port: upstream) else {
                Glibc.close(client)
                continue
            }
            let keep = lock.withLock {
                guard !closed else { return false }
                connections += [client, server]
                return true
            }
            guard keep else {
                Glibc.close(client)
                Glibc.close(server)
                continue
            }
            let connection = Connection(client: client, server: server) { [self] in
                lock.withLock { connections.removeAll { $0 == client || $0 == server } }
            }
            let isHTTP = Locked(false)
            Direction(from: client, to: server, link: up, delay: delay, connection: connection) { bytes, first in
                if first { isHTTP.withLock { $0 = bytes.starts(with: Array("GET ".utf8)) || bytes.starts(with: Array("HEAD ".utf8)) } }
            }.start()
            Direction(from: server, to: client, link: down, delay: delay, connection: connection) { [self] bytes, _ in
                let media = isHTTP.value
                lock.withLock {
                    total += Int64(bytes.count)
                    if media { fetched += Int64(bytes.count) }
                }
            }.start()
        }
    }

    /// One direction of the link: when the next bytes may leave, shared by every connection.
    final class Bottleneck: @unchecked Sendable {
        // Safe: `lock` guards `nextFree` and `rate`.
        private let lock = NSLock()
        private var nextFree = ContinuousClock.now
        private var rate: Int

        init(bytesPerSecond: Int) { rate = bytesPerSecond }

        var bytesPerSecond: Int {
            get { lock.withLock { rate } }
            set { lock.withLock { rate = newValue } }
        }

        /// Takes the link for `count` bytes; returns when they have left (gone through the bottleneck).
        func reserve(_ count: Int) -> ContinuousClock.Instant {
            lock.withLock {
                let start = max(nextFree, .now)
                nextFree = start + .nanoseconds(Int64(Double(count) / Double(rate) * 1e9))
                return nextFree
            }
        }

        /// How many bytes to read at a time: about 10 ms of the link (at its first rate), 512 bytes to 16 KiB.
        var slice: Int { min(16 * 1024, max(512, bytesPerSecond / 100)) }
    }

    /// Both directions of one proxied connection; the sockets close when both have ended.
    final class Connection: @unchecked Sendable {
        // Safe: `lock` guards `ended`.
        let client: Int32
        let server: Int32
        private let lock = NSLock()
        private var ended = 0
        private let onClose: @Sendable () -> Void

        init(client: Int32, server: Int32, onClose: @escaping @Sendable () -> Void) {
            self.client = client
            self.server = server
            self.onClose = onClose
        }

        /// One direction is done; the second closes both sockets.
        func end() {
            let last = lock.withLock {
                ended += 1
                return ended == 2
            }
            guard last else { return }
            onClose()
            Glibc.close(client)
            Glibc.close(server)
        }

        /// A failure on either side ends both directions.
        func cut() {
            Glibc.shutdown(client, Int32(SHUT_RDWR))
            Glibc.shutdown(server, Int32(SHUT_RDWR))
        }
    }

    /// Reads from `from` at the link's pace and writes to `to` `delay` later.
    final class Direction: @unchecked Sendable {
        // Safe: `condition` guards `queue` and `finished`; the rest is set once.
        let from: Int32
        let to: Int32
        let link: Bottleneck
        let delay: Duration
        let connection: Connection
        let observe: @Sendable ([UInt8], Bool) -> Void
        private let condition = NSCondition()
        private var queue: [(due: ContinuousClock.Instant, bytes: [UInt8])] = []
        private var finished = false

        init(from: Int32, to: Int32, link: Bottleneck, delay: Duration, connection: Connection,
             observe: @escaping @Sendable ([UInt8], Bool) -> Void) {
            self.from = from
            self.to = to
            self.link = link
            self.delay = delay
            self.connection = connection
            self.observe = observe
        }

        func start() {
            let reader = Thread { [self] in read() }
            reader.name = "tandem-link-read"
            reader.start()
            let writer = Thread { [self] in write() }
            writer.name = "tandem-link-write"
            writer.start()
        }

        private func read() {
            var buffer = [UInt8](repeating: 0, count: link.slice)
            var first = true
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(from, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                let bytes = Array(buffer[0..<count])
                observe(bytes, first)
                first = false
                let left = link.reserve(count)
                let now = ContinuousClock.now
                if left > now { Thread.sleep(forTimeInterval: Double((left - now) / .nanoseconds(1)) / 1e9) }
                condition.withLock {
                    queue.append((left + delay, bytes))
                    condition.signal()
                }
            }
            condition.withLock {
                finished = true
                condition.signal()
            }
        }

        private func write() {
            var failed = false
            while true {
                let next: (due: ContinuousClock.Instant, bytes: [UInt8])? = condition.withLock {
                    while queue.isEmpty, !finished { condition.wait() }
                    return queue.isEmpty ? nil : queue.removeFirst()
                }
                guard let next else { break }
                let now = ContinuousClock.now
                if next.due > now { Thread.sleep(forTimeInterval: Double((next.due - now) / .nanoseconds(1)) / 1e9) }
                if !failed, !Self.writeAll(next.bytes, to: to) {
                    failed = true
                    connection.cut()
                }
            }
            Glibc.shutdown(to, Int32(SHUT_WR))
            connection.end()
        }

        private static func writeAll(_ bytes: [UInt8], to fd: Int32) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }

    // MARK: Sockets

    private static func listen() throws(BenchError) -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket() failed: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw BenchError("cannot listen on 127.0.0.1 for the link: \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        var actual = sockaddr_in()
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: actual.sin_port)))
    }

    private static func connect(port: Int) throws(BenchError) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket() failed: \(String(cString: strerror(errno)))") }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw BenchError("cannot connect to 127.0.0.1:\(port)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }
}
