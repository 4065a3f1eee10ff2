import Foundation

/// How many of a joiner's reads of the host's copy may be on its session link at once, through a relay. The pieces
/// share the link with the session's commands and clock probes, so what waits in the network's queues ahead of a
/// command must stay short, while a long round trip needs several pieces in flight to keep up with the media.
/// Delay-based, as LEDBAT is: the window grows by one for each piece that comes back within `queueTarget` of the
/// fastest round trip seen (the path's own delay), and halves when one takes longer (the pieces are queueing).
package struct MediaReadWindow: Sendable, Equatable {
    package let least: Int
    package let most: Int
    /// How much longer than the fastest round trip a piece may take before the window shrinks.
    package let queueTarget: TimeSpan
    package private(set) var limit: Int
    package private(set) var fastest: TimeSpan?

    package init(least: Int = 2, most: Int = 16, queueTarget: TimeSpan = .milliseconds(40)) {
        self.least = least
        self.most = most
        self.queueTarget = queueTarget
        limit = least
    }

    /// A piece came back `roundTrip` after it was asked for.
    package mutating func completed(roundTrip: TimeSpan) {
        let fastest = min(self.fastest ?? roundTrip, roundTrip)
        self.fastest = fastest
        limit = roundTrip <= fastest + queueTarget ? min(most, limit + 1) : max(least, limit / 2)
    }
}
