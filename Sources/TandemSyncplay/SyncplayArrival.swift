import TandemCore

/// A Tandem peer arriving in a Syncplay room: until its players have loaded the item the room plays, it has no
/// position of its own, so its heartbeats repeat the room's state (a position it has not played would move everyone
/// there: Syncplay's server takes the slowest member's position); once they have, it moves its session to where the
/// room is then, and reports its own position from the moment that move has settled. Syncplay's own client does the
/// same: it says nothing of its position before it has heard the room, then starts its player there.
///
/// Pure: it takes what the room said, whether the session's players have loaded, and the session's settled
/// timelines (by generation), and says what the heartbeat reports and where the session should go.
public struct SyncplayArrival: Sendable {
    /// Within this of the room (s), and in the same play state, a session is where the room is (Syncplay's own
    /// threshold for a jump to count as a seek).
    public static let tolerance = 1.0

    public enum Phase: Sendable, Equatable {
        /// The players have not loaded the room's item yet: heartbeats repeat the room.
        case arriving
        /// They have, and the session was asked to move to the room; heartbeats repeat the room until a timeline of
        /// a later generation than `generation` settles.
        case moving(after: UInt64)
        /// Heartbeats report the session.
        case arrived
        /// Never reports a position of its own (a quiet member of the room, another peer speaks for its session).
        case quiet
    }

    /// The room's state as last heard: `position` at `heard`, moving on while it plays.
    public struct RoomState: Sendable, Equatable {
        public var paused: Bool
        public var position: Double
        public var heard: LocalInstant

        /// Where the room is at `now`.
        public func playstate(at now: LocalInstant) -> SyncplayLocalPlaystate {
            let elapsed = paused ? 0 : max(0, (now - heard).seconds)
            return SyncplayLocalPlaystate(position: position + elapsed, paused: paused)
        }
    }

    public private(set) var phase = Phase.arriving
    public private(set) var room: RoomState?
    /// Whether the session's players (this peer's, and any other Tandem peer's in it) have loaded its item.
    public private(set) var playersLoaded = false

    public init() {}

    /// Whether heartbeats report the session's own position (otherwise they repeat the room's state).
    public var reportsOwnPosition: Bool { phase == .arrived }

    /// Whether the room's changes should wait: nothing is loaded to apply them to, and the move on arrival takes the
    /// room's latest state.
    public var holdsRoomChanges: Bool { phase == .arriving || phase == .quiet }

    /// The room said it is at `position`, paused or not (every heartbeat and change, whoever made it).
    public mutating func heard(paused: Bool, position: Double, now: LocalInstant) {
        room = RoomState(paused: paused, position: position, heard: now)
    }

    /// Whether the session's players have all loaded its current item.
    public mutating func players(loaded: Bool) {
        playersLoaded = loaded
    }

    /// The session moved to another item. One the room's playlist chose here on arriving (`byRoom`) is the item the
    /// room plays: it is arrived at again once loaded. Either way its players load it anew.
    public mutating func itemChanged(byRoom: Bool) {
        playersLoaded = false
        if byRoom, phase != .quiet { phase = .arriving }
    }

    /// Stays a quiet member from now on.
    public mutating func quiet() {
        phase = .quiet
    }

    /// The session is settled (playing or paused, not waiting) at `session`, generation `generation`; `busy` while it
    /// is still being changed (the room's playlist being followed). Returns where to move the session when it is
    /// time to arrive and the session is elsewhere (more than `tolerance` away, or in the other play state); nil
    /// otherwise (arrived without a move, or not yet time).
    public mutating func sessionSettled(at session: SyncplayLocalPlaystate, generation: UInt64, busy: Bool,
                                        now: LocalInstant) -> SyncplayLocalPlaystate? {
        switch phase {
        case .moving(let after) where generation > after:
            phase = .arrived
            return nil
        case .arriving:
            guard playersLoaded, !busy, let room else { return nil }
            let target = room.playstate(at: now)
            if target.paused == session.paused, abs(target.position - session.position) <= Self.tolerance {
                phase = .arrived
                return nil
            }
            phase = .moving(after: generation)
            return SyncplayLocalPlaystate(position: max(0, target.position), paused: target.paused)
        case .moving, .arrived, .quiet:
            return nil
        }
    }

    /// The move was refused (e.g. past the end of this item): the session reports itself as it is.
    public mutating func moveRefused() {
        if case .moving = phase { phase = .arrived }
    }

    /// What the room is told of a play or pause by one of the session's participants (`seeks`: a jump): before the
    /// session has arrived, it plays or pauses where the room is, as its own position is not one it has played.
    public func reported(_ change: SyncplayLocalPlaystate, seeks: Bool, now: LocalInstant) -> SyncplayLocalPlaystate {
        guard phase != .arrived, !seeks, let room else { return change }
        return SyncplayLocalPlaystate(position: room.playstate(at: now).position, paused: change.paused)
    }
}
