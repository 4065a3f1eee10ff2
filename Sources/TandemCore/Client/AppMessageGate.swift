import Synchronization

/// The sender's side of the app-message rules, decided once per message by whatever builds it (a
/// `GroupSessionMessenger`, or a transport's own raw send): the size limit on the plaintext payload, a token-bucket
/// rate limit, and the per-sender sequence number. A `SessionLink` passes on what was admitted as it is; the
/// authority enforces its own limits independently, as the security boundary this is not.
package final class AppMessageGate: Sendable {
    /// Why a message was not admitted.
    package enum Refusal: Error, Sendable, Hashable {
        /// The plaintext payload is larger than `limit` bytes.
        case tooLarge(size: Int, limit: Int)
        /// No token left; one is back after `retryAfter` ns.
        case rateLimited(retryAfter: TimeSpan)
    }

    private struct Bucket {
        var tokens: Double
        var updatedAt: LocalInstant?
        var sequence: UInt64 = 0
    }

    /// Largest plaintext payload in bytes.
    package let maxSize: Int
    /// Sustained messages per second.
    package let messagesPerSecond: Int
    /// Messages allowed at once above the sustained rate.
    package let burst: Int
    private let clock: any MonotonicClock
    private let bucket: Mutex<Bucket>

    /// `clock` paces the rate limit.
    package init(maxSize: Int, messagesPerSecond: Int, burst: Int, clock: any MonotonicClock) {
        self.maxSize = maxSize
        self.messagesPerSecond = messagesPerSecond
        self.burst = burst
        self.clock = clock
        bucket = Mutex(Bucket(tokens: Double(burst)))
    }

    /// Checks a payload of `size` plaintext bytes against the limits and, when it passes, spends a token and
    /// returns its sequence number.
    package func admit(size: Int) throws(Refusal) -> UInt64 {
        guard size <= maxSize else { throw .tooLarge(size: size, limit: maxSize) }
        let now = clock.now
        let rate = Double(max(1, messagesPerSecond))
        let capacity = Double(burst)
        let outcome = bucket.withLock { b -> Result<UInt64, Refusal> in
            if let last = b.updatedAt {
                b.tokens = min(capacity, b.tokens + max(.zero, now - last).seconds * rate)
            }
            b.updatedAt = now
            guard b.tokens >= 1 else {
                return .failure(.rateLimited(retryAfter: TimeSpan(nanoseconds: Int64(((1 - b.tokens) / rate * 1e9).rounded(.up)))))
            }
            b.tokens -= 1
            b.sequence += 1
            return .success(b.sequence)
        }
        return try outcome.get()
    }

    /// The next sequence number, outside the limits: for senders that pace themselves (load generators).
    package func nextSequence() -> UInt64 {
        bucket.withLock { b in
            b.sequence += 1
            return b.sequence
        }
    }
}
