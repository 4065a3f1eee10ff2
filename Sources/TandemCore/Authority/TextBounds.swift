import Foundation

/// Bounds on the text peers put into shared state (names, titles, notices, attachment names), so one peer cannot
/// grow what everyone else receives (a welcome, a participants list) past the frame limit, or forge lines in a
/// log or a terminal. Pure functions; the authority applies them once, where the text enters the session.
///
/// Lengths are UTF-8 bytes. Truncation happens at a `Character` boundary within the limit, so no grapheme is cut
/// in half (a single `Character` larger than the limit is dropped whole).
public enum TextBounds {
    /// Longest participant name.
    public static let maxNameBytes = 64
    /// The name of a participant whose name is empty once cleaned.
    public static let defaultName = "guest"
    /// Longest activity title (longer ones are truncated).
    public static let maxTitleBytes = 256
    /// Longest activity subtitle (longer ones are truncated).
    public static let maxSubtitleBytes = 512
    /// Longest activity identifier, item id, activity type or fallback URL. These identify things, so a longer
    /// one is refused rather than truncated.
    public static let maxIdentifierBytes = 1024
    /// Longest journal attachment name as the authority sees it (longer ones are truncated). Names travel sealed
    /// (base64 of a box: 4/3 × (name + 28) bytes), so this leaves room for a sealed `maxPlainAttachmentNameBytes`.
    public static let maxAttachmentNameBytes = 512
    /// Longest attachment name a participant seals (longer ones are truncated before sealing).
    public static let maxPlainAttachmentNameBytes = 255
    /// Longest journal attachment id; a longer one is refused (chunks refer to the id, so it cannot be cut).
    public static let maxAttachmentIDBytes = 128
    /// Longest announced checksum (a SHA-256 in hex is 64).
    public static let maxChecksumBytes = 128
    /// Longest notice text and longest reason a peer gives (a failed load, a failed attachment).
    public static let maxNoticeBytes = 512
    /// Longest suspension reason and media fingerprint or title a peer reports.
    public static let maxReasonBytes = 128
    /// Most suspensions one participant holds at once.
    public static let maxSuspensionsPerParticipant = 16

    /// A display name fit to show and log: control characters (Unicode category Cc: newline, tab, escape, …),
    /// format characters (Cf, e.g. bidirectional overrides; the zero-width joiner and non-joiner stay, emoji
    /// and some scripts need them) and line and paragraph separators (Zl, Zp) removed, surrounding whitespace
    /// trimmed, at most `maxNameBytes`; `defaultName` when nothing is left.
    public static func name(_ raw: String) -> String {
        let bounded = truncated(printablePrefix(raw, maxBytes: maxNameBytes, skippingLeadingWhitespace: true),
                                maxBytes: maxNameBytes)
            .trimmingCharacters(in: .whitespaces)
        return bounded.isEmpty ? defaultName : bounded
    }

    /// Text shown on one line (titles, notices, reasons): cleaned like a name, then truncated to `maxBytes`.
    public static func line(_ raw: String, maxBytes: Int) -> String {
        truncated(printablePrefix(raw, maxBytes: maxBytes, skippingLeadingWhitespace: false), maxBytes: maxBytes)
    }

    /// The printable scalars of `raw` up to a few more than `maxBytes` of them: every `Character` that can end
    /// within `maxBytes` bytes lies in that prefix, so truncating it gives the same result as truncating all of
    /// `raw`, without scanning (or breaking into Characters) a megabyte a peer sent.
    static func printablePrefix(_ raw: String, maxBytes: Int, skippingLeadingWhitespace: Bool) -> String {
        var scalars = String.UnicodeScalarView()
        var count = 0
        var skipping = skippingLeadingWhitespace
        for scalar in raw.unicodeScalars where !isUnprintable(scalar) {
            if skipping {
                if scalar.properties.isWhitespace { continue }
                skipping = false
            }
            scalars.append(scalar)
            count += 1
            if count > maxBytes + 8 { break }
        }
        return String(scalars)
    }

    /// `text` cut at the last `Character` boundary that keeps it within `maxBytes` UTF-8 bytes.
    public static func truncated(_ text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var used = 0
        var end = text.startIndex
        for index in text.indices {
            let size = text[index].utf8.count
            guard used + size <= maxBytes else { break }
            used += size
            end = text.index(after: index)
        }
        return String(text[..<end])
    }

    /// Control, format (except ZWJ/ZWNJ) and line or paragraph separator characters.
    static func isUnprintable(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        case .format: return scalar.value != 0x200C && scalar.value != 0x200D
        default: return false
        }
    }

    /// Whether two reconnect tokens are equal. Compares every byte of equal-length tokens without stopping at the
    /// first difference, so the time taken does not reveal how much of a guess was right (a best effort: this
    /// module has no constant-time primitive, and the length of a token is not secret). Empty tokens never match.
    public static func tokensMatch(_ presented: String, _ expected: String) -> Bool {
        let a = Array(presented.utf8), b = Array(expected.utf8)
        guard !b.isEmpty, a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
