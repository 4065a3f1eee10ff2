/// Where a receive (or send) time of a clock exchange was read.
public enum ClockStampSource: String, Sendable, Hashable, Codable {
    /// The clock, read when the event loop got to the message (after its wake-up and whatever ran before).
    case user
    /// The kernel's stamp of the datagram's arrival (or departure), moved to the local monotonic clock.
    case kernel
}

/// One completed four-timestamp exchange. `t1`, `t4` on the peer's local clock; `t2`, `t3` on session time.
public struct ClockSample: Hashable, Sendable, Codable {
    public var t1: LocalInstant
    public var t2: SessionInstant
    public var t3: SessionInstant
    public var t4: LocalInstant
    /// Where `t4`, the answer's arrival, was read.
    public var arrival: ClockStampSource
    /// Where the send times were read: `.kernel` when both `t1` (the probe's departure) and `t3` (the answer's) are
    /// the kernel's transmit stamps, `.user` when either is a clock reading taken before the datagram was sealed.
    public var departure: ClockStampSource = .user
    /// An exchange whose answer's arrival the event loop read (`arrival` `.user`).
    public init(t1: LocalInstant, t2: SessionInstant, t3: SessionInstant, t4: LocalInstant) {
        self.init(t1: t1, t2: t2, t3: t3, t4: t4, arrival: .user)
    }

    public init(t1: LocalInstant, t2: SessionInstant, t3: SessionInstant, t4: LocalInstant,
                arrival: ClockStampSource) {
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
        self.t4 = t4
        self.arrival = arrival
    }

    public init(t1: LocalInstant, t2: SessionInstant, t3: SessionInstant, t4: LocalInstant,
                arrival: ClockStampSource, departure: ClockStampSource) {
        self.init(t1: t1, t2: t2, t3: t3, t4: t4, arrival: arrival)
        self.departure = departure
    }

    private enum CodingKeys: String, CodingKey { case t1, t2, t3, t4, arrival, departure }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(t1: try container.decode(LocalInstant.self, forKey: .t1),
                  t2: try container.decode(SessionInstant.self, forKey: .t2),
                  t3: try container.decode(SessionInstant.self, forKey: .t3),
                  t4: try container.decode(LocalInstant.self, forKey: .t4),
                  arrival: try container.decodeIfPresent(ClockStampSource.self, forKey: .arrival) ?? .user,
                  departure: try container.decodeIfPresent(ClockStampSource.self, forKey: .departure) ?? .user)
    }
    /// Network round trip, excluding the authority's own turnaround.
    public var roundTrip: TimeSpan { (t4 - t1) - (t3 - t2) }
    /// Offset `session − local` assuming a symmetric path, at local time `localMidpoint`.
    public var offset: TimeSpan { TimeSpan(nanoseconds: doubledOffset / 2) }
    public var localMidpoint: LocalInstant { t1 + (t4 - t1) / Int64(2) }

    /// The four stamps as plain nanoseconds on one axis, for the fit's arithmetic (which mixes the two clocks).
    var raw: (t1: Int64, t2: Int64, t3: Int64, t4: Int64) {
        (t1.nanoseconds, t2.nanoseconds, t3.nanoseconds, t4.nanoseconds)
    }
    /// Twice the offset, exact (no rounding of the halving).
    var doubledOffset: Int64 { (t2.nanoseconds &- t1.nanoseconds) &+ (t3.nanoseconds &- t4.nanoseconds) }
    /// Twice the local midpoint, exact.
    var doubledMidpoint: Int64 { t1.nanoseconds &+ t4.nanoseconds }
}

/// Estimates `session time = f(local time)` from clock exchanges with the session authority.
///
/// A pure value that never reads a clock: the driver sends a ping when `nextPingTime(lastPing:)` says, calls
/// `pingSent()`, and feeds each pong as a `ClockSample` through `add(_:)`. Every read (`mapping`,
/// `errorBound`, …) is a stored value, so it is cheap to consult on every frame.
///
/// How it works:
/// - **Schedule.** A quick burst at start (a first estimate within a round trip or two), then an acquisition
///   phase of faster pings — every 20 round trips on a short path, at most every 100 ms — that ends as soon as
///   the estimate is firm, then a steady ping a second (every 250 ms on loopback or a LAN). A LAN settles within a
///   second or two; a 50 ms path gets ten exchanges a second for its first half minute. Each exchange is two packets of a few dozen bytes.
/// - **Keeping the low-delay samples, per direction.** `t2 − t1` is the offset plus the up delay, `t3 − t4`
///   the offset minus the down delay. Over the window, the points of the first lie on or above a line (the
///   offset line raised by the smallest up delay) and those of the second on or below one (lowered by the
///   smallest down delay). The estimator fits both lines with a common slope, as tight against the points as
///   possible (least total slack — the maximum-likelihood fit when queueing delays are exponential), and
///   takes their midline. This uses the least-delayed packet of *each* direction, which on a jittery path
///   is much closer to the minimum than the least-delayed round trip: symmetric jitter cancels far better
///   than with a minimum-round-trip filter.
/// - **Offset and rate.** The common slope is the drift of the local clock against session time; a weak prior
///   (`maxDriftPPM`) keeps the first closely spaced samples from producing a wild rate, and the two lines
///   themselves never tilt beyond four prior deviations (no clock drifts that fast), so that a few early
///   packets held up on one leg cannot pull the midline off an on-time exchange beside them. The window keeps up
///   to `window` samples over at most `windowDuration`; when full, the sample whose packets were both
///   delayed the most goes first, so the useful ones stay and the rate is measured over a long baseline.
/// - **Outliers.** Before the fit, every sample is checked against a robust line (the weighted median offset
///   along the previous rate, low round trips weighing most); one that disagrees by more than its own excess
///   round trip allows is left out (corrupted or misattributed timestamps). A sample delayed by a spike is
///   not an outlier in that sense and cannot move the fit either: its packets lie far from both lines. If
///   the newest samples are all rejected for a while, a clock has stepped (e.g. the machine was suspended):
///   the estimator forgets the old samples and starts again with a burst.
/// - **Error bound.** Path asymmetry cannot be observed from the two ends: a path 30 ms one way and 70 ms
///   back looks exactly like a symmetric 50 ms path with the clocks 20 ms apart. Any asymmetry is at most half
///   the smallest round trip, so `errorBound` is half the smallest round trip plus `uncertainty` — a true
///   bound, if a pessimistic one on long paths. `uncertainty` is the statistical part alone (about a 99 %
///   bound on the error if the path is symmetric), from how densely the least-delayed packets crowd the
///   fitted lines.
///
/// Sign conventions: `mapping` maps local → session time; `driftPPM` is how fast the local clock runs against
/// session time (positive: the local clock gains).
public struct ClockSyncEstimator: Sendable {
    /// Tuning of the schedule and of the estimator. The defaults suit both a LAN and a 50 ms internet path.
    public struct Configuration: Sendable, Hashable {
        /// Pings in the initial burst, and their spacing.
        public var burstCount: Int = 8
        public var burstInterval: TimeSpan = .milliseconds(50)
        /// Pings after the burst that go out at the acquisition interval before the steady rate.
        ///
        /// The acquisition phase ends early once the estimate is firm (`acquisitionTarget`).
        public var acquisitionCount: Int = 300
        /// The longest acquisition interval. On a short path the interval is `acquisitionRoundTrips` smallest
        /// round trips instead (exchanges are cheap and quick there), but never below `minimumInterval`.
        public var acquisitionInterval: TimeSpan = .milliseconds(100)
        public var acquisitionRoundTrips: Int64 = 20
        /// The shortest interval between pings in any phase.
        public var minimumInterval: TimeSpan = .milliseconds(20)
        /// The acquisition phase ends once `uncertainty` is at most this and the rate is known well
        /// enough that a steady interval of extrapolation adds no more than this again.
        public var acquisitionTarget: TimeSpan = .microseconds(5)
        /// Steady-state ping interval.
        public var steadyInterval: TimeSpan = .seconds(1)
        /// The steady interval instead, when shorter, on a short path (smallest round trip under
        /// `shortPathRoundTrip`: loopback, a LAN), where exchanges are quick. A steady rate nearer the acquisition
        /// phase's keeps the fitted drift honest: with one exchange a second after a dense start, the least-delayed
        /// exchanges all came from the first seconds, and the drift fitted between two processes on one machine
        /// (truly none) stayed 1–2 ppm off for a minute, the estimate drifting up to 0.09 ms from the truth between
        /// corrections (`tandem bench sync --processes`). 100 ms did a little better still but doubled a debug
        /// build's coordination CPU per peer (each exchange is a refit); 250 ms adds a fifth. Nil: `steadyInterval`
        /// on every path.
        public var shortPathSteadyInterval: TimeSpan? = .milliseconds(250)
        /// The round trip under which a path is short (see `shortPathSteadyInterval`).
        public var shortPathRoundTrip: TimeSpan = .milliseconds(2)
        /// How many samples are kept at most. Beyond it, the least useful one goes: a rejected sample, else
        /// the one whose packets were both delayed the most.
        public var window: Int = 256
        /// How long (local time) a sample is kept at most, so that the estimate follows a drift that wanders.
        public var windowDuration: TimeSpan = .seconds(300)
        /// Prior standard deviation of the local clock's drift (ppm): the estimate is drawn towards zero drift
        /// only while the samples cannot tell the rate to better than this.
        public var maxDriftPPM: Double = 500
        /// Irreducible timestamping noise: the smallest noise scale the estimator assumes.
        public var noiseFloor: TimeSpan = .microseconds(1)
        /// A sample is rejected when it is off the robust line by more than this many times what its excess
        /// round trip allows.
        public var outlierThreshold: Double = 3
        /// After this many consecutive rejected samples the estimator assumes a clock step and starts over.
        public var resetAfterRejections: Int = 6
        public init() {}
    }

    public let configuration: Configuration
    /// The samples currently in the window, oldest first (rejected ones included).
    public private(set) var samples: [ClockSample] = []
    /// Pings sent since the estimator was created.
    public private(set) var sentCount = 0
    /// The current estimate of local → session time (rate included), or nil before the first sample.
    public private(set) var mapping: ClockMapping?
    /// A bound on |estimate − truth| at the newest sample's time, or nil before the first sample.
    ///
    /// Half the smallest round trip (the largest path asymmetry possible) plus `uncertainty`. See
    /// `errorBound(atLocal:)` for the bound at a later time.
    public private(set) var errorBound: TimeSpan?
    /// The smallest round trip in the window, or nil.
    public private(set) var roundTrip: TimeSpan?
    /// The statistical error of the estimate at the newest sample (about a 99 % bound), ignoring path
    /// asymmetry.
    public private(set) var uncertainty: TimeSpan?
    /// The estimated drift of the local clock against session time, in ppm (positive: local runs fast).
    public private(set) var driftPPM: Double?
    /// The uncertainty of `driftPPM` (ppm) on the scale of `uncertainty` / 3: three times it bounds the drift
    /// error in about 99 % of cases.
    public private(set) var driftUncertaintyPPM: Double?
    /// How many samples the current estimate rejected as outliers.
    public private(set) var rejectedCount = 0
    /// How many times the estimator started over after a clock step.
    public private(set) var resetCount = 0
    /// How many samples in the window have a kernel-stamped arrival (`ClockSample.arrival`).
    public private(set) var kernelStampedCount = 0
    /// Where the arrival times the estimate rests on were read: `.kernel` when the window's least-delayed answer
    /// (the one that sets the down leg's floor) was kernel-stamped, `.user` otherwise; nil before the first sample.
    public private(set) var arrivalStamps: ClockStampSource?
    /// Where the send times of the window's least-delayed answer were read (`ClockSample.departure`); nil before the
    /// first sample.
    public private(set) var departureStamps: ClockStampSource?
    /// How much later than the least-delayed answer the window's answers arrive, at about the 99th percentile of
    /// their jitter: the spread of the way back's delay, which a message from the server to this peer (a scheduled
    /// start) may take beyond the best case. Twice the 90th percentile of the accepted answers' delay beyond the
    /// least — the 99th for an exponential tail — so that the few a loss held back (a retransmission ahead of them
    /// on a stream: 200 ms) do not set it. Nil until `spreadSampleCount` answers are in the window.
    public private(set) var returnDelaySpread: TimeSpan?
    /// How many accepted answers `returnDelaySpread` needs.
    public static let spreadSampleCount = 16

    /// Pings sent since the last start-over; drives the burst / acquisition / steady schedule.
    private var scheduleCount = 0
    /// The acquisition phase is over (stays over until a start-over).
    private var acquired = false
    /// The last fit, for outlier checks of the next one.
    private var fit: Fit?
    /// Consecutive newest samples that were rejected.
    private var consecutiveRejections = 0
    /// Whether the last fit used each sample (parallel to `samples`).
    private var accepted: [Bool] = []

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Call when a ping is sent (so the burst/steady schedule advances).
    public mutating func pingSent() {
        sentCount += 1
        scheduleCount += 1
    }

    /// When (local time) the next ping should go out, given the last one went out at `lastPing`.
    ///
    /// `LocalInstant(nanoseconds: .min)` (send now) when no ping went out yet.
    public func nextPingTime(lastPing: LocalInstant?) -> LocalInstant {
        guard let lastPing else { return LocalInstant(nanoseconds: .min) }
        return lastPing + currentInterval
    }

    /// The interval the schedule is in now.
    public var currentInterval: TimeSpan {
        if scheduleCount < configuration.burstCount { return configuration.burstInterval }
        if !acquired && scheduleCount < configuration.burstCount + configuration.acquisitionCount {
            let scaled = (roundTrip ?? configuration.acquisitionInterval) * configuration.acquisitionRoundTrips
            return max(configuration.minimumInterval, min(configuration.acquisitionInterval, scaled))
        }
        return currentSteadyInterval
    }

    /// The steady interval on this path: `steadyInterval`, or `shortPathSteadyInterval` on a short one.
    public var currentSteadyInterval: TimeSpan {
        if let short = configuration.shortPathSteadyInterval, let roundTrip,
           roundTrip < configuration.shortPathRoundTrip {
            return max(configuration.minimumInterval, min(short, configuration.steadyInterval))
        }
        return configuration.steadyInterval
    }

    /// Feeds a completed exchange and updates the estimate.
    public mutating func add(_ sample: ClockSample) {
        guard sample.roundTrip >= .zero, sample.t4 >= sample.t1, sample.t3 >= sample.t2 else { return }
        samples.append(sample)
        accepted.append(true)
        trim()
        refit()
        if consecutiveRejections >= configuration.resetAfterRejections {
            // The newest samples agree with each other but not with the old ones: a clock stepped.
            samples.removeFirst(samples.count - consecutiveRejections)
            accepted = Array(repeating: true, count: samples.count)
            fit = nil
            resetCount += 1
            scheduleCount = 0
            acquired = false
            refit()
        }
    }

    /// The estimated session time at local time `local`, or nil before the first sample.
    public func sessionTime(atLocal local: LocalInstant) -> SessionInstant? {
        mapping?.sessionTime(atLocal: local)
    }

    /// A bound on |estimate − truth| at local time `local`: `errorBound` plus the growth of the rate
    /// uncertainty with the distance from the newest sample.
    public func errorBound(atLocal local: LocalInstant) -> TimeSpan? {
        guard let fit, let errorBound else { return nil }
        let x = Double(local.nanoseconds &- fit.referenceLocal)
        let predicted = fit.predictionDeviation(at: x)
        let atReference = fit.predictionDeviation(at: 0)
        return errorBound + TimeSpan(nanoseconds: Int64((3 * max(0, predicted - atReference)).rounded(.up)))
    }

    /// Drops samples older than `windowDuration`, then the least useful ones beyond `window`.
    private mutating func trim() {
        guard let newest = samples.last else { return }
        let oldestKept = newest.t4 - configuration.windowDuration
        if let first = samples.firstIndex(where: { $0.t4 >= oldestKept }), first > 0 {
            samples.removeFirst(first)
            accepted.removeFirst(first)
        }
        // The newest few are always kept: they are what the estimate extrapolates from.
        let protected = max(1, min(configuration.burstCount, configuration.window / 4))
        while samples.count > max(configuration.window, protected) {
            var worst = 0
            var worstScore = -Double.infinity
            for i in 0..<(samples.count - protected) {
                let score: Double
                if !accepted[i] {
                    score = .infinity
                } else if let fit {
                    score = fit.queueing(of: samples[i])
                } else {
                    score = Double(samples[i].roundTrip.nanoseconds)
                }
                if score > worstScore { worst = i; worstScore = score }
                if score == .infinity { break }
            }
            samples.remove(at: worst)
            accepted.remove(at: worst)
        }
    }

    private mutating func refit() {
        let n = samples.count
        guard n > 0, let newest = samples.last else {
            mapping = nil; errorBound = nil; roundTrip = nil; uncertainty = nil
            kernelStampedCount = 0; arrivalStamps = nil; departureStamps = nil; returnDelaySpread = nil
            driftPPM = nil; driftUncertaintyPPM = nil; fit = nil
            return
        }
        let referenceDoubledMid = newest.doubledMidpoint
        let referenceDoubledOffset = newest.doubledOffset
        let referenceLocal = referenceDoubledMid >> 1
        let referenceOffset = referenceDoubledOffset >> 1
        var minRoundTrip = Int64.max
        for s in samples { minRoundTrip = min(minRoundTrip, s.roundTrip.nanoseconds) }

        // Outlier check against a robust line: weighted median offset along the previous rate, each sample
        // weighted by how little queueing its round trip allows.
        accepted = [Bool](repeating: true, count: n)
        var rejected = 0
        let priorDeviation = configuration.maxDriftPPM * 1e-6
        let priorVariance = priorDeviation * priorDeviation
        if n >= 3 {
            var excess = [Double](repeating: 0, count: n)
            for i in 0..<n { excess[i] = Double(samples[i].roundTrip.nanoseconds - minRoundTrip) }
            let floor = max(Double(configuration.noiseFloor.nanoseconds),
                            Self.smallest(excess, rank: min(n - 1, max(2, n / 16))))
            let priorSlope = fit?.slope ?? 0
            let slopeTolerance: Double
            if let fit, fit.slopeVariance < priorVariance / 4 {
                slopeTolerance = 3 * fit.slopeVariance.squareRoot() + 1e-6
            } else {
                slopeTolerance = 2 * priorDeviation
            }
            var detrended = [(value: Double, weight: Double)]()
            detrended.reserveCapacity(n)
            var xs = [Double](repeating: 0, count: n)
            for i in 0..<n {
                xs[i] = Double(samples[i].doubledMidpoint &- referenceDoubledMid) / 2
                let y = Double(samples[i].doubledOffset &- referenceDoubledOffset) / 2
                detrended.append((y - priorSlope * xs[i], 1 / (excess[i] * excess[i] + floor * floor)))
            }
            let center = Self.weightedMedian(detrended)
            for i in 0..<n {
                let allowed = excess[i] / 2 + floor + abs(xs[i]) * slopeTolerance
                if abs(detrended[i].value - center) > configuration.outlierThreshold * allowed {
                    accepted[i] = false
                    rejected += 1
                }
            }
        }
        consecutiveRejections = 0
        for i in stride(from: n - 1, through: 0, by: -1) {
            if accepted[i] { break }
            consecutiveRejections += 1
        }
        rejectedCount = rejected

        // The two legs separately: `t2 − t1 = offset + up delay` lies on or above the true offset line moved
        // up by the smallest up delay; `t3 − t4 = offset − down delay` on or below it moved down by the
        // smallest down delay. The lower hull of the first and the upper hull of the second therefore track
        // the least-delayed packets of each direction, which are far closer to the minimum than the least
        // delayed round trips; their midline is the offset, up to the (unobservable) path asymmetry.
        var up: [LegPoint] = []
        var down: [LegPoint] = []
        up.reserveCapacity(n)
        down.reserveCapacity(n)
        for i in 0..<n where accepted[i] {
            let s = samples[i].raw
            up.append(LegPoint(x: Double(s.t1 &- referenceLocal), y: Double((s.t2 &- s.t1) &- referenceOffset)))
            down.append(LegPoint(x: Double(s.t4 &- referenceLocal), y: -Double((s.t3 &- s.t4) &- referenceOffset)))
        }
        guard !up.isEmpty else { return }  // keep the previous estimate
        var span = 0.0
        if let first = up.map(\.x).min(), let last = down.map(\.x).max() { span = last - first }
        // The offset is best known in the middle of the window.
        var pivotX = 0.0
        for p in up { pivotX += p.x }
        for p in down { pivotX += p.x }
        pivotX /= Double(up.count + down.count)
        // No clock drifts by more than four prior deviations (2000 ppm with the defaults; quartz is within 100).
        let legs = Self.jointFloor(up: up, down: down, maxSlope: 4 * priorDeviation)
        // Offset at the pivot: midway between the up floor and the down ceiling.
        let pivotY = (legs.upIntercept - legs.downIntercept) / 2 + legs.slope * pivotX
        let noise = max(Double(configuration.noiseFloor.nanoseconds), 2.5 * legs.spread)
        var slope = 0.0
        var slopeVariance = priorVariance
        if up.count >= 2, span > 0 {
            // The slope is set by least-delayed packets about half the window apart, on both legs.
            let dataVariance = noise * noise / (span * span / 4)
            let shrink = priorVariance / (priorVariance + dataVariance)
            slope = legs.slope * shrink
            slopeVariance = dataVariance * shrink
        }
        let newFit = Fit(referenceLocal: referenceLocal, pivotX: pivotX, pivotY: pivotY, slope: slope,
                         slopeVariance: slopeVariance, pivotDeviation: noise, referenceOffset: referenceOffset,
                         legSlope: legs.slope, upIntercept: legs.upIntercept, downIntercept: legs.downIntercept)
        fit = newFit
        kernelStampedCount = samples.count(where: { $0.arrival == .kernel })
        var tightest = Double.infinity
        var slacks: [Double] = []
        slacks.reserveCapacity(n)
        for i in 0..<n where accepted[i] {
            let slack = newFit.downQueueing(of: samples[i])
            slacks.append(-slack)
            if slack < tightest {
                tightest = slack
                arrivalStamps = samples[i].arrival
                departureStamps = samples[i].departure
            }
        }
        if slacks.count >= Self.spreadSampleCount {
            // Twice the 90th percentile over the tightest: the 99th for an exponential tail, while the few answers a
            // loss held back (a retransmission ahead of them on a stream) stay out of it.
            let high = -Self.smallest(slacks, rank: slacks.count / 10)
            returnDelaySpread = TimeSpan(nanoseconds: Int64((2 * max(0, high - tightest)).rounded()))
        } else {
            returnDelaySpread = nil
        }

        // Mapping anchored at the newest sample's midpoint (rounded down to whole ns).
        mapping = ClockMapping(localAnchor: LocalInstant(nanoseconds: referenceLocal),
                               sessionAnchor: SessionInstant(nanoseconds: referenceLocal &+ referenceOffset
                                                                 &+ Int64(newFit.offset(at: 0).rounded())),
                               rate: 1 + slope)
        roundTrip = TimeSpan(nanoseconds: minRoundTrip)
        let deviation = newFit.predictionDeviation(at: 0)
        uncertainty = TimeSpan(nanoseconds: Int64((3 * deviation).rounded(.up)))
        errorBound = TimeSpan(nanoseconds: (minRoundTrip + 1) / 2 + Int64((3 * deviation).rounded(.up)))
        driftPPM = (1 / (1 + slope) - 1) * 1_000_000
        driftUncertaintyPPM = slopeVariance.squareRoot() * 1_000_000

        if !acquired, scheduleCount >= configuration.burstCount, up.count >= configuration.burstCount {
            let target = Double(configuration.acquisitionTarget.nanoseconds)
            let extrapolation = 3 * slopeVariance.squareRoot() * Double(currentSteadyInterval.nanoseconds)
            if 3 * deviation <= target && extrapolation <= target { acquired = true }
        }
    }
}
