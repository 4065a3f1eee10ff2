import Tandem
import TandemPeer

/// What every peer's sinks rendered, on the true clock, and what that says about how far apart the peers are.
///
/// Records come from each player's render probe: the true CLOCK_MONOTONIC time at which a sink released a buffer,
/// never a peer's estimate of itself (which is wrong by its clock error in benchmarks).
package struct GroundTruth: Sendable {
    /// One rendered buffer.
    package struct Frame: Sendable {
        package var item: Int64
        package var time: Int64
    }

    /// The same item time rendered by several peers at nearly the same moment.
    package struct Showing: Sendable {
        package var item: Int64
        /// Peer index → true render time.
        package var times: [Int: Int64]
        /// The group's median render time of this item.
        package var median: Int64
        /// Latest minus earliest render time: the skew between peers at this item.
        package var spread: Int64 { (times.values.max() ?? 0) - (times.values.min() ?? 0) }
        /// How far a peer rendered from the median (ns); positive is late.
        package func offset(of peer: Int) -> Int64? { times[peer].map { $0 - median } }
    }

    package let kind: RenderRecord.StreamKind
    private(set) var frames: [[Frame]] = []
    /// Records the probes overwrote before they were drained (should stay 0).
    private(set) var dropped: UInt64 = 0

    package init(kind: RenderRecord.StreamKind = .video) { self.kind = kind }

    /// Makes room for a new peer; returns its index.
    package mutating func addPeer() -> Int {
        frames.append([])
        return frames.count - 1
    }

    /// Takes what `probe` recorded since the last drain.
    package mutating func collect(_ peer: Int, from probe: RenderProbe) {
        let records = probe.drain()
        let kind = self.kind
        frames[peer].append(contentsOf: records.filter { $0.kind == kind }.map { Frame(item: $0.itemTime, time: $0.monotonicTime) })
        dropped = probe.droppedCount
    }

    /// Takes frames timed by other means than a render probe (e.g. `MpvFrameStamps`), oldest first.
    package mutating func record(_ peer: Int, frames more: [Frame]) {
        frames[peer].append(contentsOf: more)
    }

    /// Every showing rendered by at least `minimumPeers` peers (of `peers`, all when nil) whose render times lie
    /// within `window` of each other, in time order.
    /// `since` limits the work to frames rendered from then on (live views look at the last moments only, and must
    /// not redo the whole run each time).
    package func showings(peers: Set<Int>? = nil, window: Int64 = TimeSpan.seconds(1).nanoseconds, minimumPeers: Int = 2,
                  since: Int64? = nil) -> [Showing] {
        var byItem: [Int64: [(peer: Int, time: Int64)]] = [:]
        for (peer, list) in frames.enumerated() where peers?.contains(peer) ?? true {
            let start = since.map { firstIndex(in: list, after: $0 - 1) ?? list.count } ?? 0
            for frame in list[start...] { byItem[frame.item, default: []].append((peer, frame.time)) }
        }
        var result: [Showing] = []
        for (item, renders) in byItem {
            let sorted = renders.sorted { $0.time < $1.time }
            var index = 0
            while index < sorted.count {
                let start = sorted[index].time
                var times: [Int: Int64] = [:]
                while index < sorted.count, sorted[index].time - start <= window {
                    if times[sorted[index].peer] == nil { times[sorted[index].peer] = sorted[index].time }
                    index += 1
                }
                guard times.count >= minimumPeers else { continue }
                let values = times.values.sorted()
                let median = values.count % 2 == 1 ? values[values.count / 2]
                    : (values[values.count / 2 - 1] + values[values.count / 2]) / 2
                result.append(Showing(item: item, times: times, median: median))
            }
        }
        return result.sorted { $0.median < $1.median }
    }

    // MARK: Command effects

    /// What a command changes in what a peer renders.
    package enum Effect: Sendable, Hashable, Codable {
        /// Rendering starts (or restarts) near `item` (any item when nil).
        case starts(near: Int64?)
        /// Rendering stops.
        case stops
        /// Rendering goes on at `rate`.
        case rate(Double)
    }

    /// The true time at which `peer` first rendered `effect` after `request`, nil when it did not (yet).
    package func effectTime(of peer: Int, after request: Int64, _ effect: Effect, frameInterval: Int64) -> Int64? {
        let list = frames[peer]
        if case .stops = effect {
            // The effect is the first frame that should have followed and did not: scan from the last frame
            // rendered before the request.
            guard !list.isEmpty else { return nil }
            var index = max(0, (firstIndex(in: list, after: request) ?? list.count) - 1)
            while index < list.count {
                let next = index + 1 < list.count ? list[index + 1] : nil
                if next == nil || next!.time - list[index].time > 6 * frameInterval {
                    return max(request, list[index].time + frameInterval)
                }
                index += 1
            }
            return nil
        }
        guard let first = firstIndex(in: list, after: request) else { return nil }
        switch effect {
        case .starts(let near):
            for frame in list[first...] {
                guard let near else { return frame.time }
                if frame.item >= near - 2 * frameInterval, frame.item <= near + TimeSpan.seconds(1).nanoseconds { return frame.time }
            }
            return nil
        case .stops:
            return nil  // handled above
        case .rate(let rate):
            var index = first
            while index + 1 < list.count {
                let a = list[index], b = list[index + 1]
                let dt = Double(b.time - a.time), di = Double(b.item - a.item)
                if dt > 0, di > 0, abs(di / dt - rate) < 0.1 * rate {
                    // Two steps in a row at the new rate, so one odd frame does not count.
                    if index + 2 < list.count {
                        let c = list[index + 2]
                        let dt2 = Double(c.time - b.time), di2 = Double(c.item - b.item)
                        if dt2 > 0, abs(di2 / dt2 - rate) < 0.1 * rate { return a.time }
                    }
                }
                index += 1
            }
            return nil
        }
    }

    /// The index of the first frame rendered after `time`.
    private func firstIndex(in list: [Frame], after time: Int64) -> Int? {
        var low = 0, high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid].time <= time { low = mid + 1 } else { high = mid }
        }
        return low < list.count ? low : nil
    }

    /// The last frame `peer` rendered, if any.
    package func lastFrame(of peer: Int) -> Frame? { frames[peer].last }
}
