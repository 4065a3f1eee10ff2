/// Which copy of a timeline a peer acts on when the authority sends each one twice: in the reliable, ordered stream
/// and as a datagram beside it (which a loss or a busy stream does not hold back, but which may be lost, or overtake
/// what the stream sent before it).
///
/// A datagram copy is taken only when it is the very next generation after the last one this peer has, on the same
/// item: then nothing the stream sent between the two (an activity, a queue, an earlier timeline) can be missing.
/// Anything else waits for its stream copy. A stream copy is passed on unless a datagram copy of the same or a later
/// generation already was.
public struct TimelineCopies: Sendable {
    /// The latest generation passed on, and its item.
    public private(set) var latest: (generation: UInt64, itemID: String)?
    /// The highest generation passed on from a datagram copy.
    private var highestFromDatagram: UInt64?
    /// Datagram copies passed on (they came first), and those left for the stream (late, out of turn, other item).
    public private(set) var datagramsTaken = 0
    public private(set) var datagramsLeft = 0

    public init() {}

    /// A welcome (first or after a reconnect): its snapshot's timeline is where this peer stands.
    public mutating func reset(to timeline: Timeline?) {
        latest = timeline.map { ($0.generation, $0.itemID) }
        highestFromDatagram = nil
    }

    /// A timeline from the stream; true when it is to be passed on.
    public mutating func fromStream(_ timeline: Timeline) -> Bool {
        if let taken = highestFromDatagram, timeline.generation <= taken { return false }
        if latest.map({ timeline.generation > $0.generation }) ?? true {
            latest = (timeline.generation, timeline.itemID)
        }
        return true
    }

    /// A timeline from a datagram; true when it is to be passed on (its stream copy is then dropped).
    public mutating func fromDatagram(_ timeline: Timeline) -> Bool {
        guard let latest, timeline.generation == latest.generation &+ 1, timeline.itemID == latest.itemID else {
            datagramsLeft += 1
            return false
        }
        self.latest = (timeline.generation, timeline.itemID)
        highestFromDatagram = timeline.generation
        datagramsTaken += 1
        return true
    }
}
