import Foundation
import Tandem

/// A joiner's way to the host's copies (`--share-media`): each item's URL on the session port, and whether to
/// prefer them to a local copy (`tandem join --stream`).
package struct HostStreams: Sendable {
    /// The host's name, for the status line ("streaming from ann").
    package var host: String
    /// Prefer the host's copy to one in the media directory.
    package var preferred: Bool
    /// The URL of an item by its id.
    package var url: @Sendable (_ itemID: String) -> String
    /// The URLs resolved so far (to tell a streamed item from a local or fallback one).
    var resolved: Set<String> = []
    /// Told the host's fingerprint of an item before its URL is used (the relay's loopback server says it).
    package var knows: (@Sendable (_ itemID: String, _ contentID: String) -> Void)?

    package init(host: String, preferred: Bool, url: @escaping @Sendable (_ itemID: String) -> String) {
        self.host = host
        self.preferred = preferred
        self.url = url
    }
}

extension QueueMedia {
    /// The host's side: offers every registered item, now and later, through `offer` (the server's `SharedMedia`).
    package func share(through offer: @escaping @Sendable (_ itemID: String, _ path: String) -> Void) {
        self.offer.withLock { $0 = offer }
        for (item, path) in knownItems { offer(item, path) }
    }

    /// The host's side on a relay: offers every item that is a file through `connection`, whose range requests a
    /// `RelayedMediaHost` answers (kept by the caller: it answers while it lives).
    package func relayThrough(_ connection: TandemClientConnection, session: String) -> RelayedMediaHost {
        let offers = SharedMedia()
        share { item, path in
            // Items that are URLs are not the host's to serve.
            guard !path.contains("://") else { return }
            offers.offer(session: session, item: item, path: path)
        }
        return RelayedMediaHost(connection: connection, offers: offers)
    }

    /// Whether the host offers its items (so that the ones it adds later are marked shared too).
    package var sharesItems: Bool { offer.withLock { $0 != nil } }

    /// A joiner's side: the host's copies `streams` may be played.
    package func streamFrom(_ streams: HostStreams) {
        self.streams.withLock { $0 = streams }
    }

    /// The host it streams from, when `location` is one of its copies.
    package func streamingHost(of location: String) -> String? {
        streams.withLock { streams in streams.flatMap { $0.resolved.contains(location) ? $0.host : nil } }
    }

    /// The URL of the host's copy of `media`, when it shares it and this joiner may stream (with `preferredOnly`,
    /// only when it prefers the host's copy); remembered as this item's location.
    func streamURL(for media: MediaActivity, itemID: String, preferredOnly: Bool) -> String? {
        guard media.sharedByHost == true else { return nil }
        let url: String? = streams.withLock { streams in
            guard let current = streams, !preferredOnly || current.preferred else { return nil }
            if let contentID = media.contentID { current.knows?(itemID, contentID) }
            let url = current.url(itemID)
            streams?.resolved.insert(url)
            return url
        }
        if let url { register(itemID: itemID, location: url) }
        return url
    }
}
