/// Ground truth for mpv's frames: which frame mpv's video output presented, and when, on CLOCK_MONOTONIC.
///
/// mpv gets two extra options. A video filter (`geq`, in the player before the output) paints a 32×2 strip over
/// each frame that spells the frame's own media time in milliseconds (`T`, its presentation timestamp) as black and
/// white cells: a white and a black cell to find it, 24 bits of the time, 6 bits of the time modulo 59 to check it.
/// The video output is `tct` (true-colour terminal), 32×1 cells on mpv's standard output: it is a timed output —
/// mpv's output thread waits until the frame's due time and then calls its flip, which writes the picture and
/// flushes — so the picture leaves mpv when it is presented. Syncplay starts mpv with Syncplay's own standard
/// output, so the bench reads the pictures from the Syncplay client's output pipe and stamps each on arrival.
///
/// What this measures: when mpv's output thread wrote the frame after its wait, plus the pipe's wake-up of the
/// reader (microseconds when the reader's core is free, milliseconds under load). It does not see what a real
/// display (vsync, compositor) or a real sound card (mpv's audio clock then follows the device; here `--ao=null`
/// runs on the monotonic clock) would add. It is exactly as "null" as the headless Tandem player's fake sinks.
package struct MpvFrameStamps: Sendable {
    /// Cells in the strip: 2 to find it, 24 bits of milliseconds, 6 check bits.
    static let cells = 32
    static let checkModulus: Int64 = 59

    /// mpv options (given after `--` on Syncplay's command line) that make mpv's output write stamped pictures.
    /// `--keepaspect=no` so the strip fills the 32×1 "terminal" cell for pixel; written `=no` because Syncplay
    /// passes each option on as `--name=value`.
    package static var mpvArguments: [String] {
        let ms = "round(T*1000)"
        let cell = "if(lt(X,2),eq(X,0),if(lt(X,26),mod(floor(\(ms)/pow(2,X-2)),2),"
            + "mod(floor(mod(\(ms),\(checkModulus))/pow(2,X-26)),2)))*219+16"
        return ["--vo=tct", "--vo-tct-algo=plain", "--vo-tct-width=\(cells)", "--vo-tct-height=1", "--keepaspect=no",
                "--ao=null", "--vf=lavfi=[crop=\(cells):2:0:0,geq=lum='\(cell)':cb=128:cr=128]"]
    }

    /// One presented frame: media time and arrival time, both ns.
    package typealias Frame = GroundTruth.Frame

    /// Bytes of an unfinished picture (or text) kept between reads; beyond this much without a picture's end, the
    /// kept bytes are given up as text.
    static let maximumPending = 16 * 1024
    private static let start: [UInt8] = Array("\u{1B}[0;0f".utf8)
    private static let end: [UInt8] = Array("\u{1B}[0m".utf8)

    private var pending: [UInt8] = []
    /// The last frame found: mpv redraws the current picture (e.g. when Syncplay shows a message while paused), and
    /// a redraw is not a new presentation.
    private var last: Int64?
    /// Pictures that were not a valid stamp (mpv's black frames before the first decoded one, a torn strip).
    package private(set) var rejected = 0

    package init() {}

    /// Takes what arrived from the output pipe at `arrival` (CLOCK_MONOTONIC ns); returns the frames it completed
    /// and the bytes that were not pictures (the Syncplay client's own text).
    package mutating func consume(_ bytes: some Sequence<UInt8>, arrival: Int64) -> (frames: [Frame], text: [UInt8]) {
        pending.append(contentsOf: bytes)
        var frames: [Frame] = []
        var text: [UInt8] = []
        var index = 0
        while index < pending.count {
            guard let begin = Self.find(Self.start, in: pending, from: index) else {
                // Keep back only a tail that is the beginning of a picture's first bytes: text goes on at once.
                let tail = (max(index, pending.count - Self.start.count + 1)..<pending.count).first {
                    Self.start.starts(with: pending[$0...])
                } ?? pending.count
                text.append(contentsOf: pending[index..<tail])
                index = tail
                break
            }
            text.append(contentsOf: pending[index..<begin])
            guard let finish = Self.find(Self.end, in: pending, from: begin) else {
                index = begin
                break
            }
            let picture = pending[(begin + Self.start.count)..<finish]
            if let item = Self.decode(picture) {
                if item != last { frames.append(Frame(item: item, time: arrival)) }
                last = item
            } else {
                rejected += 1
            }
            index = finish + Self.end.count
        }
        pending.removeFirst(index)
        if pending.count > Self.maximumPending {
            text.append(contentsOf: pending)
            pending = []
        }
        return (frames, text)
    }

    /// The media time (ns) a strip spells, nil unless it is one: 32 cells, each clearly black or white, the marker
    /// and the check bits right.
    static func decode(_ picture: ArraySlice<UInt8>) -> Int64? {
        // Each cell is `ESC[48;2;R;G;Bm ` (a background colour and a space).
        var bits: [Bool] = []
        var position = picture.startIndex
        let prefix = Array("\u{1B}[48;2;".utf8)
        while position < picture.endIndex {
            guard picture[position...].starts(with: prefix) else { return nil }
            position += prefix.count
            var channels: [Int] = []
            var value = 0
            var digits = 0
            while position < picture.endIndex {
                let byte = picture[position]
                position += 1
                if byte >= 0x30, byte <= 0x39, digits < 3 {
                    value = value * 10 + Int(byte - 0x30)
                    digits += 1
                } else if (byte == 0x3B || byte == 0x6D), digits > 0 {
                    channels.append(value)
                    value = 0
                    digits = 0
                    if byte == 0x6D { break }
                } else {
                    return nil
                }
            }
            guard channels.count == 3, position < picture.endIndex, picture[position] == 0x20 else { return nil }
            position += 1
            if channels.allSatisfy({ $0 >= 192 }) {
                bits.append(true)
            } else if channels.allSatisfy({ $0 < 64 }) {
                bits.append(false)
            } else {
                return nil
            }
            if bits.count > cells { return nil }
        }
        guard bits.count == cells, bits[0], !bits[1] else { return nil }
        let milliseconds = bits[2..<26].enumerated().reduce(Int64(0)) { $0 | ($1.element ? Int64(1) << $1.offset : 0) }
        let check = bits[26..<32].enumerated().reduce(Int64(0)) { $0 | ($1.element ? Int64(1) << $1.offset : 0) }
        guard milliseconds % checkModulus == check else { return nil }
        return milliseconds * 1_000_000
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard haystack.count >= needle.count, from <= haystack.count - needle.count else { return nil }
        var index = from
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
