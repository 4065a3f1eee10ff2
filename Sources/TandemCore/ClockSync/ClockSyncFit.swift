/// The straight-line fit behind `ClockSyncEstimator`: the fitted line itself and the geometry it rests on
/// (the two legs' common-slope floors, lower hulls, small order statistics).
extension ClockSyncEstimator {
    /// The current straight-line estimate of offset against local time, relative to the newest sample.
    struct Fit: Sendable {
        /// Local time (ns) that `x = 0` stands for: the newest sample's midpoint.
        var referenceLocal: Int64
        /// The pivot: where the offset is best known (the middle of the window), and the offset there.
        var pivotX: Double
        var pivotY: Double
        /// Slope (rate − 1) and its variance.
        var slope: Double
        var slopeVariance: Double
        /// One standard deviation (ns) of the offset at the pivot.
        var pivotDeviation: Double
        /// `session − local` that `y = 0` stands for (the newest sample's offset, whole ns).
        var referenceOffset: Int64
        /// The floor under the up leg, `upIntercept + legSlope·x`, and the ceiling over the down leg,
        /// `legSlope·x − downIntercept`, before the drift prior is applied.
        var legSlope: Double
        var upIntercept: Double
        var downIntercept: Double

        /// How far above its floor the less delayed of a sample's two packets was (ns): how much the sample
        /// can still tell about the offset.
        func queueing(of sample: ClockSample) -> Double {
            let (t1, t2, t3, t4) = sample.raw
            let xUp = Double(t1 &- referenceLocal)
            let xDown = Double(t4 &- referenceLocal)
            let up = Double((t2 &- t1) &- referenceOffset) - (upIntercept + legSlope * xUp)
            let down = (legSlope * xDown - downIntercept) - Double((t3 &- t4) &- referenceOffset)
            return min(up, down)
        }

        /// How far below its ceiling the sample's answer was (ns): its delay on the way back beyond the least.
        func downQueueing(of sample: ClockSample) -> Double {
            let (_, _, t3, t4) = sample.raw
            return (legSlope * Double(t4 &- referenceLocal) - downIntercept) - Double((t3 &- t4) &- referenceOffset)
        }

        func offset(at x: Double) -> Double { pivotY + slope * (x - pivotX) }

        /// One standard deviation (ns) of the fitted offset at `x`.
        func predictionDeviation(at x: Double) -> Double {
            let dx = x - pivotX
            return (pivotDeviation * pivotDeviation + slopeVariance * dx * dx).squareRoot()
        }
    }

    /// A point on one leg: local time `x` and `session − local` seen on that leg `y`, both relative to the
    /// newest sample.
    struct LegPoint {
        var x: Double
        var y: Double
    }

    /// The common-slope lines under the up leg's points and over the down leg's points (given negated, so
    /// also under) that leave the least total slack: the maximum-likelihood fit when queueing delays are
    /// exponential. The slope stays within ±`maxSlope`, the fastest any clock drifts: a few closely spaced
    /// points, the first of them delayed on one leg (a stall at the start of a burst), would otherwise tilt
    /// the lines to hug them, and a midline drawn between tilted floors misses the offset that an on-time
    /// exchange among them shows (19 ms on a 150 ms path, with 80 and 30 ms stalls then one clean exchange).
    /// Returns the slope, both intercepts (at x = 0, in the negated frame for `down`) and a noise scale from
    /// how densely each leg's points crowd its line, averaged.
    static func jointFloor(up: [LegPoint], down: [LegPoint], maxSlope: Double)
        -> (slope: Double, upIntercept: Double, downIntercept: Double, spread: Double) {
        let upHull = lowerHull(up)
        let downHull = lowerHull(down)
        var upSumX = 0.0, upSumY = 0.0, downSumX = 0.0, downSumY = 0.0
        for p in up { upSumX += p.x; upSumY += p.y }
        for p in down { downSumX += p.x; downSumY += p.y }
        let upCount = Double(up.count), downCount = Double(down.count)
        // For slope b, up points lie on or above a + b·x and the negated down points on or above c − b·x.
        func intercepts(_ b: Double) -> (Double, Double) {
            var a = Double.infinity, c = Double.infinity
            for p in upHull { a = min(a, p.y - b * p.x) }
            for p in downHull { c = min(c, p.y + b * p.x) }
            return (a, c)
        }
        func slack(_ b: Double) -> Double {
            let (a, c) = intercepts(b)
            return (upSumY - b * upSumX - upCount * a) + (downSumY + b * downSumX - downCount * c)
        }
        // The slack is convex and piecewise linear in b, with corners at the hull edges' slopes: its least value
        // within ±maxSlope is at a corner inside the range or at one of its ends.
        var candidates: [Double] = [0, -maxSlope, maxSlope]
        for i in upHull.indices.dropFirst() {
            candidates.append((upHull[i].y - upHull[i - 1].y) / (upHull[i].x - upHull[i - 1].x))
        }
        for i in downHull.indices.dropFirst() {
            candidates.append(-(downHull[i].y - downHull[i - 1].y) / (downHull[i].x - downHull[i - 1].x))
        }
        candidates.removeAll { !(abs($0) <= maxSlope) }
        var best = 0.0, bestSlack = slack(0)
        for b in candidates.dropFirst() {
            let value = slack(b)
            // Relative tolerance: with few points the slack is flat; prefer the smaller drift then.
            if value < bestSlack - 1e-9 * max(1, abs(bestSlack)) || (abs(value - bestSlack) <= 1e-9 * max(1, abs(bestSlack)) && abs(b) < abs(best)) {
                best = b
                bestSlack = value
            }
        }
        let (a, c) = intercepts(best)
        /// A noise scale from how densely the points crowd the line: the two hull points touch it, and the
        /// k-th closest of the rest lies about k noise scales away.
        func spread(_ points: [LegPoint], _ intercept: Double, _ slope: Double) -> Double {
            let residuals = points.map { max(0, $0.y - intercept - slope * $0.x) }
            let rank = min(residuals.count - 1, spreadRank + 1)
            return rank < 2 ? residuals.max() ?? 0 : smallest(residuals, rank: rank) / Double(rank - 1)
        }
        let noise = (spread(up, a, best) + spread(down, c, -best)) / 2
        return (best, a, c, noise)
    }

    /// How many points beyond the hull's two set the noise scale.
    static let spreadRank = 8

    /// The lower convex hull of `points`, by increasing x (of points sharing an x, the lowest).
    static func lowerHull(_ points: [LegPoint]) -> [LegPoint] {
        // Points come nearly in time order; sort only when needed.
        var inOrder = true
        for i in points.indices.dropFirst() where points[i].x < points[i - 1].x
            || (points[i].x == points[i - 1].x && points[i].y < points[i - 1].y) {
            inOrder = false
            break
        }
        let sorted = inOrder ? points : points.sorted { $0.x < $1.x || ($0.x == $1.x && $0.y < $1.y) }
        var hull: [LegPoint] = []
        hull.reserveCapacity(sorted.count)
        for p in sorted {
            if let last = hull.last, last.x == p.x { continue }
            while hull.count >= 2 {
                let a = hull[hull.count - 2], b = hull[hull.count - 1]
                // Keep b only if it lies strictly below the segment a–p.
                if (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x) <= 0 { hull.removeLast() } else { break }
            }
            hull.append(p)
        }
        return hull
    }

    /// The `rank`-th smallest of `values` (from 0), for a small rank: a sorted buffer of the smallest few.
    static func smallest(_ values: [Double], rank: Int) -> Double {
        var buffer: [Double] = []
        buffer.reserveCapacity(rank + 2)
        for v in values where buffer.count <= rank || v < buffer[rank] {
            var i = buffer.count
            buffer.append(v)
            while i > 0 && buffer[i - 1] > v { buffer[i] = buffer[i - 1]; i -= 1 }
            buffer[i] = v
            if buffer.count > rank + 1 { buffer.removeLast() }
        }
        return buffer[min(rank, buffer.count - 1)]
    }

    /// The weighted median of `values` (the value where half the weight lies on either side).
    static func weightedMedian(_ values: [(value: Double, weight: Double)]) -> Double {
        let sorted = values.sorted { $0.value < $1.value }
        let half = sorted.reduce(0) { $0 + $1.weight } / 2
        var running = 0.0
        for entry in sorted {
            running += entry.weight
            if running >= half { return entry.value }
        }
        return sorted.last?.value ?? 0
    }
}
