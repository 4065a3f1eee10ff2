import Foundation

/// Formats an item time as m:ss (or h:mm:ss).
package func formatClock(_ ns: Int64) -> String {
    let total = max(0, Int(ns / 1_000_000_000))
    let h = total / 3600, m = (total % 3600) / 60, s = total % 60
    return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
}
