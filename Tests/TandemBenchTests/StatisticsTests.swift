import Testing
import TandemBench

@Suite("Statistics and tables")
struct StatisticsTests {
    @Test("a distribution's percentiles, maximum and mean")
    func distribution() {
        let values = (1...100).map(Double.init)
        let distribution = Distribution(values.shuffled())
        #expect(distribution.count == 100)
        #expect(distribution.p50 == 51)
        #expect(distribution.p99 == 100)
        #expect(distribution.max == 100)
        #expect(distribution.mean == 50.5)
    }

    @Test("an empty distribution has no figures")
    func empty() {
        let distribution = Distribution([])
        #expect(distribution.count == 0)
        #expect(distribution.p50.isNaN && distribution.max.isNaN && distribution.mean.isNaN)
    }

    @Test("least-squares slope")
    func slope() {
        #expect(linearSlope([(0, 1), (1, 3), (2, 5)]) == 2)
        #expect(linearSlope([(1, 1)]) == nil)
        #expect(linearSlope([(1, 1), (1, 2)]) == nil)
    }

    @Test("milliseconds keep three decimals below 10 ms, one above")
    func milliseconds() {
        #expect(ms(1_234_567) == "1.235 ms")
        #expect(ms(12_345_678) == "12.3 ms")
        #expect(ms(.nan) == "–")
    }

    @Test("a text table aligns its columns under a rule")
    func table() {
        var table = TextTable(["name", "ms"])
        table.add(["ann", "1.5"])
        table.add(["carol", "12"])
        #expect(table.rendered == ["name   ms ", "─────  ───", "ann    1.5", "carol  12 "].joined(separator: "\n"))
    }
}
