import Foundation
import Synchronization
import Tandem

/// Where this participant finds each item of the session's queue: the host's own files by item id; a joiner's by
/// the host's file name in a media directory, checked against the host's content fingerprint, or else the item's
/// fallback URL. Problems are reported through `onWarning` (a different file plays, with a warning, as for a
/// single item; a missing one without a fallback URL fails to load, and the group goes on without this peer for
/// that item).
package final class QueueMedia: Sendable {
    /// Where a joiner looks for items by file name (nil: only registered items are known).
    package let directory: String?
    /// A Syncplay room's media directories: items are looked for there instead (`MediaDirectories`).
    package let directories: MediaDirectories?
    private let known = Mutex<[String: String]>([:])
    private let warningSink = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// The host's: where each registered item is offered to the members (`--share-media`).
    let offer = Mutex<(@Sendable (_ itemID: String, _ path: String) -> Void)?>(nil)
    /// A joiner's: the host's copies it may stream (`share(…)`), and the stream URLs it resolved to.
    let streams = Mutex<HostStreams?>(nil)
    /// The host's: whether its items pass to the joiners through the session's relay (marked on items added later).
    let relaysItems = Atomic<Bool>(false)

    package init(directory: String?) {
        self.directory = directory
        directories = nil
    }

    /// Finds items by name in `directories`, as a Syncplay client finds a room's playlist entries.
    package init(directories: MediaDirectories) {
        directory = nil
        self.directories = directories
    }

    /// Says where the item `itemID` is (the host's files, a joiner's file given on the command line).
    package func register(itemID: String, location: String) {
        known.withLock { $0[itemID] = location }
        let offer = self.offer.withLock { $0 }
        offer?(itemID, location)
    }

    /// The items registered so far (id, location).
    var knownItems: [(String, String)] { known.withLock { $0.map { ($0.key, $0.value) } } }

    /// Where problems are reported (replaces the previous receiver).
    package func onWarning(_ receiver: @escaping @Sendable (String) -> Void) {
        warningSink.withLock { $0 = receiver }
    }

    func warn(_ text: String) {
        let sink = warningSink.withLock { $0 }
        sink?(text)
    }

    /// The path or URI to load for `envelope`'s item.
    package func location(for envelope: ActivityEnvelope) async -> String {
        if let location = known.withLock({ $0[envelope.itemID] }) { return location }
        guard let media = MediaActivity(envelope) else { return envelope.itemID }
        if let directories { return await resolve(media, itemID: envelope.itemID, in: directories) }
        let location = await resolve(media, itemID: envelope.itemID, title: envelope.metadata.title ?? media.fileName)
        register(itemID: envelope.itemID, location: location)
        return location
    }

    /// An item that is a URL plays from there; else finds `media` in the directory (checking its fingerprint), else
    /// the host's copy when it shares it, else its fallback URL; the host's copy first with `--stream`.
    private func resolve(_ media: MediaActivity, itemID: String, title: String) async -> String {
        if let url = media.url { return url }
        let directory = self.directory ?? FileManager.default.currentDirectoryPath
        if let stream = streamURL(for: media, itemID: itemID, preferredOnly: true) { return stream }
        let candidate = URL(fileURLWithPath: directory).appendingPathComponent(media.fileName).path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue {
            if let probe = try? await MediaProbe.probe(candidate), let difference = media.difference(from: probe) {
                warn("\(media.fileName): \(difference) — you may not be watching the same thing")
            }
            return candidate
        }
        if let stream = streamURL(for: media, itemID: itemID, preferredOnly: false) {
            warn("\"\(title)\" (\(media.fileName)) is not in \(directory); streaming the host's copy")
            return stream
        }
        if let url = media.metadata.fallbackURL {
            warn("\"\(title)\" (\(media.fileName)) is not in \(directory); playing it from \(url.absoluteString)")
            return url.absoluteString
        }
        warn("\"\(title)\" (\(media.fileName)) is not in \(directory) and the host gave no fallback URL — put a copy "
            + "there; the group goes on without you for this item")
        return candidate
    }
}

extension QueueMedia {
    /// Finds a room's entry by name in the media directories (not remembered when missing, so that a copy put there
    /// later is found). A missing or refused entry resolves to nothing playable, so nothing else plays in its place.
    private func resolve(_ media: MediaActivity, itemID: String, in directories: MediaDirectories) async -> String {
        switch directories.resolve(media.fileName) {
        case .file(let path):
            if let probe = try? await MediaProbe.probe(path), let difference = media.difference(from: probe) {
                warn("\(media.fileName): \(difference) — you may not be watching the same thing")
            }
            register(itemID: itemID, location: path)
            return path
        case .url(let url):
            return url
        case .missing:
            warn("\(MediaDirectories.fileName(of: media.fileName)) is not in \(directories.described) — put a copy in one of "
                + "them (or add a directory with --media-dir); nothing plays here for this item")
            return ""
        case .refused(let why):
            warn("the Syncplay room's entry \"\(media.fileName)\" is not played: \(why)")
            return ""
        }
    }
}

/// What a host shares: the first item as the session's activity, the others as the queue after it, each registered
/// where it plays from.
package struct HostedItems: Sendable {
    package let activity: MediaActivity
    package let envelope: ActivityEnvelope
    package let following: [QueueEntry]
    package let media: QueueMedia

    /// What is wrong with a host's `--type` and `--fallback-url`, in words that say what to do; nil when nothing is.
    package static func problem(type: String?, fallbackURL: String?) -> String? {
        if let type, type.isEmpty || !type.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" }) {
            return "--type must be a word such as watchTogether or listenTogether"
        }
        if let fallbackURL, URL(string: fallbackURL)?.scheme == nil {
            return "--fallback-url must be a full URL, e.g. https://example.com/movie.webm"
        }
        return nil
    }

    /// Probes every path (`probe` turns a failure into the caller's error) and builds the activity of the first with
    /// the host's `title`, `subtitle`, `type` and `fallbackURL`. An item that cannot be encoded is a `PeerFailure`.
    package static func make(paths: [String], title: String?, subtitle: String?, type: ActivityType?, fallbackURL: URL?,
                             shared: Bool = false, probe: (String) async throws -> MediaProbe) async throws -> HostedItems {
        do {
            return try await items(paths: paths, title: title, subtitle: subtitle, type: type, fallbackURL: fallbackURL,
                                   shared: shared, probe: probe)
        } catch let error as PeerFailure { throw error } catch let error as EncodingError {
            throw PeerFailure(.failure, "cannot encode the activity: \(error)")
        }
    }

    private static func items(paths: [String], title: String?, subtitle: String?, type: ActivityType?, fallbackURL: URL?,
                              shared: Bool, probe: (String) async throws -> MediaProbe) async throws -> HostedItems {
        let media = QueueMedia(directory: nil)
        var activity: MediaActivity?
        var following: [QueueEntry] = []
        for (index, path) in paths.enumerated() {
            let probed = try await probe(path)
            var item = index == 0
                ? MediaActivity(probe: probed, path: path, title: title, subtitle: subtitle, type: type, fallbackURL: fallbackURL)
                : MediaActivity(probe: probed, path: path, title: nil, subtitle: nil, type: nil, fallbackURL: nil)
            if shared, !path.contains("://") { item.sharedByHost = true }
            media.register(itemID: item.itemID, location: path)
            if index == 0 { activity = item } else {
                following.append(QueueEntry(activity: try item.envelope, contentID: probed.contentID))
            }
        }
        guard let activity else { throw PeerFailure(.usage, "no media to host") }
        return HostedItems(activity: activity, envelope: try activity.envelope, following: following, media: media)
    }

    /// These items with every shared one marked as passing through the session's relay (`sharedThroughRelay`).
    package func throughRelay() throws -> HostedItems {
        media.relaysItems.store(true, ordering: .relaxed)
        var activity = activity
        if activity.sharedByHost == true { activity.sharedThroughRelay = true }
        let following = try following.map { entry in
            guard var item = MediaActivity(entry.activity), item.sharedByHost == true else { return entry }
            item.sharedThroughRelay = true
            var marked = entry
            marked.activity = try item.envelope(itemID: entry.activity.itemID)
            return marked
        }
        return HostedItems(activity: activity, envelope: try activity.envelope, following: following, media: media)
    }
}

extension HostedItems {
    /// What `host` prints before the session starts: what is shared, its metadata, the invite, how others join, and
    /// (with `web`) the browser link — on loopback too when the invite's address is not, since browsers give
    /// plain-http pages WebCrypto only there.
    package func header(invite: Invite, paths: [String], web: Bool) -> [String] {
        var hosting = "Hosting \(activity.summary)"
        var joinLine = "Others join with: TANDEM_INVITE='\(invite)' tandem join \(activity.fileName)"
        if activity.url != nil { joinLine = "Others join with: TANDEM_INVITE='\(invite)' tandem join (everyone streams the URL)" }
        if !following.isEmpty {
            hosting += " and \(following.count) more in the queue"
            joinLine = "Others join with: TANDEM_INVITE='\(invite)' tandem join --media-dir DIR "
                + "(DIR holds \(paths.map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: ", ")))"
        }
        var header = [hosting] + MediaActivity.metadataLines(activity.metadata) + ["Invite: \(invite)", joinLine]
        if activity.sharedByHost == true {
            header.append("Sharing your copy (--share-media): a joiner without one streams it from this machine")
        }
        guard web else { return header }
        let links = WebPage.links(for: invite)
        header.append("Browser: \(links.link)")
        if let loopback = links.loopback {
            header.append("  on this machine: \(loopback) (elsewhere: --tls-cert, or an SSH tunnel)")
        }
        return header
    }

    /// Shares what the session does not have yet once the host has joined: the activity (a session created on a
    /// relay starts without one), the rest of the queue, and the preview image (a failure there is only a warning).
    package func share(from peer: LocalPeer, setActivity: Bool, preview: PreviewImage?,
                       warn: (String) -> Void) async throws(PeerFailure) {
        if setActivity {
            do { try await peer.session.setActivity(activity, itemID: activity.itemID) } catch {
                throw PeerFailure(.failure, "could not set the session's activity: \(error)")
            }
        }
        if !following.isEmpty {
            do { try await peer.session.addToQueue(entries: following) } catch {
                throw PeerFailure(.failure, "could not share the queue: \(error)")
            }
        }
        if let preview {
            do { try await peer.journal.add(preview) } catch { warn("could not share the preview image: \(error)") }
        }
    }
}
