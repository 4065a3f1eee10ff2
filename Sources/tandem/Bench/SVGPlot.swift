import Foundation

/// Writes a line plot as a self-contained SVG: one series per peer plus vertical command markers.
struct SVGPlot {
    struct Series {
        var name: String
        /// (x seconds, y value)
        var points: [(Double, Double)]
    }
    struct Marker {
        var x: Double
        var label: String
    }

    var title: String
    var xLabel: String
    var yLabel: String
    var series: [Series]
    var markers: [Marker]
    var width = 960.0
    var height = 420.0

    private static let palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                                  "#7f7f7f", "#bcbd22", "#17becf"]

    func render() -> String {
        let left = 70.0, right = 160.0, top = 40.0, bottom = 50.0
        let plotW = width - left - right, plotH = height - top - bottom
        let xs = series.flatMap { $0.points.map(\.0) } + markers.map(\.x)
        let ys = series.flatMap { $0.points.map(\.1) }
        let xMin = xs.min() ?? 0, xMax = Swift.max(xs.max() ?? 1, xMin + 1e-9)
        var yMin = Swift.min(ys.min() ?? 0, 0), yMax = ys.max() ?? 1
        if yMax - yMin < 1e-9 { yMax = yMin + 1 }
        let pad = (yMax - yMin) * 0.05
        yMin -= pad
        yMax += pad
        func px(_ x: Double) -> Double { left + (x - xMin) / (xMax - xMin) * plotW }
        func py(_ y: Double) -> Double { top + (1 - (y - yMin) / (yMax - yMin)) * plotH }
        func esc(_ s: String) -> String {
            s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;")
        }
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="24" font-size="15" font-weight="bold">\(esc(title))</text>
            <rect x="\(left)" y="\(top)" width="\(plotW)" height="\(plotH)" fill="none" stroke="#999"/>

            """
        for i in 0...5 {
            let y = yMin + (yMax - yMin) * Double(i) / 5
            svg += "<line x1=\"\(left)\" x2=\"\(left + plotW)\" y1=\"\(py(y))\" y2=\"\(py(y))\" stroke=\"#eee\"/>"
            svg += "<text x=\"\(left - 6)\" y=\"\(py(y) + 4)\" text-anchor=\"end\">\(String(format: "%.3g", y))</text>\n"
            let x = xMin + (xMax - xMin) * Double(i) / 5
            svg += "<text x=\"\(px(x))\" y=\"\(top + plotH + 18)\" text-anchor=\"middle\">\(String(format: "%.0f", x))</text>\n"
        }
        svg += "<text x=\"\(left + plotW / 2)\" y=\"\(height - 10)\" text-anchor=\"middle\">\(esc(xLabel))</text>\n"
        svg += "<text transform=\"translate(16,\(top + plotH / 2)) rotate(-90)\" text-anchor=\"middle\">\(esc(yLabel))</text>\n"
        for m in markers {
            svg += "<line x1=\"\(px(m.x))\" x2=\"\(px(m.x))\" y1=\"\(top)\" y2=\"\(top + plotH)\" stroke=\"#bbb\" stroke-dasharray=\"4 3\"/>"
            svg += "<text x=\"\(px(m.x) + 2)\" y=\"\(top + 12)\" font-size=\"10\" fill=\"#666\">\(esc(m.label))</text>\n"
        }
        for (i, s) in series.enumerated() where !s.points.isEmpty {
            let color = Self.palette[i % Self.palette.count]
            let path = s.points.map { String(format: "%.1f,%.1f", px($0.0), py($0.1)) }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.2\" points=\"\(path)\"/>\n"
            let ly = top + 14 + Double(i) * 16
            svg += "<rect x=\"\(left + plotW + 12)\" y=\"\(ly - 9)\" width=\"10\" height=\"10\" fill=\"\(color)\"/>"
            svg += "<text x=\"\(left + plotW + 28)\" y=\"\(ly)\">\(esc(s.name))</text>\n"
        }
        svg += "</svg>\n"
        return svg
    }
}
