import Testing
import TandemBench
import TandemTesting
import TandemPeer
import Tandem

@Suite("Statistics and tables")
struct StatisticsTests {
    @Test("a distribution's percentiles (nearest rank, from the histogram), exact maximum and mean")
    func distribution() {
        let distribution = Distribution((1...100).map(Int64.init).shuffled())
        #expect(distribution.count == 100)
        #expect(distribution.p50 == 50)
        #expect(distribution.p99 == 99)
        #expect(distribution.max == 100)
        #expect(distribution.mean == 50.5)
    }

    @Test("an empty distribution has no figures")
    func empty() {
        let distribution = Distribution([])
        #expect(distribution.count == 0)
        #expect(distribution.p50.isNaN && distribution.max.isNaN && distribution.mean.isNaN)
        #expect(Distribution.percentile(50, of: [Int64]()) == nil)
    }

    @Test("percentiles keep three significant digits, and take negative values")
    func precision() {
        let latencies: [Int64] = [1_234_567, 2_345_678, 3_456_789]
        let p50 = Distribution.percentile(50, of: latencies)!
        #expect(p50 >= 2_345_678 && Double(p50 - 2_345_678) / 2_345_678 < 0.001)
        #expect(Distribution.percentile(100, of: latencies) == 3_456_789)
        #expect(Distribution.percentile(50, of: [-30, -20, -10, 0, 10]) == -10)
        #expect(Distribution.percentile(99.9, of: [0.25, 0.5, 1.5], resolution: 0.001) == 1.5)
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

@Suite("Peers as processes: render logs and links from the environment")
struct ProcessBenchPartsTests {
    @Test("the time namespace's shift of CLOCK_MONOTONIC is read as the kernel writes it")
    func monotonicOffset() {
        #expect(RenderLog.monotonicOffset("monotonic           8         0\nboottime            8         0\n") == 8_000_000_000)
        #expect(RenderLog.monotonicOffset("boottime 2 0\nmonotonic -3 500\n") == -2_999_999_500)
        #expect(RenderLog.monotonicOffset("") == 0)
        #expect(RenderLog.monotonicOffset(nil) == 0)
    }

    @Test("TANDEM_BENCH_LINK: a known profile impairs the connection; an unknown one or a bad seed says what to use")
    func benchLink() throws {
        let plain = try BenchLink.applying(to: .init(), environment: [:])
        #expect(plain.transportHandlers == nil)
        let wan = try BenchLink.applying(to: .init(), environment: [BenchLink.variable: "wan:7"])
        #expect(wan.transportHandlers != nil && wan.clockProbesOverDatagrams == false)
        // Datagrams cross the same simulated path, and timelines come as datagrams too unless told otherwise.
        #expect(wan.datagramDelays != nil && wan.timelinesOverDatagrams)
        let tcpOnly = try BenchLink.applying(to: .init(), environment: [BenchLink.variable: "wan:7:tcp-timelines"])
        #expect(tcpOnly.transportHandlers != nil && !tcpOnly.timelinesOverDatagrams)
        #expect { try BenchLink.applying(to: .init(), environment: [BenchLink.variable: "wan:7:fast"]) } throws: {
            "\($0)".contains("the only word after the seed is tcp-timelines")
        }
        #expect(try BenchLink.applying(to: .init(), environment: [BenchLink.variable: "loopback"]).transportHandlers == nil)
        #expect { try BenchLink.applying(to: .init(), environment: [BenchLink.variable: "moon"]) } throws: {
            "\($0)".contains("no such link profile; use one of loopback, lan, wan")
        }
        #expect { try BenchLink.applying(to: .init(), environment: [BenchLink.variable: "wan:x"]) } throws: {
            "\($0)".contains("whole number")
        }
    }
}
