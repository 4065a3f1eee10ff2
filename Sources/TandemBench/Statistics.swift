import Foundation

/// Summary statistics over a set of values (nanoseconds or anything else).
package struct Distribution: Codable, Equatable {
    package var count: Int
    package var p50: Double
    package var p99: Double
    package var max: Double
    package var mean: Double

    package init(_ values: [Double]) {
        let sorted = values.sorted()
        count = sorted.count
        func quantile(_ q: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            let index = min(sorted.count - 1, Int((q * Double(sorted.count - 1)).rounded(.up)))
            return sorted[index]
        }
        p50 = quantile(0.5)
        p99 = quantile(0.99)
        max = sorted.last ?? .nan
        mean = sorted.isEmpty ? .nan : sorted.reduce(0, +) / Double(sorted.count)
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

/// A plain text table with aligned columns.
package struct TextTable {
    package var header: [String]
    package var rows: [[String]] = []
    package init(_ header: [String]) { self.header = header }
    package mutating func add(_ row: [String]) { rows.append(row) }
    package var rendered: String {
        let all = [header] + rows
        let widths = header.indices.map { i in all.map { $0.indices.contains(i) ? $0[i].count : 0 }.max() ?? 0 }
        func line(_ r: [String]) -> String {
            r.enumerated().map { i, c in c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
        }
        return ([line(header), widths.map { String(repeating: "─", count: $0) }.joined(separator: "  ")]
            + rows.map(line)).joined(separator: "\n")
    }
}
