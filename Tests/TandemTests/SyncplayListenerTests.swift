import Foundation
import Synchronization
import Testing
import TandemCore
import TandemSyncplay
#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP client on loopback that writes raw bytes and reads lines (bounded waits).
final class RawSyncplaySocket {
    let fd: Int32
    private var pending = [UInt8]()

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { close(fd); throw SyncplayProtocolError("cannot connect to 127.0.0.1:\(port)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func write(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    /// Lines received within `seconds`, until the peer closes (`closed` true) or the time is up.
    func read(for seconds: Double, until done: ([String]) -> Bool = { _ in false }) -> (lines: [String], closed: Bool) {
        var lines: [String] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return (lines, true) }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                return (lines, true)
            }
            pending += buffer[0..<n]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: pending[..<newline], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
                pending.removeSubrange(...newline)
            }
            if done(lines) { return (lines, false) }
        }
        return (lines, false)
    }
}

/// A value shared with escaping closures.
final class SharedBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<T: Sendable>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}

@Suite("Syncplay listener on loopback", .serialized)
struct SyncplayListenerTests {
    static let secret = "k3Jb-secret"
    static let room = SyncplayRoomPlaystate(position: 12, paused: true, setBy: "ann")

    static func hello(_ name: String, room: String = "s1", password: String = secret) -> String {
        #"{"Hello":{"username":"\#(name)","password":"\#(SyncplayClientState.Configuration.passwordHash(password))","room":{"name":"\#(room)"},"version":"1.2.255","realversion":"1.6.9"}}"# + "\r\n"
    }

    static func start(_ configure: (inout SyncplayListener.Configuration) -> Void = { _ in }) async throws
        -> (SyncplayListener, SharedBox<[SyncplayGuest]>) {
        let guests = SharedBox<[SyncplayGuest]>([])
        var configuration = SyncplayListener.Configuration()
        configure(&configuration)
        let listener = try await SyncplayListener.start(host: "127.0.0.1", port: 0, configuration: configuration) { room, password, name in
            room == "s1" && SyncplayServerState.passwordMatches(password, secret: secret)
                ? .admit(username: name, members: [:]) : .refuse("wrong room or password")
        } welcomed: { guest in
            guest.followRoom { room }
            guests.withLock { $0.append(guest) }
        }
        return (listener, guests)
    }

    @Test("a Syncplay client is welcomed, gets heartbeats with the room's state, and answers them")
    func welcomeAndHeartbeats() async throws {
        let (listener, guests) = try await Self.start()
        let playstate = SharedBox(SyncplayLocalPlaystate(position: 0, paused: true))
        let client = try await SyncplayConnection.connect(
            host: "127.0.0.1", port: listener.port,
            configuration: .init(username: "ann", room: "s1", passwordMD5: SyncplayClientState.Configuration.passwordHash(Self.secret),
                                 file: SyncplayFile(name: "movie.webm", duration: 92, size: .number(1)))) { playstate.withLock { $0 } }
        var heard: [SyncplayClientState.Event] = []
        let deadline = Date().addingTimeInterval(10)
        for await event in client.events {
            heard.append(event)
            if case .roomState(true, let position, _, "ann") = event, abs(position - 12) < 0.01 { break }
            if Date() > deadline { break }
        }
        #expect(heard.contains { if case .welcomed("ann", "s1", _) = $0 { true } else { false } }, "\(heard)")
        #expect(heard.contains { if case .usersListed(let users) = $0 { users["ann"] != nil } else { false } }, "\(heard)")
        #expect(heard.contains { if case .roomState(true, _, _, _) = $0 { true } else { false } }, "\(heard)")
        // The guest heard its file, and measured a round trip from the answers.
        let guest = try #require(guests.withLock { $0.first })
        for _ in 0..<60 where guest.averageRTT == 0 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(guest.averageRTT > 0 && guest.averageRTT < 0.5)
        #expect(guest.username == "ann" && guest.room == "s1")
        await client.close()
        await listener.close()
    }

    @Test("wrong password, wrong room, bad input, an oversized line and a flood: an Error and a drop, others unaffected")
    func badInputDropsOnlyTheSender() async throws {
        let (listener, _) = try await Self.start()
        let good = try RawSyncplaySocket(port: listener.port)
        good.write(Self.hello("ann"))
        let welcome = good.read(for: 5) { $0.contains { $0.contains("\"Hello\"") } }
        #expect(welcome.lines.contains { $0.contains("\"Hello\"") && $0.contains("\"ann\"") }, "\(welcome.lines)")

        let cases: [(String, String)] = [
            (Self.hello("eve", password: "guess"), "wrong room or password"),
            (Self.hello("eve", room: "s2"), "wrong room or password"),
            ("this is not json\r\n", "not JSON"),
            (#"{"Dance":{"now":true}}"# + "\r\n", "unknown command"),
            (String(repeating: "x", count: 20_000), "longer than"),
            (Self.hello("eve") + String(repeating: #"{"List":null}"# + "\r\n", count: 300), "too many messages"),
        ]
        for (input, error) in cases {
            let bad = try RawSyncplaySocket(port: listener.port)
            bad.write(input)
            let answer = bad.read(for: 5)
            #expect(answer.closed, "not dropped after \(input.prefix(40))")
            #expect(answer.lines.contains { $0.hasPrefix(#"{"Error""#) && $0.contains(error) }, "\(answer.lines.suffix(2))")
        }
        // The well-behaved client still gets its heartbeats and answers to List.
        good.write(#"{"List":null}"# + "\r\n")
        let after = good.read(for: 5) { lines in lines.contains { $0.contains("\"List\"") } && lines.contains { $0.contains("\"State\"") } }
        #expect(!after.closed && after.lines.contains { $0.contains("\"List\"") }, "\(after.lines)")
        #expect(listener.connectionCount == 1)
        await listener.close()
    }

    @Test("connections are bounded per address and in all; a silent client is dropped after the silence allowed")
    func connectionBoundsAndSilence() async throws {
        // 12.5 s by default, as Syncplay servers (checked on the manual clock in SyncplayServerStateTests); 3 s here.
        let (listener, _) = try await Self.start {
            $0.maxConnectionsPerAddress = 2
            $0.limits.silence = .seconds(3)
        }
        let first = try RawSyncplaySocket(port: listener.port)
        let second = try RawSyncplaySocket(port: listener.port)
        let third = try RawSyncplaySocket(port: listener.port)
        let refused = third.read(for: 5)
        #expect(refused.closed && refused.lines.first?.contains("from your address") == true, "\(refused.lines)")
        for _ in 0..<50 where listener.connectionCount != 2 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(listener.connectionCount == 2)
        // The first two never say anything: both are dropped with an Error after 3 s (bounded wait: 20 s).
        let silent = first.read(for: 20) { _ in false }
        #expect(silent.closed && silent.lines.contains { $0.contains("nothing heard") }, "\(silent.lines)")
        #expect(second.read(for: 5).closed)
        for _ in 0..<50 where listener.connectionCount != 0 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(listener.connectionCount == 0)
        await listener.close()
    }
}
