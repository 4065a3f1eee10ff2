import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The floor under any relay on this machine: the least a relay can do for `tandem bench relay`'s load — read a
/// message, write it to the others of its session — with nothing but system calls. One thread, level-triggered
/// epoll, one `read` per readable socket, and each recipient written once per loop turn however many frames the
/// turn gave it (as Tandem's server flushes once per event-loop tick). No authentication, no authority, no clock
/// sync, no heartbeats.
///
/// Its CPU per delivery under the same load (`tandem bench relay --floor`) is what the kernel charges for a
/// delivery here — a `write` per recipient and, on loopback, the receiving side's TCP processing inside that
/// `write` — plus the read and the wake-ups it shares; Tandem's relay can only add to it.
///
/// Wire: a connection's first 4 bytes are its session's number (big-endian), then frames of a 4-byte big-endian
/// length and the payload, forwarded as they are.
package enum BareRelay {
    /// Longest frame forwarded; a longer length closes the connection.
    static let maxFrame = 65_536
    /// Bytes that may wait for one recipient's socket; beyond it the recipient is dropped.
    static let maxQueued = 1 << 20
    /// Sessions (their numbers run from 0); a connection naming a larger one is closed.
    static let maxSessions = 1 << 20

    /// Listens on 127.0.0.1 (any free port), prints `listening on 127.0.0.1:PORT` and relays until killed.
    package static func serve() throws(BenchError) -> Never {
        let (listener, port) = try BareSocket.listen()
        FileHandle.standardOutput.write(Data("listening on 127.0.0.1:\(port)\n".utf8))
        try run(listener: listener, stop: nil)
        exit(0)
    }

    /// Relays the connections `listener` accepts until `stop` (a descriptor, e.g. a pipe's end) becomes readable,
    /// then closes them all and `listener`.
    package static func run(listener: Int32, stop: Int32?) throws(BenchError) {
        let poll = try BareEpoll()
        poll.add(listener, BareEpoll.readable)
        if let stop { poll.add(stop, BareEpoll.readable) }
        let relay = Relay(poll: poll)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
        defer {
            scratch.deallocate()
            for case let connection? in relay.connections { close(connection.fd) }
            close(listener)
        }
        while true {
            let ready = poll.wait(timeout: -1)
            for index in 0..<ready {
                let (fd, mask) = poll.event(at: index)
                if fd == listener {
                    relay.accept(from: listener)
                } else if fd == stop {
                    return
                } else {
                    relay.handle(fd, mask: mask, scratch: scratch)
                }
            }
            relay.flushDirty()
        }
    }

    /// The relay's connections and sessions.
    private final class Relay {
        let poll: BareEpoll
        /// Connections by descriptor, and the session each named (-1: not yet).
        var connections: [BareConnection?] = []
        var sessionOf: [Int] = []
        var sessions: [Int: [BareConnection]] = [:]
        /// Connections written to this turn, to flush at its end.
        var dirty: [BareConnection] = []

        init(poll: BareEpoll) { self.poll = poll }

        func accept(from listener: Int32) {
            while true {
                let fd = Glibc.accept(listener, nil, nil)
                guard fd >= 0 else { return }
                BareSocket.prepare(fd)
                let slot = Int(fd)
                if connections.count <= slot {
                    connections.append(contentsOf: repeatElement(nil, count: slot + 1 - connections.count))
                    sessionOf.append(contentsOf: repeatElement(-1, count: slot + 1 - sessionOf.count))
                }
                connections[slot] = BareConnection(fd: fd, expectsHeader: true)
                sessionOf[slot] = -1
                poll.add(fd, BareEpoll.readable)
            }
        }

        func handle(_ fd: Int32, mask: UInt32, scratch: UnsafeMutableRawBufferPointer) {
            guard Int(fd) < connections.count, let connection = connections[Int(fd)] else { return }
            if mask & BareEpoll.writable != 0, !connection.flush(poll) {
                drop(connection)
                return
            }
            guard mask & ~BareEpoll.writable != 0 else { return }
            var session = sessionOf[Int(fd)]
            var valid = true
            let open = connection.read(into: scratch) { payload in
                guard valid else { return }
                guard payload.count <= BareRelay.maxFrame, session >= 0, let members = sessions[session] else {
                    valid = false
                    return
                }
                for member in members where member !== connection {
                    var length = UInt32(payload.count).bigEndian
                    withUnsafeBytes(of: &length) { member.outbound.append(contentsOf: $0) }
                    member.outbound.append(contentsOf: payload)
                    if !member.dirty {
                        member.dirty = true
                        dirty.append(member)
                    }
                }
            } start: { header in
                // The first 4 bytes name the session.
                let number = Int(header)
                guard number < BareRelay.maxSessions else {
                    valid = false
                    return
                }
                session = number
                sessionOf[Int(fd)] = number
                sessions[number, default: []].append(connection)
            }
            if !open || !valid || (connection.partialFrameLength ?? 0) > BareRelay.maxFrame { drop(connection) }
        }

        func flushDirty() {
            for connection in dirty where connection.dirty {
                if connection.outbound.count - connection.written > BareRelay.maxQueued || !connection.flush(poll) {
                    drop(connection)
                }
            }
            dirty.removeAll(keepingCapacity: true)
        }

        func drop(_ connection: BareConnection) {
            let slot = Int(connection.fd)
            guard slot < connections.count, connections[slot] === connection else { return }
            if sessionOf[slot] >= 0 { sessions[sessionOf[slot]]?.removeAll { $0 === connection } }
            connections[slot] = nil
            sessionOf[slot] = -1
            connection.dirty = false
            close(connection.fd)
        }
    }
}
