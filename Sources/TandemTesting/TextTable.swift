/// A plain text table with aligned columns under a rule: the one renderer of every table Tandem prints (benchmark
/// reports, the clock-sync simulation, the demo).
package struct TextTable: Sendable {
    package enum Alignment: Sendable { case left, right }

    package var header: [String]
    package var rows: [[String]] = []
    /// Columns aligned to the right (numbers); the others to the left.
    package var rightAligned: Set<Int>
    /// The character of the rule under the header.
    package var rule: Character

    package init(_ header: [String], rightAligned: Set<Int> = [], rule: Character = "─") {
        self.header = header
        self.rightAligned = rightAligned
        self.rule = rule
    }

    package mutating func add(_ row: [String]) { rows.append(row) }

    /// The header, the rule and the rows, one line each (every cell padded to its column's width).
    package var rendered: String {
        let all = [header] + rows
        let widths = header.indices.map { i in all.map { $0.indices.contains(i) ? $0[i].count : 0 }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                let pad = String(repeating: " ", count: max(0, widths[i] - cell.count))
                return rightAligned.contains(i) ? pad + cell : cell + pad
            }.joined(separator: "  ")
        }
        return ([line(header), widths.map { String(repeating: rule, count: $0) }.joined(separator: "  ")]
            + rows.map(line)).joined(separator: "\n")
    }
}
