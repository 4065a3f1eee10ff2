import Foundation

/// Writes a line plot as a self-contained SVG: one series per peer plus vertical command markers.
package struct SVGPlot {
    package struct Series {
        package var name: String
        /// (x seconds, y value)
        package var points: [(Double, Double)]
    }
    package struct Marker {
        package var x: Double
        package var label: String
    }

    package var title: String
    package var xLabel: String
    package var yLabel: String
    package var series: [Series]
    package var markers: [Marker]
    /// Values beyond ±`clip` are drawn at the edge (and counted in a note), so that one spike does not flatten
    /// everything else; nil shows everything.
    package var clip: Double?
    package var width = 1000.0
    package var height = 440.0

    private static let palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                                  "#7f7f7f", "#bcbd22", "#17becf"]

    /// Round tick spacing (1, 2 or 5 × a power of ten) for about `count` ticks over `span`.
    package static func tickStep(span: Double, count: Int) -> Double {
        let raw = span / Double(max(1, count))
        let magnitude = pow(10, floor(log10(raw)))
        for factor in [1.0, 2.0, 5.0, 10.0] where raw <= factor * magnitude { return factor * magnitude }
        return 10 * magnitude
    }

    package func render() -> String {
        let left = 70.0, right = 150.0, top = 64.0, bottom = 50.0
        let plotW = width - left - right, plotH = height - top - bottom
        let xs = series.flatMap { $0.points.map(\.0) } + markers.map(\.x)
        var ys = series.flatMap { $0.points.map(\.1) }
        var clipped = 0
        if let clip {
            clipped = ys.filter { abs($0) > clip }.count
            ys = ys.map { Swift.min(Swift.max($0, -clip), clip) }
        }
        let xMin = xs.min() ?? 0, xMax = Swift.max(xs.max() ?? 1, xMin + 1e-9)
        var yMin = Swift.min(ys.min() ?? 0, 0), yMax = Swift.max(ys.max() ?? 1, 0)
        if yMax - yMin < 1e-9 { yMax = yMin + 1 }
        let yStep = Self.tickStep(span: yMax - yMin, count: 6)
        yMin = floor(yMin / yStep) * yStep
        yMax = ceil(yMax / yStep) * yStep
        func px(_ x: Double) -> Double { left + (x - xMin) / (xMax - xMin) * plotW }
        func py(_ y: Double) -> Double { top + (1 - (y - yMin) / (yMax - yMin)) * plotH }
        func esc(_ s: String) -> String {
            s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;")
        }
        func number(_ v: Double) -> String {
            abs(v) < 1e-12 ? "0" : String(format: "%g", (v * 1e6).rounded() / 1e6)
        }
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="22" font-size="15" font-weight="bold">\(esc(title))</text>

            """
        if clipped > 0, let clip {
            svg += "<text x=\"\(left)\" y=\"38\" font-size=\"11\" fill=\"#a00\">\(clipped) points beyond ±\(number(clip)) drawn at the edge</text>\n"
        }
        svg += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(plotW)\" height=\"\(plotH)\" fill=\"none\" stroke=\"#999\"/>\n"
        var y = yMin
        while y <= yMax + yStep / 2 {
            svg += "<line x1=\"\(left)\" x2=\"\(left + plotW)\" y1=\"\(py(y))\" y2=\"\(py(y))\" stroke=\"\(abs(y) < 1e-12 ? "#bbb" : "#eee")\"/>"
            svg += "<text x=\"\(left - 6)\" y=\"\(py(y) + 4)\" text-anchor=\"end\">\(number(y))</text>\n"
            y += yStep
        }
        let xStep = Self.tickStep(span: xMax - xMin, count: 10)
        var x = ceil(xMin / xStep) * xStep
        while x <= xMax {
            svg += "<text x=\"\(px(x))\" y=\"\(top + plotH + 18)\" text-anchor=\"middle\">\(number(x))</text>\n"
            x += xStep
        }
        svg += "<text x=\"\(left + plotW / 2)\" y=\"\(height - 10)\" text-anchor=\"middle\">\(esc(xLabel))</text>\n"
        svg += "<text transform=\"translate(16,\(top + plotH / 2)) rotate(-90)\" text-anchor=\"middle\">\(esc(yLabel))</text>\n"
        // Marker labels sit in three staggered rows above the plot so that neighbours do not overlap.
        // On long runs only the labels that have room are written; every marker keeps its line.
        var lastLabelled = [-Double.infinity, -Double.infinity, -Double.infinity]
        for (index, m) in markers.enumerated() {
            let row = index % 3
            let x = px(m.x)
            let labelled = x - lastLabelled[row] > 6 * Double(m.label.count) + 8
            if labelled { lastLabelled[row] = x }
            let y = top - 24 + Double(row) * 8
            svg += "<line x1=\"\(x)\" x2=\"\(x)\" y1=\"\(labelled ? y + 2 : top)\" y2=\"\(top + plotH)\" stroke=\"#ddd\" stroke-dasharray=\"4 3\"/>"
            if labelled { svg += "<text x=\"\(x + 2)\" y=\"\(y)\" font-size=\"9\" fill=\"#666\">\(esc(m.label))</text>" }
            svg += "\n"
        }
        for (i, s) in series.enumerated() where !s.points.isEmpty {
            let color = Self.palette[i % Self.palette.count]
            let path = s.points.map { point -> String in
                let value = clip.map { Swift.min(Swift.max(point.1, -$0), $0) } ?? point.1
                return String(format: "%.1f,%.1f", px(point.0), py(value))
            }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.1\" points=\"\(path)\"/>\n"
            let ly = top + 10 + Double(i) * 15
            svg += "<rect x=\"\(left + plotW + 12)\" y=\"\(ly - 9)\" width=\"10\" height=\"10\" fill=\"\(color)\"/>"
            svg += "<text x=\"\(left + plotW + 28)\" y=\"\(ly)\">\(esc(s.name))</text>\n"
        }
        svg += "</svg>\n"
        return svg
    }
}
