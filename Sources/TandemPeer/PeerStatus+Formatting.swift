import Foundation
import Tandem

extension PeerStatus {
    /// The state as events and status lines name it: `playing`, `paused`, `waiting`, or `connecting` before the
    /// first timeline.
    package static func stateName(_ timeline: Timeline?) -> String {
        switch timeline?.status {
        case .playing: return "playing"
        case .paused: return "paused"
        case .waiting: return "waiting"
        case nil: return "connecting"
        }
    }

    /// The one-line summary an interactive console redraws: state, position, everyone's readiness, whom the group
    /// waits for (named from `names`), and the clock.
    package func line(names: [ParticipantID: String]) -> String {
        var parts: [String] = []
        let symbol: String
        switch timeline?.status {
        case .playing: symbol = "▶"
        case .paused: symbol = "⏸"
        case .waiting: symbol = "⏳"
        case nil: symbol = "…"
        }
        let position = self.position ?? expected ?? .zero
        let duration = self.duration.map { formatClock($0.nanoseconds) } ?? "?"
        parts.append("\(symbol) \(formatClock(position.nanoseconds))/\(duration) \(String(format: "%g", timeline?.rate ?? 1))×")
        if let item = itemPosition { parts.append(item) }
        let everyone = others.map { state -> String in
            // A participant followed another way says so: `bob (syncplay) ✓`.
            let name = state.participant.name + (state.participant.via.map { " (\($0))" } ?? "")
            if !state.suspensions.isEmpty {
                return "\(name) ⏳ \(state.suspensions.map(\.description).joined(separator: ", "))"
            }
            switch state.readiness {
            case .loading(let progress):
                return "\(name) ⏳ loading" + (progress.map { String(format: " %.0f %%", $0 * 100) } ?? "")
            case .ready: return "\(name) ✓"
            case .failed: return "\(name) ✗"
            case .unknown: return "\(name) …"
            }
        }
        if !everyone.isEmpty { parts.append(everyone.joined(separator: " ")) }
        if case .waiting(let who) = timeline?.status, !who.isEmpty {
            let list = who.keys.sorted().map { id in
                "\(names[id] ?? id.rawValue) (\(who[id]!.map(\.description).joined(separator: ", ")))"
            }
            parts.append("waiting for " + list.joined(separator: ", "))
        }
        if let streaming {
            parts.append("streaming from \(streaming.from)"
                + (streaming.buffered.map { String(format: ", %.1f s buffered", $0.seconds) } ?? ""))
        }
        if reconnecting {
            parts.append("reconnecting…")
        } else if let bound = errorBound, let offset = clockOffset {
            var clock = String(format: "clock ±%.2f ms, offset %+.1f ms", bound.milliseconds, offset.milliseconds)
            if let rtt = roundTrip { clock += String(format: ", rtt %.1f ms", rtt.milliseconds) }
            // Where unreliable app messages go: `udp`, or `tcp` when the datagram path is not working.
            if let path = unreliablePath { clock += path == .udp ? " │ udp" : " │ tcp" }
            parts.append(clock)
        } else {
            parts.append("clock syncing…")
        }
        return parts.joined(separator: " │ ")
    }

    /// "item 2 of 3" while an entry of a queue of more than one plays.
    package var itemPosition: String? {
        guard let queue, queue.entries.count > 1, let index = queue.currentIndex else { return nil }
        return "item \(index + 1) of \(queue.entries.count)"
    }
}
