import Foundation
import Tandem

/// `position`: once a second, where this peer is and where it should be.
package struct PositionEvent: PeerEvent, Equatable {
    package static let name = "position"
    package var state: String
    /// Seconds of item time.
    @Nullable package var position: Double?
    /// Where the timeline says this peer should be (seconds).
    @Nullable package var expected: Double?
    @Nullable package var positionErrorMs: Double?
    @Nullable package var rate: Double?
    @Nullable package var generation: UInt64?
    @Nullable package var clockOffsetMs: Double?
    @Nullable package var errorBoundMs: Double?
    @Nullable package var roundTripMs: Double?
    /// `udp` or `tcp`: the path this peer's unreliable app messages take (`TandemClientConnection.unreliablePath`).
    @Nullable package var unreliablePath: String?
    /// While clock probes go as datagrams: where their answers' arrival times come from, `kernel` (the kernel's
    /// receive stamps) or `user` (the event loop's reading).
    @Nullable package var clockStamps: String?
    /// Likewise for their send times: `kernel` (both departures are the kernels' transmit stamps) or `user`.
    @Nullable package var clockSendStamps: String?
    /// While the item streams from the host's copy (`--share-media`): whom from, and the seconds fetched ahead.
    @Nullable package var streaming: Streaming?
    /// How far this peer's output is from the group's line as its render probe measures it (ms, positive ahead),
    /// as the others see it in `participants`.
    @Nullable package var renderOffsetMs: Double?
    /// How this process's sink threads were scheduled: `realtime`, `raised` or `ordinary`
    /// (`GStreamer.sinkThreadScheduling`).
    @Nullable package var sinkThreads: String?
    /// The participants this peer reaches without the server, with the one-way delay measured on each way, e.g.
    /// `cat 50.2 ms` (nil: none).
    @Nullable package var directPaths: String?

    package struct Streaming: Codable, Sendable, Equatable {
        package var from: String
        @Nullable package var bufferedSeconds: Double?

        package init(from: String, bufferedSeconds: Double?) {
            self.from = from
            self.bufferedSeconds = bufferedSeconds
        }
    }

    package init(state: String, position: Double?, expected: Double?, positionErrorMs: Double?, rate: Double?,
                 generation: UInt64?, clockOffsetMs: Double?, errorBoundMs: Double?, roundTripMs: Double?,
                 unreliablePath: String? = nil, renderOffsetMs: Double? = nil) {
        self.unreliablePath = unreliablePath
        self.renderOffsetMs = renderOffsetMs
        self.state = state
        self.position = position
        self.expected = expected
        self.positionErrorMs = positionErrorMs
        self.rate = rate
        self.generation = generation
        self.clockOffsetMs = clockOffsetMs
        self.errorBoundMs = errorBoundMs
        self.roundTripMs = roundTripMs
    }

    package init(_ status: PeerStatus) {
        self.init(state: PeerStatus.stateName(status.timeline), position: EventUnits.seconds(status.position),
                  expected: EventUnits.seconds(status.expected),
                  positionErrorMs: EventUnits.milliseconds(status.positionError), rate: status.timeline?.rate,
                  generation: status.timeline?.generation, clockOffsetMs: EventUnits.milliseconds(status.clockOffset),
                  errorBoundMs: EventUnits.milliseconds(status.errorBound),
                  roundTripMs: EventUnits.milliseconds(status.roundTrip),
                  unreliablePath: status.unreliablePath.map { if case .udp = $0 { "udp" } else { "tcp" } },
                  renderOffsetMs: EventUnits.milliseconds(status.renderOffset))
        clockStamps = status.clockStamps?.rawValue
        clockSendStamps = status.clockSendStamps?.rawValue
        sinkThreads = status.sinkThreads
        directPaths = status.directPaths
        streaming = status.streaming.map { Streaming(from: $0.from, bufferedSeconds: $0.buffered.map { ($0.seconds * 10).rounded() / 10 }) }
    }
}
