import Testing
import TandemCore
import TandemTesting

@Suite struct ClockSyncFiguresTests {
    @Test func printsFigures() {
        let table = ClockSyncSimulation.benchmark(
            profiles: [.loopback, .lan, .wan(loss: 0.02), .harsh, .asymmetric], duration: 90, seed: 1, runs: 20)
        print(table)
    }
}
