/// A receiver's record of where each sender's app messages stand, lane by lane (`AppMessageLane`): it admits a
/// message that opened in its place only when it is new, and says which gaps nothing explains. A pure value; the
/// link that opens messages keeps one.
///
/// - The first message of a sender in a lane is the baseline (a late joiner starts wherever the sender is).
/// - A sequence at or below the highest admitted is never shown again: one seen already (a 64-wide window, or older
///   than it) is `replayed`, one skipped earlier is `reordered` — or `late` in the unreliable lane, where the
///   network reorders on its own.
/// - A jump ahead is admitted. In the `everyone` lane the messages it skips are `missing`, unless this receiver's
///   link came back meanwhile (`resumed()`: what was sent while it was away never reached it). In the `some` lane
///   messages to others leave gaps, and in the unreliable lane anything may be lost, so gaps there are expected.
/// - A message of another epoch than the sender's current one means the sender's link was established anew (a
///   reconnect, or a new connection object taking its identity back with its token): that epoch starts a new
///   baseline, whatever its numbers (what the dead connection had not written is lost, and a new object counts
///   from 1 again). An epoch the sender has left behind never comes back: its messages are `replayed` (`late` in
///   the unreliable lane).
public struct AppMessageOrder: Sendable {
    /// What becomes of one message.
    public enum Verdict: Sendable, Hashable {
        /// Shown; `missing` messages to everyone before it never arrived and nothing explains why.
        case admitted(missing: UInt64)
        /// Seen already (or older than the window): a copy.
        case replayed
        /// Older than one admitted already, not seen before: reliable messages arrive in order, so it was moved.
        case reordered
        /// An unreliable message older than one admitted already.
        case late
    }

    private struct Key: Hashable {
        var sender: ParticipantID
        var lane: AppMessageLane
    }

    private struct Track {
        var highest: UInt64
        /// Bit i: `highest - i` was admitted.
        var seen: UInt64
        var epoch: UInt32
        /// This receiver's `resumes` when `highest` was admitted.
        var resumes: Int
    }

    /// How far back replays are told apart from reordered messages.
    public static let window: UInt64 = 64

    private var tracks: [Key: Track] = [:]
    private var resumes = 0
    /// The epochs each sender has left behind, newest last (at most `retiredEpochs`).
    private var retired: [ParticipantID: [UInt32]] = [:]
    static let retiredEpochs = 16

    public init() {}

    /// This receiver's link came back after a loss: the next gap of every sender is explained.
    public mutating func resumed() { resumes += 1 }

    /// Where this receiver stands with each sender's reliable lanes (the highest number admitted in each), for a
    /// resume's resend request; at most `limit` senders, those heard from most recently first.
    public func marks(limit: Int) -> [AppMessageMark] {
        var bySender: [ParticipantID: (mark: AppMessageMark, resumes: Int)] = [:]
        for (key, track) in tracks where key.lane != .unreliable {
            var entry = bySender[key.sender] ?? (AppMessageMark(participant: key.sender), track.resumes)
            if key.lane == .everyone { entry.mark.everyone = track.highest } else { entry.mark.some = track.highest }
            entry.resumes = max(entry.resumes, track.resumes)
            bySender[key.sender] = entry
        }
        return bySender.values.sorted { ($0.resumes, $0.mark.participant.rawValue) > ($1.resumes, $1.mark.participant.rawValue) }
            .prefix(max(0, limit)).map { $0.mark }
    }

    /// Decides on a message that opened in its place: `sequence` in `sender`'s `lane`, sealed at the sender's link
    /// `epoch`. Admitted messages are recorded.
    public mutating func admit(sender: ParticipantID, lane: AppMessageLane, sequence: UInt64,
                               epoch: UInt32) -> Verdict {
        let key = Key(sender: sender, lane: lane)
        guard var track = tracks[key], track.epoch == epoch else {
            if retired[sender]?.contains(epoch) == true { return lane == .unreliable ? .late : .replayed }
            if let left = tracks[key]?.epoch, retired[sender]?.contains(left) != true {
                retired[sender, default: []].append(left)
                if retired[sender]!.count > Self.retiredEpochs { retired[sender]!.removeFirst() }
            }
            tracks[key] = Track(highest: sequence, seen: 1, epoch: epoch, resumes: resumes)
            return .admitted(missing: 0)
        }
        if sequence > track.highest {
            let step = sequence - track.highest
            let explained = lane != .everyone || resumes != track.resumes
            track.seen = step >= Self.window ? 1 : (track.seen << step) | 1
            track.highest = sequence
            track.resumes = resumes
            tracks[key] = track
            return .admitted(missing: explained ? 0 : step - 1)
        }
        let back = track.highest - sequence
        if back >= Self.window || track.seen & (1 << back) != 0 { return .replayed }
        return lane == .unreliable ? .late : .reordered
    }
}

/// App messages a link dropped or found missing, by reason (`TandemClientConnection.appDataDrops`).
public struct AppMessageDrops: Sendable, Hashable, CustomStringConvertible {
    /// Boxes that did not open in their place: altered, credited to another sender, moved to another lane or
    /// sequence, or sealed with another key (or by a peer of another app-data version).
    public var altered = 0
    /// Copies of messages already shown.
    public var replayed = 0
    /// Reliable messages that arrived after a later one.
    public var reordered = 0
    /// Messages to everyone that never arrived, where no reconnect explains the gap.
    public var missing: UInt64 = 0
    /// Unreliable messages that arrived after a later one (the network does this on its own: not told).
    public var late = 0
    /// Boxes whose plaintext lacks the header (a peer that seals otherwise).
    public var malformed = 0

    public init() {}

    /// Whether something happened that only an altering relay (or a broken peer) explains.
    public var anyAltered: Bool { altered + replayed + reordered + malformed > 0 || missing > 0 }

    public var description: String {
        "\(altered) altered, \(replayed) replayed, \(reordered) reordered, \(missing) missing, \(late) late, "
            + "\(malformed) malformed"
    }
}
