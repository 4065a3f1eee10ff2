import Foundation
import Tandem

/// What `tandem host` shares: one media file, described well enough that a joiner can tell whether its own copy
/// is the same (name, duration, content fingerprint) and where to get one (the metadata's fallback URL).
package struct MediaActivity: GroupActivity, Hashable {
    package static let activityIdentifier = "org.tandem.media"

    package var metadata: GroupActivityMetadata
    /// The host's file name, so a joiner can find its copy by name.
    package var fileName: String
    /// The host's item duration, when known (encoded as bare nanoseconds).
    package var duration: TimeSpan?
    /// The host's content fingerprint (`MediaProbe.contentID`), when known.
    package var contentID: String?
    /// The host offers this item to the members over HTTP (`--share-media`): a joiner without a copy streams it.
    package var sharedByHost: Bool?
    /// The host's copy passes through the session's relay (`tandem serve --relay-media`), sealed, rather than from
    /// the host's embedded server: a joiner reads it with `mediaRequest`s on its session link.
    package var sharedThroughRelay: Bool?
    /// The item is this http(s) URL (`tandem host https://…`): every peer streams it from there itself.
    package var url: String?

    /// The id the playback timeline uses for this item.
    package var itemID: String { contentID ?? fileName }

    /// The activity for a probed file; `title` and `type` default from the media itself.
    package init(probe: MediaProbe, path: String, title: String?, subtitle: String?, type: ActivityType?, fallbackURL: URL?) {
        let web = Self.isWebURL(path) ? URL(string: path) : nil
        let fileName = web.map { $0.lastPathComponent.isEmpty || $0.lastPathComponent == "/" ? ($0.host ?? path) : $0.lastPathComponent }
            ?? URL(fileURLWithPath: path).lastPathComponent
        let defaultType: ActivityType = probe.hasVideo ? .watchTogether : .listenTogether
        metadata = GroupActivityMetadata(title: title ?? probe.title ?? fileName, subtitle: subtitle,
                                         fallbackURL: fallbackURL, type: type ?? defaultType)
        self.fileName = fileName
        duration = probe.duration
        contentID = probe.contentID
        url = web == nil ? nil : path
    }

    /// Whether `location` is an http:// or https:// URL (an item every peer streams itself).
    package static func isWebURL(_ location: String) -> Bool {
        let lower = location.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// An activity known only by its file name (a Syncplay room's playlist entry), with `metadata` as given.
    package init(metadata: GroupActivityMetadata, fileName: String) {
        self.metadata = metadata
        self.fileName = fileName
        duration = nil
        contentID = nil
    }

    package var envelope: ActivityEnvelope {
        get throws { try envelope(itemID: itemID) }
    }

    /// Why a local file is not the host's, or nil when it looks the same.
    package func difference(from probe: MediaProbe) -> String? {
        if let mine = probe.contentID, let theirs = contentID, mine != theirs {
            if let a = probe.duration, let b = duration, (a - b).magnitude > .seconds(1.5) {
                return String(format: "your file lasts %.1f s, the host's %.1f s", a.seconds, b.seconds)
            }
            return "your file's content differs from the host's (\(fileName))"
        }
        if let a = probe.duration, let b = duration, (a - b).magnitude > .seconds(1.5) {
            return String(format: "your file lasts %.1f s, the host's %.1f s", a.seconds, b.seconds)
        }
        return nil
    }

    /// One line describing the activity, as a joiner sees it before playing.
    /// The header's lines about an activity's metadata: its type and where to get the media.
    package static func metadataLines(_ metadata: GroupActivityMetadata) -> [String] {
        var line = "Type: \(metadata.type.rawValue)"
        if let url = metadata.fallbackURL { line += " · get it from \(url.absoluteString)" }
        return [line]
    }

    package var summary: String {
        var parts = ["\"\(metadata.title ?? fileName)\""]
        if let subtitle = metadata.subtitle { parts.append("— \(subtitle)") }
        parts.append("(\(metadata.type.rawValue)")
        if let duration { parts[parts.count - 1] += ", \(formatClock(duration.nanoseconds))" }
        parts[parts.count - 1] += ")"
        return parts.joined(separator: " ")
    }
}
