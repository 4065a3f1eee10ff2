import Tandem
import TandemPeer

/// The correction rules other open watch-together systems publish, as pure functions of what a peer knows, so
/// they can be checked on their own. Only the rules are re-implemented — not those systems' code, players or
/// servers — and only to measure Tandem against them on the same machine, network and players.
package enum BaselineRules {
    /// Syncplay: no clock sync; the server's position is forwarded by half the smoothed round trip; a client
    /// that is ahead slows to 0.95× beyond 1.5 s and seeks back beyond 4 s.
    package enum Syncplay {
        package static let slowdownThreshold: Int64 = 1_500_000_000
        package static let slowdownResetThreshold: Int64 = 100_000_000
        package static let rewindThreshold: Int64 = 4_000_000_000
        package static let slowdownRate = 0.95
        /// Weight of a new round-trip sample in the smoothed round trip.
        package static let smoothing = 0.25

        package enum Correction: Equatable, Sendable {
            case none
            case slowDown
            case resetSpeed
            case seek(to: Int64)
        }

        /// The smoothed round trip after one more sample.
        package static func smoothedRoundTrip(_ previous: Double?, sample: Int64) -> Double {
            guard let previous else { return Double(sample) }
            return previous * (1 - smoothing) + Double(sample) * smoothing
        }

        /// The server's position as this client believes it now: the position the server stamped when it sent its
        /// last state (`serverPosition`), forwarded by half the smoothed round trip and the local time since.
        package static func globalPosition(serverPosition: Int64, rate: Double, smoothedRoundTrip: Double,
                                   sinceArrival: Int64) -> Int64 {
            serverPosition + Int64((rate * (smoothedRoundTrip / 2 + Double(sinceArrival))).rounded())
        }

        /// What to do when this client's position is `position` and the group's is `global`.
        package static func correction(position: Int64, global: Int64, slowedDown: Bool) -> Correction {
            let ahead = position - global
            if ahead > rewindThreshold { return .seek(to: global) }
            if ahead > slowdownThreshold, !slowedDown { return .slowDown }
            if slowedDown, ahead < slowdownResetThreshold { return .resetSpeed }
            return .none
        }
    }

    /// Jellyfin SyncPlay: time sync from the minimum-delay sample of the last 8 pings (offset only, no drift);
    /// commands scheduled at server time now + max(2 × ping, 500 ms); speed correction from 60 ms, a skip from
    /// 400 ms.
    package enum Jellyfin {
        package static let samples = 8
        package static let minimumLead: Int64 = 500_000_000
        package static let speedThreshold: Int64 = 60_000_000
        package static let skipThreshold: Int64 = 400_000_000
        /// How long a speed correction lasts (and so how fast it catches up).
        package static let speedDuration: Int64 = 1_000_000_000
        package static let cooldown: Int64 = 1_000_000_000

        package enum Correction: Equatable, Sendable {
            case none
            /// Play at this speed factor for `speedDuration`.
            case speed(Double)
            case skip(to: Int64)
        }

        /// Offset (session − local) from the sample with the smallest round trip among the last eight.
        package static func offset(_ window: [ClockSample]) -> Int64? {
            window.suffix(samples).min { $0.roundTrip < $1.roundTrip }?.offset.nanoseconds
        }

        /// The lead the server gives a command: max(2 × ping, 500 ms).
        package static func lead(ping: Int64) -> Int64 { max(2 * ping, minimumLead) }

        /// What to do when this client renders `position` and the group should be at `expected`.
        package static func correction(position: Int64, expected: Int64) -> Correction {
            let behind = expected - position
            if abs(behind) >= skipThreshold { return .skip(to: expected) }
            if abs(behind) >= speedThreshold { return .speed(1 + Double(behind) / Double(speedDuration)) }
            return .none
        }
    }
}
