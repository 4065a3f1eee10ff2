import Foundation

/// A check of `MpvFrameStamps` against mpv's own record of its flips.
///
/// With `--dump-stats=FILE` mpv's output thread writes `<µs> end video-flip` right after each flip (the call that
/// writes a picture); its clock is CLOCK_MONOTONIC less a constant fixed when mpv starts. The constant is found as
/// the one that puts the most arrivals next to a flip (only it fits across the run's breaks — play, seek, pause —
/// where a whole frame's shift does not); what is left for each picture is how much later than the quickest it
/// reached the bench. A delay common to every picture does not show.
package enum MpvFlipCheck {
    /// mpv options that write its stats to `file`.
    package static func arguments(file: String) -> [String] { ["--dump-stats=\(file)"] }

    /// The `end video-flip` stamps in `file` (ns on mpv's clock), in order; at most the first 64 MiB are read.
    package static func flips(in file: String) -> [Int64] {
        guard let handle = FileHandle(forReadingAtPath: file) else { return [] }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: 64 << 20)) ?? Data()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard line.hasSuffix(" end video-flip"), let micro = Int64(line.prefix { $0 != " " }) else { return nil }
            return micro * 1_000
        }
    }

    /// For each arrival (ns, CLOCK_MONOTONIC) that lies near a flip once mpv's clock is placed, how much later than
    /// the quickest 1 % it came (ns; the quickest are slightly negative); empty when the two cannot be placed.
    package static func delays(arrivals: [Int64], flips: [Int64]) -> [Int64] {
        let flips = flips.sorted()
        guard arrivals.count >= 10, flips.count >= 10 else { return [] }
        /// Arrival less flip for the flip nearest `arrival - offset`.
        func nearest(_ arrival: Int64, _ offset: Int64) -> Int64 {
            let time = arrival - offset
            var low = 0, high = flips.count
            while low < high {
                let mid = (low + high) / 2
                if flips[mid] <= time { low = mid + 1 } else { high = mid }
            }
            let before = low > 0 ? time - flips[low - 1] : .max
            let after = low < flips.count ? flips[low] - time : .max
            return before <= after ? before : -after
        }
        // The arrivals' own delays vary by a millisecond or two, so a placement counts those within 3 ms of a flip.
        func score(_ offset: Int64, _ sample: [Int64]) -> Int {
            sample.reduce(0) { abs(nearest($1, offset)) <= 3_000_000 ? $0 + 1 : $0 }
        }
        // Candidates: a few arrivals against every flip; scored on a sample, the best few again on every arrival.
        let sample = stride(from: 0, to: arrivals.count, by: max(1, arrivals.count / 60)).map { arrivals[$0] }
        let anchors = stride(from: 0, to: arrivals.count, by: max(1, arrivals.count / 10)).map { arrivals[$0] }
        var candidates: [(offset: Int64, score: Int)] = []
        for anchor in anchors {
            for flip in flips { candidates.append((anchor - flip, score(anchor - flip, sample))) }
        }
        var offset: Int64?
        var bestScore = -1
        for candidate in candidates.sorted(by: { $0.score > $1.score }).prefix(24) {
            let full = score(candidate.offset, arrivals)
            if full > bestScore {
                offset = candidate.offset
                bestScore = full
            }
        }
        guard let offset else { return [] }
        // Within a third of a frame of a flip: farther is a picture whose flip is not there to place it against.
        let raw = arrivals.map { nearest($0, offset) }.filter { abs($0) <= 11_000_000 }
        guard let quickest = Distribution.percentile(1, of: raw) else { return [] }
        return raw.map { $0 - quickest }
    }
}
