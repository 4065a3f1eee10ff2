import CTandemGStreamerShim
import TandemCore

/// One buffer a sink rendered: ground truth for tests and benchmarks.
public struct RenderRecord: Sendable, Hashable, Codable {
    /// Which kind of stream a record comes from.
    public enum StreamKind: String, Sendable, Hashable, Codable {
        case video, audio
    }

    /// Item time (stream time of the buffer's PTS in the sink's segment), ns.
    public var itemTime: Int64
    /// The true CLOCK_MONOTONIC time (ns) at which the sink released the buffer — not the peer's skewed view.
    public var monotonicTime: Int64
    public var kind: StreamKind
    /// True when measured after the sink's clock wait (fakesink handoff); false for a pad-probe estimate of the
    /// scheduled release time (other sinks; it does not see the device's own output delay).
    public var isExact: Bool

    public init(itemTime: Int64, monotonicTime: Int64, kind: StreamKind, isExact: Bool) {
        self.itemTime = itemTime
        self.monotonicTime = monotonicTime
        self.kind = kind
        self.isExact = isExact
    }

    init(_ record: tdm_gst_render_record) {
        self.init(itemTime: record.item_time, monotonicTime: record.monotonic_time,
                  kind: record.kind == Int32(TDM_GST_KIND_AUDIO) ? .audio : .video, isExact: record.exact != 0)
    }
}

/// What a player's sinks rendered, recorded in C on the streaming threads (a bounded ring, oldest overwritten).
///
/// `@unchecked Sendable`: the only state is a pointer to a C ring buffer whose every access takes its own mutex,
/// and which is reference counted so that it outlives both this object and the sinks writing to it.
public final class RenderProbe: @unchecked Sendable {
    let pointer: OpaquePointer

    /// A probe holding at most `capacity` records between drains.
    public init(capacity: Int = 8192) {
        pointer = tdm_gst_render_probe_new(UInt32(clamping: max(1, capacity)))
    }

    deinit { tdm_gst_render_probe_unref(pointer) }

    /// Removes and returns the records collected since the last drain, oldest first.
    public func drain() -> [RenderRecord] {
        var result: [RenderRecord] = []
        var buffer = [tdm_gst_render_record](repeating: tdm_gst_render_record(), count: 1024)
        while true {
            let count = buffer.withUnsafeMutableBufferPointer {
                tdm_gst_render_probe_drain(pointer, $0.baseAddress, $0.count)
            }
            result.append(contentsOf: buffer[0..<count].map(RenderRecord.init))
            if count < buffer.count { return result }
        }
    }

    /// The most recent record of `kind` (kept after draining), if any.
    public func latest(_ kind: RenderRecord.StreamKind) -> RenderRecord? {
        var record = tdm_gst_render_record()
        let cKind = kind == .audio ? Int32(TDM_GST_KIND_AUDIO) : Int32(TDM_GST_KIND_VIDEO)
        return tdm_gst_render_probe_latest(pointer, cKind, &record) != 0 ? RenderRecord(record) : nil
    }

    /// How many records were overwritten before they were drained.
    public var droppedCount: UInt64 { tdm_gst_render_probe_dropped(pointer) }
}
