import Foundation
import Synchronization

/// Larger attachments (files, images) shared with the group, as SharePlay's journal: `add(_:)` shares bytes or a
/// Codable value, `attachments` streams the list, and `Attachment.load()` gets an attachment's bytes. Late joiners
/// see the existing ones. It receives while its owner runs `run()`; it starts no task of its own.
///
/// On a link that loads lazily (`TandemClient.Options.lazyAttachments`, as `GroupSession`s from `activate` and
/// `sessions(invites:)` do) an attachment arrives as an announcement and its bytes travel only when `load()` asks
/// for them; on other links they arrive with it and `load()` returns at once.
///
/// Bytes travel in chunks after a `begin` that announces size and SHA-256. TandemCore has no hash function of its
/// own: give the journal a `hasher` (TandemNet uses swift-crypto's SHA-256) and it computes the digest of what it
/// sends and checks what it receives; without one it trusts the transport, which verifies checksums itself.
///
/// When the link has a `payloadCipher`, an attachment travels sealed: its bytes as records of `chunkSize`-byte
/// plaintext pieces (`PayloadCipher.sealRecords`, each bound to the attachment's owner and id, its index and whether
/// it is the last), its name as a sealed box in base64 (bound to owner and id), and `begin` announces the
/// size and SHA-256 of the sealed stream, which is what the transport checks. Receivers open it after checking the
/// digest; `Attachment.info` then holds the plaintext name and size and the SHA-256 of the plaintext. An attachment
/// that does not open is dropped on that receiver, with a line in `failures`.
public final class GroupSessionJournal: Sendable {
    /// One complete attachment. Its bytes are fetched by `load()` (once; later calls return them at once).
    public struct Attachment: Sendable, Hashable, Identifiable {
        /// What the sender announced: id, owner, name, size. Before `load()` on a lazy link, a sealed attachment's
        /// `size` is its size on the wire (sealed) and `sha256` is empty; both are the plaintext's once loaded.
        public var info: AttachmentInfo { storage.info.withLock { $0 } }
        public var id: String { storage.id }
        let storage: Storage

        /// The bytes, fetched from the session if they are not here yet. Throws `JournalError` when the
        /// attachment was removed, failed its checks, or the session ended first.
        public func load() async throws -> Data {
            if let data = storage.data.withLock({ $0 }) { return data }
            return try await storage.fetch(id)
        }

        /// The value `add(_:)` shared, decoded; `load(Data.self)` gives the bytes of an attachment added as `Data`
        /// (SharePlay's shape). Throws `notAValue` when the attachment holds another type.
        public func load<Value: Decodable>(_ type: Value.Type) async throws -> Value {
            if Value.self == Data.self, isRawData, let data = try await load() as? Value { return data }
            guard holds(type) else { throw JournalError.notAValue(id: id, type: String(describing: type)) }
            return try JSONDecoder().decode(Value.self, from: try await load())
        }

        /// Whether the attachment is a value of this type shared with `add(_:)` (known without loading it); an
        /// attachment added as `Data` holds `Data`.
        public func holds<Value>(_ type: Value.Type) -> Bool {
            info.name == GroupSessionJournal.valueName(type) || (Value.self == Data.self && isRawData)
        }

        /// Added as bytes (`add(_ data: Data)`), not as an encoded value.
        private var isRawData: Bool { !info.name.hasPrefix(GroupSessionJournal.valuePrefix) }

        /// Whether the bytes are here (an eager link, or loaded).
        public var isLoaded: Bool { storage.data.withLock { $0 != nil } }

        /// The bytes if they are here, else empty.
        @available(*, deprecated, message: "attachments load lazily: use load()")
        public var data: Data { storage.data.withLock { $0 } ?? Data() }

        public static func == (a: Attachment, b: Attachment) -> Bool {
            a.info == b.info && a.storage.data.withLock { $0 } == b.storage.data.withLock { $0 }
        }
        public func hash(into hasher: inout Swift.Hasher) { hasher.combine(id) }
    }

    /// Where an attachment's bytes are, or how to get them.
    final class Storage: Sendable {
        let id: String
        let info: Mutex<AttachmentInfo>
        let data: Mutex<Data?>
        let fetch: @Sendable (String) async throws -> Data
        init(info: AttachmentInfo, data: Data?, fetch: @escaping @Sendable (String) async throws -> Data) {
            id = info.id
            self.info = Mutex(info)
            self.data = Mutex(data)
            self.fetch = fetch
        }
    }

    /// Why an attachment could not be added or loaded.
    public enum JournalError: Error, Sendable, Hashable, CustomStringConvertible {
        case tooLarge(size: Int, limit: Int)
        case sessionInvalidated(InvalidationReason)
        /// The attachment could not be loaded; the text says why (removed, damaged, the session ended).
        case unavailable(id: String, reason: String)
        /// `load(_:)` asked for a type the attachment does not hold.
        case notAValue(id: String, type: String)
        /// The value could not be encoded.
        case encodingFailed(String)
        public var description: String {
            switch self {
            case .tooLarge(let size, let limit):
                return "attachment of \(size) bytes is larger than the \(limit)-byte limit — share a link to it instead"
            case .sessionInvalidated(let reason): return "the session is over: \(reason.message)"
            case .unavailable(let id, let reason): return "attachment '\(id)' could not be loaded: \(reason)"
            case .notAValue(let id, let type): return "attachment '\(id)' does not hold a \(type)"
            case .encodingFailed(let why): return "the value could not be encoded: \(why)"
            }
        }
    }

    /// Lowercase hex SHA-256 of some bytes.
    public typealias Hasher = @Sendable (Data) -> String

    /// The name an attachment made by `add(_:)` from a value of type `Value` carries (sealed like any name).
    static let valuePrefix = "value:"
    static func valueName<Value>(_ type: Value.Type) -> String { valuePrefix + String(reflecting: type) }

    struct Incoming {
        var info: AttachmentInfo
        var data = Data()
    }

    struct State {
        var complete: [Attachment] = []
        var incoming: [String: Incoming] = [:]
        var failures: [String] = []
        var nextID = 1
        /// Loads waiting for an attachment's bytes, by id (one fetch per id is in flight).
        var waiters: [String: [CheckedContinuation<Data, any Error>]] = [:]
        var requested: Set<String> = []
        var ended: InvalidationReason?
    }

    let link: any SessionLink
    let hasher: Hasher?
    let cipher: (any PayloadCipher)?
    /// Largest attachment in bytes.
    public let maxSize: Int
    /// Bytes per chunk on the wire.
    public let chunkSize: Int
    let state = Mutex(State())
    let updates = FanOut<[Attachment]>(initial: [], replay: .latest)
    /// The link's messages, subscribed to on creation so that the replay of existing attachments is not missed;
    /// `run()` consumes them.
    private let upstream: Mutex<AsyncStream<ServerMessage>?>

    /// A journal over `link`. Create it early (right after joining), so the replay of existing attachments is seen,
    /// and `run()` it to receive attachments. Without a `hasher`, the link's own (`SessionLink.attachmentHasher`)
    /// is used.
    public init(link: any SessionLink, hasher: Hasher? = nil, maxSize: Int = 100_000_000, chunkSize: Int = 64 * 1024) {
        self.link = link
        self.hasher = hasher ?? link.attachmentHasher
        cipher = link.payloadCipher
        self.maxSize = maxSize
        self.chunkSize = chunkSize
        upstream = Mutex(link.serverMessages())
    }

    /// Receives what the others share and remove (checking and opening each attachment as it completes) until the
    /// link closes or the calling task is cancelled; then `attachments` streams end and loads still waiting fail.
    /// Run it for as long as the journal is in use, in a task its owner owns. Call it once.
    public func run() async {
        guard let upstream = upstream.withLock({ u in defer { u = nil }; return u }) else { return }
        for await message in upstream {
            if case .welcome(let snapshot) = message, let list = resync(to: snapshot) {
                updates.send(list)
            }
            guard case .journal(let entry) = message else { continue }
            if let list = apply(entry) { updates.send(list) }
        }
        let waiting = state.withLock { s in
            s.ended = InvalidationReason(code: .connectionLost, message: "the session is over")
            defer { s.waiters = [:] }
            return s.waiters
        }
        for (id, continuations) in waiting {
            for c in continuations { c.resume(throwing: JournalError.unavailable(id: id, reason: "the session is over")) }
        }
        updates.finish()
    }

    public convenience init<A>(session: GroupSession<A>, hasher: Hasher? = nil) {
        self.init(link: session.link, hasher: hasher)
    }

    /// The complete attachments now, then after every change (SharePlay's `attachments`).
    public var attachments: AsyncStream<[Attachment]> { updates.subscribe() }
    /// The complete attachments, in announcement order.
    public var currentAttachments: [Attachment] { state.withLock { $0.complete } }
    /// The attachments now, then after every change.
    @available(*, deprecated, renamed: "attachments")
    public var attachmentUpdates: AsyncStream<[Attachment]> { attachments }
    /// Why incoming attachments were dropped (bad checksum, failed upload), in arrival order.
    public var failures: [String] { state.withLock { $0.failures } }

    /// Shares `data` with everyone, now and later joiners (SharePlay's `add(_:)`); returns the attachment once sent.
    @discardableResult
    public func add(_ data: Data) async throws -> Attachment { try await add(data, label: "") }

    /// Shares a Codable value (JSON) with everyone; receivers `load(Value.self)` it, and `holds(Value.self)` tells
    /// them without loading it.
    @discardableResult
    public func add<Value: Codable & Sendable>(_ value: Value) async throws -> Attachment {
        let data: Data
        do { data = try JSONEncoder().encode(value) } catch { throw JournalError.encodingFailed("\(error)") }
        return try await add(data, label: Self.valueName(Value.self))
    }

    @available(*, deprecated, message: "use add(_:) (attachments no longer carry a name)")
    @discardableResult
    public func add(_ data: Data, name: String) async throws -> Attachment { try await add(data, label: name) }

    /// Removes an attachment for everyone.
    public func remove(_ attachment: Attachment) async throws {
        do { try await link.send(.journal(.remove(id: attachment.id))) } catch let reason as InvalidationReason {
            throw JournalError.sessionInvalidated(reason)
        }
        if let list = apply(.remove(id: attachment.id)) { updates.send(list) }
    }
}
