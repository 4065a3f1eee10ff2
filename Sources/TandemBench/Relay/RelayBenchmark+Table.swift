import Foundation
import TandemTesting

extension RelayBenchmark.Result {
    /// Several runs side by side: where the relay stops meeting its targets.
    package static func table(_ rows: [RelayBenchmark.Result]) -> String {
        var table = TextTable(["participants", "sessions", "msg/s", "p50 ms", "p99 ms", "max ms", "lost", "server MB", "server CPU",
                               "µs/delivery (kernel)", "generator", "targets"])
        for r in rows {
            table.add(["\(r.joined)/\(r.configuration.participants)", "\(r.configuration.sessions)",
                       String(format: "%.0f", Double(r.configuration.participants) * r.configuration.messagesPerSecond),
                       ms(Double(r.p50)).replacingOccurrences(of: " ms", with: ""),
                       ms(Double(r.p99)).replacingOccurrences(of: " ms", with: ""),
                       ms(Double(r.max)).replacingOccurrences(of: " ms", with: ""), "\(r.lost)",
                       r.serverResidentMemory.map { String(format: "%.1f", Double($0) / 1_048_576) } ?? "–",
                       r.serverCPUPercent.map { String(format: "%.0f %%", $0) } ?? "–",
                       r.serverMicrosecondsPerDelivery.map { String(format: "%.2f", $0) + (r.serverKernelMicrosecondsPerDelivery.map { String(format: " (%.2f)", $0) } ?? "") } ?? "–",
                       r.generatorCPUPercent.map { String(format: "%.0f %%", $0) + (r.generatorSaturated ? " SATURATED" : r.generatorLagged ? " LAGGED" : "") } ?? "–",
                       r.meetsTargets ? "met" : "missed"])
        }
        let what = rows.first?.isFloor == true ? "the bare relay (system calls only: this machine's floor)" : "one server"
        return "where it breaks (\(what), one core):\n" + table.rendered
    }
}
