import Foundation
import NIOCore
import Synchronization

/// The host's side of its shared items through a relay (`host --share-media` on `tandem serve --relay-media`):
/// answers each `mediaRequest` the relay passes it with the range read from the file offered under that item
/// (`SharedMedia`, the bookkeeping the embedded server uses), sealed (`MediaChunkCipher`), to the requester alone.
///
/// Bounded on this side too: at most `maxPending` requests wait for the disk at once (more are answered `busy`),
/// and a request for more than `maxRequestBytes` is refused, so a relay cannot make the host read or hold more.
/// Reads run on a queue of their own, one at a time, never on an event loop or the cooperative pool.
package final class RelayedMediaHost: Sendable {
    package static let maxRequestBytes = 256 * 1024
    package static let maxPending = 64

    private let connection: TandemClientConnection
    private let offers: SharedMedia
    private let cipher: MediaChunkCipher
    private let queue = DispatchQueue(label: "tandem.relayed-media.host")
    private let pending = Atomic<Int>(0)
    /// Ranges answered and bytes read so far.
    private let answered = Atomic<Int>(0)

    /// Answers the requests that reach `connection` (the host's link to the relay) from what `offers` holds for
    /// the connection's session.
    package init(connection: TandemClientConnection, offers: SharedMedia) {
        self.connection = connection
        self.offers = offers
        cipher = MediaChunkCipher(invite: connection.invite)
        connection.receiveMedia { [weak self] frame in
            guard frame.kind == .mediaRequest, let self, let request = try? MediaFrames.parseRequest(frame) else { return }
            self.accept(request)
        }
    }

    /// How many requests this host answered with bytes.
    package var rangesAnswered: Int { answered.load(ordering: .relaxed) }

    private func accept(_ request: MediaFrames.Request) {
        guard request.length > 0, request.length <= Self.maxRequestBytes else {
            return answer(request, .badRequest, "a request for 1 to \(Self.maxRequestBytes) bytes")
        }
        guard pending.add(1, ordering: .relaxed).newValue <= Self.maxPending else {
            pending.subtract(1, ordering: .relaxed)
            return answer(request, .busy, "the host has too many requests waiting; ask again")
        }
        queue.async {
            defer { self.pending.subtract(1, ordering: .relaxed) }
            self.read(request)
        }
    }

    private func read(_ request: MediaFrames.Request) {
        guard let path = offers.path(session: cipher.session, item: request.item) else {
            return answer(request, .notOffered, "the host does not share this item (any more)")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return answer(request, .unreadable, "the host cannot read its copy")
        }
        defer { try? handle.close() }
        do {
            let size = Int64(try handle.seekToEnd())
            guard request.offset < size else {
                return answer(request, .badRequest, "the item has \(size) bytes; the request starts beyond its end")
            }
            try handle.seek(toOffset: UInt64(request.offset))
            let count = Int(min(Int64(request.length), size - request.offset))
            let bytes = try handle.read(upToCount: count) ?? Data()
            let box = try cipher.seal(bytes, item: request.item, offset: request.offset, itemSize: size)
            answered.add(1, ordering: .relaxed)
            send { allocator in
                try MediaFrames.encodeChunk(id: request.id, status: .ok, peer: request.peer, itemSize: size,
                                            payloadCount: box.count, allocator: allocator) { $0.writeBytes(box) }
            }
        } catch {
            answer(request, .unreadable, "the host cannot read its copy")
        }
    }

    private func answer(_ request: MediaFrames.Request, _ status: MediaFrames.Status, _ reason: String) {
        send { try MediaFrames.refusal(id: request.id, status: status, peer: request.peer, reason: reason, allocator: $0) }
    }

    private func send(_ build: (ByteBufferAllocator) throws -> Frame) {
        connection.sendMediaNow(build)
    }
}
