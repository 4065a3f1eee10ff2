import TandemCrypto
import Foundation
import Synchronization
import TandemCore

/// `--share-media`: the host's queue items, offered to its session's members by HTTP range requests on the session
/// port (`GET /media/SESSION/ITEM?p=PARTICIPANT&t=TOKEN`), for native joiners without a copy as for browsers.
///
/// The token is `hex(HMAC-SHA256(SHA-256(secret), "tandem media v1\n" ‖ session ‖ "\n" ‖ item ‖ "\n" ‖ participant))`:
/// every member computes it from the invite, the server from the key it holds, and nobody without the invite can.
/// The participant in it is what the per-participant bound counts (`WebConfiguration.maxMediaStreamsPerParticipant`);
/// it is a member's claim, so the bound on all streams of the server is the one a dishonest member meets.
public final class SharedMedia: Sendable, Hashable {
    private let files = Mutex<[String: [String: Offer]]>([:])

    /// A file offered, and its content fingerprint when the host knows it (sent as `Tandem-Content-ID`, so that a
    /// joiner need not fetch two ranges of it to fingerprint what it streams).
    struct Offer: Sendable {
        var path: String
        var contentID: String?
    }

    public init() {}

    /// Offers `path` as the item `item` of `session` (replacing what was offered under that id).
    public func offer(session: String, item: String, path: String) {
        offer(session: session, item: item, path: path, contentID: nil)
    }

    /// Offers `path` as the item `item` of `session` (replacing what was offered under that id), with its content
    /// fingerprint (`MediaInfo.contentID`) when known.
    public func offer(session: String, item: String, path: String, contentID: String?) {
        files.withLock { $0[session, default: [:]][item] = Offer(path: path, contentID: contentID) }
    }

    /// Withdraws everything offered for `session`.
    public func withdraw(session: String) {
        _ = files.withLock { $0.removeValue(forKey: session) }
    }

    /// The file offered as `item` of `session`, or nil.
    public func path(session: String, item: String) -> String? {
        files.withLock { $0[session]?[item]?.path }
    }

    /// The content fingerprint the host gave with `item` of `session`, or nil.
    public func contentID(session: String, item: String) -> String? {
        files.withLock { $0[session]?[item]?.contentID }
    }

    public static func token(key: SymmetricKey, session: String, item: String, participant: String) -> String {
        let message = Data("tandem media v1\n\(session)\n\(item)\n\(participant)".utf8)
        return HMAC<SHA256>.authenticationCode(for: message, using: key).map { String(format: "%02x", $0) }.joined()
    }

    /// The URL a member streams `item` of `invite`'s session from, as `participant` (plain HTTP on the session port;
    /// HTTPS on a TLS server).
    public static func url(invite: Invite, item: String, participant: String) -> String {
        let token = token(key: SessionAuth.key(forSecret: invite.secret), session: invite.session, item: item,
                          participant: participant)
        let host = invite.host.contains(":") ? "[\(invite.host)]" : invite.host
        let scheme = invite.tls ? "https" : "http"
        return "\(scheme)://\(host):\(invite.port)/media/\(escape(invite.session))/\(escape(item))"
            + "?p=\(escape(participant))&t=\(token)"
    }

    static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }

    public static func == (lhs: SharedMedia, rhs: SharedMedia) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
