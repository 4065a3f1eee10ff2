import TandemCore

// Starting on time: preroll where the start is, and when that cannot be made in time, join the timeline a little
// further on, where this peer can make it (up to four attempts, each allowing more time).
extension GStreamerPlayer {
    /// Where a start asked for at `itemTime` / `sessionTime` can really begin: the pipeline is prerolled there,
    /// and the session time is not yet past.
    func prerollForStart(from itemTime: Int64, atSessionTime sessionTime: Int64,
                         rate: Double) throws(PlaybackError) -> (itemTime: Int64, sessionTime: Int64) {
        let margin = Nanos.milliseconds(5)
        let line = ItemProjection(from: SessionInstant(nanoseconds: sessionTime), to: ItemTime(nanoseconds: itemTime),
                                  rate: rate)
        var startItem = itemTime
        var startSession = sessionTime
        for attempt in 0..<4 {
            let prepared = state.withLock { $0.transport.prepared }
            let now = sessionTimeNow()
            if prepared == Prepared(itemTime: startItem, rate: rate), startSession >= now + margin {
                break
            }
            if startSession >= now + prerollEstimate.nanoseconds {
                try prepareOnQueue(at: startItem, rate: rate)
                continue
            }
            // Too late to start at `sessionTime`: join the timeline a little ahead, where this peer can make it.
            let lead = prerollEstimate.nanoseconds * Int64(attempt + 1) + Nanos.milliseconds(30)
            startSession = max(sessionTime, now + lead)
            startItem = line(SessionInstant(nanoseconds: startSession)).nanoseconds
            if let duration = state.withLock({ $0.transport.info?.duration?.nanoseconds }), startItem >= duration {
                throw .seekOutOfRange(itemTime: startItem, duration: duration)
            }
            try prepareOnQueue(at: startItem, rate: rate)
        }
        let now = sessionTimeNow()
        guard state.withLock({ $0.transport.prepared }) == Prepared(itemTime: startItem, rate: rate),
              startSession >= now else {
            throw .engineFailure("could not preroll in time to start at session time \(sessionTime)")
        }
        return (startItem, startSession)
    }
}
