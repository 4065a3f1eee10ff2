import Foundation
import NIOCore
import NIOFoundationCompat
import Synchronization
import TandemCore

/// Why a range of the host's copy could not be read through the relay, in words that say what to do.
package enum RelayedMediaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The relay does not pass media (it runs without `--relay-media`).
    case relayRefuses(String)
    /// The relay or the host refused this request (busy, no such item, the host away…): the words say why.
    case refused(String)
    /// A chunk did not open as the range asked for: the relay (or something on the way) altered it.
    case altered
    /// No answer in time.
    case timedOut
    /// The connection to the session is closed.
    case closed

    package var description: String {
        switch self {
        case .relayRefuses(let why), .refused(let why): why
        case .altered: "a chunk of the host's copy arrived altered and was dropped: the relay may be tampering with it"
        case .timedOut: "the host's copy did not arrive in time through the relay"
        case .closed: "the connection to the session is closed"
        }
    }
}

/// A joiner's reads of the host's shared items through the relay: each read is one `mediaRequest` answered by one
/// sealed `mediaChunk`, opened here (`MediaChunkCipher`) against the range it asked for.
package final class RelayedMediaReader: Sendable {
    /// The largest range one request may ask for (the relay's `maxRequestBytes`).
    package static let maxRequest = 64 * 1024
    /// The range the player's reads are split into. Every piece shares the member's session link with its commands
    /// and clock probes, so what is in flight (this times the `MediaReadWindow`, for all the joiner's reads) is kept
    /// small: with 4 × 64 KiB per response a joiner behind a 500 kB/s link did not render for 10 s (each new range and
    /// each command waited behind half a second of older pieces, and every start was missed); behind 43 kB/s, 2 × 16
    /// KiB kept it out for 20 s and 2 × 8 KiB played in step (`tandem bench stream --relay`).
    package static let pieceSize = 8 * 1024
    /// How long a request may go unanswered here (the relay answers `timedOut` after its own 10 s).
    static let timeout = TimeAmount.seconds(15)

    private let connection: TandemClientConnection
    private let cipher: MediaChunkCipher
    /// A request on its way: what it asked for, when, and who waits for its answer (or the answer, when it came
    /// first). Each holds one place in the window, given back when it leaves `waiting`.
    private struct Waiting {
        var item: String
        var offset: Int64
        var length: Int
        var asked = ContinuousClock.now
        var continuation: CheckedContinuation<(Data, Int64), any Error>?
        var early: Result<(Data, Int64), any Error>?
        /// Its reader gave up; it keeps its place until it is answered or timed out (it is still on the link).
        var abandoned = false
    }
    private let waiting = Mutex<(next: UInt32, byID: [UInt32: Waiting])>((1, [:]))
    /// Requests on the wire at once, for every reader of this joiner together (the player's responses, the
    /// fingerprint's, ones the player gave up on that are still to arrive): `MediaReadWindow`, from 2 to the relay's
    /// 16 open per member; and the reads waiting for a place.
    private let places = Mutex<(window: MediaReadWindow, used: Int, queue: [CheckedContinuation<Void, Never>])>((MediaReadWindow(), 0, []))
    private let received = Atomic<Int>(0)

    package init(connection: TandemClientConnection) {
        self.connection = connection
        cipher = MediaChunkCipher(invite: connection.invite)
        connection.receiveMedia { [weak self] frame in
            guard frame.kind == .mediaChunk, let self, let chunk = try? MediaFrames.parseChunk(frame) else { return }
            self.arrived(chunk)
        }
    }

    /// Plain bytes read through the relay so far.
    package var bytesReceived: Int { received.load(ordering: .relaxed) }

    /// Up to `length` bytes (at most `maxRequest`) of `item` from `offset`, and the item's size.
    package func read(item: String, offset: Int64, length: Int) async throws(RelayedMediaError) -> (bytes: Data, itemSize: Int64) {
        let length = min(length, Self.maxRequest)
        await takePlace()
        let id = waiting.withLock { state in
            let id = state.next
            state.next &+= 1
            state.byID[id] = Waiting(item: item, offset: offset, length: length)
            return id
        }
        do {
            try await connection.sendMedia { allocator in
                try MediaFrames.encode(MediaFrames.Request(id: id, item: item, offset: offset, length: length),
                                       allocator: allocator)
            }
        } catch {
            // Never on the wire: its place goes back now.
            if waiting.withLock({ $0.byID.removeValue(forKey: id) }) != nil { givePlace(roundTrip: nil) }
            throw .closed
        }
        connection.channel.eventLoop.scheduleTask(in: Self.timeout) { [weak self] in
            self?.finish(id, .failure(RelayedMediaError.timedOut))
        }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, Int64), any Error>) in
                    var took = false
                    let ready: Result<(Data, Int64), any Error>? = waiting.withLock { state in
                        guard var request = state.byID[id], !request.abandoned else { return .failure(RelayedMediaError.closed) }
                        if let early = request.early {
                            state.byID[id] = nil
                            took = true
                            return early
                        }
                        request.continuation = continuation
                        state.byID[id] = request
                        return nil
                    }
                    if took { givePlace(roundTrip: nil) }
                    if let ready { continuation.resume(with: ready) }
                }
            } onCancel: {
                abandon(id)
            }
        } catch {
            throw (error as? RelayedMediaError) ?? .closed
        }
    }

    /// The reader of request `id` gave up (the player closed its response): it is answered `closed` now, and the
    /// request keeps its place in the window until its chunk arrives or its time is up.
    private func abandon(_ id: UInt32) {
        var freed = false
        let continuation: CheckedContinuation<(Data, Int64), any Error>? = waiting.withLock { state in
            guard var request = state.byID[id] else { return nil }
            if request.early != nil {
                // Answered already, and nobody will take it.
                state.byID[id] = nil
                freed = true
                return nil
            }
            request.abandoned = true
            let continuation = request.continuation
            request.continuation = nil
            state.byID[id] = request
            return continuation
        }
        if freed { givePlace(roundTrip: nil) }
        continuation?.resume(throwing: RelayedMediaError.closed)
    }

    /// Waits for one of the window's places (in order of asking).
    private func takePlace() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = places.withLock { places in
                guard places.used < places.window.limit else {
                    places.queue.append(continuation)
                    return false
                }
                places.used += 1
                return true
            }
            if now { continuation.resume() }
        }
    }

    /// Gives a place back (with the round trip of a piece that came, which moves the window), to the reads waiting
    /// for one as the window allows.
    private func givePlace(roundTrip: Duration?) {
        let next: [CheckedContinuation<Void, Never>] = places.withLock { places in
            if let roundTrip { places.window.completed(roundTrip: TimeSpan(roundTrip)) }
            places.used -= 1
            var next: [CheckedContinuation<Void, Never>] = []
            while places.used < places.window.limit, !places.queue.isEmpty {
                places.used += 1
                next.append(places.queue.removeFirst())
            }
            return next
        }
        for continuation in next { continuation.resume() }
    }

    private func arrived(_ chunk: MediaFrames.Chunk) {
        guard let request = waiting.withLock({ $0.byID[chunk.id] }) else { return }
        switch chunk.status {
        case .ok:
            let expected = Int(max(0, min(Int64(request.length), chunk.itemSize - request.offset)))
            let box = chunk.payload.readableBytesView
            guard let bytes = try? cipher.open(box, item: request.item, offset: request.offset, length: expected,
                                               itemSize: chunk.itemSize) else {
                return finish(chunk.id, .failure(RelayedMediaError.altered))
            }
            received.add(bytes.count, ordering: .relaxed)
            finish(chunk.id, .success((bytes, chunk.itemSize)))
        case .relayRefuses:
            finish(chunk.id, .failure(RelayedMediaError.relayRefuses(chunk.reason)))
        default:
            finish(chunk.id, .failure(RelayedMediaError.refused(chunk.reason)))
        }
    }

    /// Hands `result` to whoever waits for request `id`, or keeps it for the one about to wait; a request that
    /// leaves gives its place back (with its round trip, when it brought bytes).
    private func finish(_ id: UInt32, _ result: Result<(Data, Int64), any Error>) {
        var freed: (Bool, Duration?) = (false, nil)
        let continuation: CheckedContinuation<(Data, Int64), any Error>? = waiting.withLock { state in
            guard var request = state.byID[id] else { return nil }
            if request.abandoned {
                state.byID[id] = nil
                freed = (true, nil)
                return nil
            }
            guard let continuation = request.continuation else {
                if request.early == nil { request.early = result }
                state.byID[id] = request
                return nil
            }
            state.byID[id] = nil
            if case .success = result { freed = (true, ContinuousClock.now - request.asked) } else { freed = (true, nil) }
            return continuation
        }
        if freed.0 { givePlace(roundTrip: freed.1) }
        continuation?.resume(with: result)
    }
}
