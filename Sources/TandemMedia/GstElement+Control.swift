import CTandemGStreamer

// Pipeline control through GStreamer's own API: state changes, seeks and queries, which Swift calls directly
// (the C shim keeps only what Swift cannot import).
extension UnsafeMutablePointer where Pointee == GstElement {
    /// The element as the GstPipeline it is (`GST_PIPELINE()` in C, unchecked): only for the player's playbin.
    var asPipeline: UnsafeMutablePointer<GstPipeline> { UnsafeMutablePointer<GstPipeline>(OpaquePointer(self)) }

    /// Asks for `state`; false when the change failed at once (an asynchronous change counts as success).
    @discardableResult
    func setState(_ state: GstState) -> Bool {
        gst_element_set_state(self, state) != GST_STATE_CHANGE_FAILURE
    }

    /// A flushing, accurate seek to `position` (ns) at `rate`; false when no element handled it.
    func seek(to position: Int64, rate: Double) -> Bool {
        let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue)
        return gst_element_seek(self, rate, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, gint64(position),
                                GST_SEEK_TYPE_NONE, -1 /* GST_CLOCK_TIME_NONE */) != 0
    }

    /// The playback position (ns), nil when unknown.
    func queryPosition() -> Int64? {
        var position: gint64 = -1
        guard gst_element_query_position(self, GST_FORMAT_TIME, &position) != 0, position >= 0 else { return nil }
        return Int64(position)
    }

    /// The item's duration (ns), nil when unknown.
    func queryDuration() -> Int64? {
        var duration: gint64 = -1
        guard gst_element_query_duration(self, GST_FORMAT_TIME, &duration) != 0, duration >= 0 else { return nil }
        return Int64(duration)
    }

    /// The buffering level (0...100) the pipeline's buffering elements report, or nil when none answers.
    func queryBufferingPercent() -> Int? {
        guard let query = gst_query_new_buffering(GST_FORMAT_PERCENT) else { return nil }
        defer { gst_query_unref(query) }
        guard gst_element_query(self, query) != 0 else { return nil }
        var busy: gboolean = 0
        var percent: gint = 0
        gst_query_parse_buffering_percent(query, &busy, &percent)
        return Int(percent)
    }

    /// How far the data a download-buffered network source has fetched reaches from `fraction` of the stream
    /// (both 0...1 of its bytes), or nil when no element answers the buffering query (a local file).
    func queryDownloadedReach(from fraction: Double) -> Double? {
        guard let query = gst_query_new_buffering(GST_FORMAT_PERCENT) else { return nil }
        defer { gst_query_unref(query) }
        guard gst_element_query(self, query) != 0 else { return nil }
        let scale = 1_000_000.0  // GST_FORMAT_PERCENT_MAX
        for index in 0..<gst_query_get_n_buffering_ranges(query) {
            var start: gint64 = 0
            var stop: gint64 = 0
            guard gst_query_parse_nth_buffering_range(query, index, &start, &stop) != 0 else { continue }
            if Double(start) / scale <= fraction + 1e-6, fraction <= Double(stop) / scale { return Double(stop) / scale }
        }
        var format = GST_FORMAT_UNDEFINED
        var start: gint64 = -1
        var stop: gint64 = -1
        gst_query_parse_buffering_range(query, &format, &start, &stop, nil)
        guard format == GST_FORMAT_PERCENT, stop >= 0 else { return nil }
        return max(fraction, Double(stop) / scale)
    }

    /// Whether time seeking works.
    func querySeekable() -> Bool {
        guard let query = gst_query_new_seeking(GST_FORMAT_TIME) else { return false }
        defer { gst_query_unref(query) }
        var seekable: gboolean = 0
        if gst_element_query(self, query) != 0 {
            gst_query_parse_seeking(query, nil, &seekable, nil, nil)
        }
        return seekable != 0
    }

    /// The pipeline's minimum latency (ns), 0 when the query fails.
    func queryLatency() -> GstClockTime {
        guard let query = gst_query_new_latency() else { return 0 }
        defer { gst_query_unref(query) }
        guard gst_element_query(self, query) != 0 else { return 0 }
        var live: gboolean = 0
        var minimum: GstClockTime = 0
        var maximum: GstClockTime = 0
        gst_query_parse_latency(query, &live, &minimum, &maximum)
        return minimum != GstClockTime.max ? minimum : 0  // GST_CLOCK_TIME_IS_VALID
    }
}
