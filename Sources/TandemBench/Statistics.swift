import Foundation
import Histogram

/// Summary statistics over a set of values (nanoseconds, usually): percentiles from an HdrHistogram (three
/// significant digits: a percentile is the highest value equivalent to the one at its rank), the exact maximum and
/// mean. Every percentile Tandem reports comes from here.
package struct Distribution: Codable, Equatable {
    package var count: Int
    package var p50: Double
    package var p99: Double
    package var max: Double
    package var mean: Double

    /// Statistics over integer values; an empty set has NaN figures.
    package init(_ values: [Int64]) {
        count = values.count
        let histogram = ShiftedHistogram(values)
        p50 = histogram.map { Double($0.value(atPercentile: 50)) } ?? .nan
        p99 = histogram.map { Double($0.value(atPercentile: 99)) } ?? .nan
        max = values.max().map(Double.init) ?? .nan
        mean = values.isEmpty ? .nan : values.reduce(0.0) { $0 + Double($1) } / Double(values.count)
    }

    /// The value at `percentile` (0–100) of `values`, nil when there are none.
    package static func percentile(_ percentile: Double, of values: [Int64]) -> Int64? {
        ShiftedHistogram(values)?.value(atPercentile: percentile)
    }

    /// The value at `percentile` (0–100) of real `values`, counted in steps of `resolution`; nil when there are none.
    package static func percentile(_ percentile: Double, of values: [Double], resolution: Double) -> Double? {
        let steps = values.map { Int64(($0 / resolution).rounded()) }
        return Self.percentile(percentile, of: steps).map { Double($0) * resolution }
    }
}

/// An HdrHistogram of signed values: recorded relative to the smallest (or to 0), since the histogram counts
/// unsigned values only.
private struct ShiftedHistogram {
    private var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
    private let base: Int64

    init?(_ values: [Int64]) {
        guard let smallest = values.min() else { return nil }
        base = Swift.min(smallest, 0)
        for value in values { _ = histogram.record(UInt64(value - base)) }
    }

    func value(atPercentile percentile: Double) -> Int64 {
        Int64(histogram.valueAtPercentile(percentile)) + base
    }
}

/// Least-squares slope of y over x (e.g. skew trend in ms per minute), nil with fewer than 2 points.
package func linearSlope(_ points: [(x: Double, y: Double)]) -> Double? {
    guard points.count >= 2 else { return nil }
    let n = Double(points.count)
    let mx = points.map(\.x).reduce(0, +) / n
    let my = points.map(\.y).reduce(0, +) / n
    var sxy = 0.0, sxx = 0.0
    for p in points {
        sxy += (p.x - mx) * (p.y - my)
        sxx += (p.x - mx) * (p.x - mx)
    }
    return sxx > 0 ? sxy / sxx : nil
}

/// Formats nanoseconds as milliseconds with a sensible precision.
package func ms(_ ns: Double) -> String {
    guard ns.isFinite else { return "–" }
    let v = ns / 1_000_000
    return abs(v) < 10 ? String(format: "%.3f ms", v) : String(format: "%.1f ms", v)
}
