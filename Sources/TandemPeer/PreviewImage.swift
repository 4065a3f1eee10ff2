import Foundation
import Tandem

/// The host's preview image (`tandem host --preview FILE`), shared through the session's journal: small, and an
/// image by its first bytes.
package struct PreviewImage: Codable, Sendable, Equatable {
    /// The largest preview image, in bytes.
    package static let maxBytes = 256 * 1024
    /// The largest journal attachment a joiner loads as a preview: the image as JSON (base64) and sealed.
    package static let maxAttachmentBytes = Int64(maxBytes * 4 / 3 + 64 * 1024)

    /// `png`, `jpeg`, `gif` or `webp`.
    package let format: String
    package let bytes: Data

    /// Why a file cannot be a preview image, in words that say what to do.
    package enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case tooLarge(bytes: Int)
        case notAnImage
        case unreadable(String)
        package var description: String {
            switch self {
            case .tooLarge(let bytes):
                return "the preview image is \(bytes) bytes; the limit is \(PreviewImage.maxBytes) (256 KiB) — use a smaller image"
            case .notAnImage:
                return "the preview is not a PNG, JPEG, GIF or WebP image (judged by its first bytes) — give an image file"
            case .unreadable(let why): return "cannot read the preview image: \(why)"
            }
        }
    }

    /// The image format by its magic bytes, or nil.
    package static func format(of data: Data) -> String? {
        let b = [UInt8](data.prefix(12))
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "png" }
        if b.starts(with: [0xFF, 0xD8, 0xFF]) { return "jpeg" }
        if b.starts(with: Array("GIF87a".utf8)) || b.starts(with: Array("GIF89a".utf8)) { return "gif" }
        if b.count >= 12, b.starts(with: Array("RIFF".utf8)), Array(b[8..<12]) == Array("WEBP".utf8) { return "webp" }
        return nil
    }

    /// Checks `bytes`: at most `maxBytes`, and an image by its first bytes.
    package init(bytes: Data) throws(Problem) {
        guard bytes.count <= Self.maxBytes else { throw .tooLarge(bytes: bytes.count) }
        guard let format = Self.format(of: bytes) else { throw .notAnImage }
        self.format = format
        self.bytes = bytes
    }

    /// Reads and checks a file (its size before reading it).
    /// The image `tandem host --preview PATH` names (nil without the option), or a usage failure saying why not.
    package static func read(option path: String?) throws(PeerFailure) -> PreviewImage? {
        guard let path else { return nil }
        do throws(Problem) { return try read(path: path) } catch { throw PeerFailure(.usage, "--preview: \(error)") }
    }

    package static func read(path: String) throws(Problem) -> PreviewImage {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard let size = (attributes?[.size] as? NSNumber)?.intValue else {
            throw .unreadable("no such file: \(path)")
        }
        guard size <= maxBytes else { throw .tooLarge(bytes: size) }
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable("cannot read \(path)") }
        return try PreviewImage(bytes: data)
    }

    /// A decoded value is checked again: the bytes came from the network.
    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let bytes = try c.decode(Data.self, forKey: .bytes)
        guard bytes.count <= Self.maxBytes, let format = Self.format(of: bytes) else {
            throw DecodingError.dataCorruptedError(forKey: .bytes, in: c,
                                                   debugDescription: "not an image of at most \(Self.maxBytes) bytes")
        }
        self.format = format
        self.bytes = bytes
    }

    private enum CodingKeys: String, CodingKey { case format, bytes }

    /// Waits for the first preview image someone other than `me` shared in `journal`, loads it (only it: nothing
    /// else is fetched) and writes it to `directory`; returns the path and the image, or nil when the journal ends
    /// first. An attachment over `maxAttachmentBytes` or not an image is skipped, with `problem` saying why.
    package static func receive(from journal: GroupSessionJournal, me: ParticipantID, directory: URL, session: String,
                                problem: @Sendable (String) -> Void) async -> (path: String, image: PreviewImage)? {
        var tried: Set<String> = []
        for await list in journal.attachments {
            for attachment in list where attachment.info.owner != me && attachment.holds(PreviewImage.self)
                && !tried.contains(attachment.id) {
                tried.insert(attachment.id)
                guard attachment.info.size <= maxAttachmentBytes else {
                    problem("ignored a preview image of \(attachment.info.size) bytes (the limit is \(maxAttachmentBytes))")
                    continue
                }
                do {
                    let image = try await attachment.load(PreviewImage.self)
                    let safeSession = session.filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
                    let file = directory.appendingPathComponent("tandem-preview-\(safeSession).\(image.format)")
                    try image.bytes.write(to: file, options: .atomic)
                    return (file.path, image)
                } catch {
                    problem("could not use the host's preview image: \(error)")
                }
            }
        }
        return nil
    }
}
