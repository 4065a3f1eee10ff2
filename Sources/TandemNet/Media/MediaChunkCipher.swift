import TandemCrypto
import Foundation

/// Seals the host's shared media end to end as it passes a relay, chunk by chunk, each chunk bound to its place in
/// its item; built as `AppDataCipher` is, with a key of its own:
///
/// - key = HKDF-SHA256(input key material: UTF-8 of the invite's secret, salt: UTF-8 of the session id,
///   info: UTF-8 of "tandem shared media v1"), 32 bytes;
/// - box = nonce (12 random bytes) ‖ AES-256-GCM ciphertext ‖ tag (16 bytes), the associated data being
///   "tandem shared media v1\n" ‖ session ‖ "\n" ‖ item ‖ "\n" ‖ offset (u64 BE) ‖ length (u32 BE) ‖ item size
///   (u64 BE): a box opens only as the bytes `offset ..< offset + length` of that item of that size, so a relay can
///   neither move, swap nor splice chunks, nor lie about the item's size.
///
/// The relay holds SHA-256 of the secret only, so it cannot derive this key; it sees the sizes of the chunks.
/// Sendable by hand: its stored values are immutable after `init`.
package struct MediaChunkCipher: @unchecked Sendable {
    package static let info = "tandem shared media v1"
    package static let overhead = AppDataCipher.nonceSize + AppDataCipher.tagSize

    private let key: SymmetricKey
    package let session: String

    package init(secret: String, session: String) {
        self.session = session
        key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: Data(secret.utf8)),
                                     salt: Data(session.utf8), info: Data(Self.info.utf8), outputByteCount: 32)
    }

    package init(invite: Invite) {
        self.init(secret: invite.secret, session: invite.session)
    }

    package func associatedData(item: String, offset: Int64, length: Int, itemSize: Int64) -> Data {
        var data = Data("\(Self.info)\n\(session)\n\(item)\n".utf8)
        withUnsafeBytes(of: UInt64(bitPattern: offset).bigEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(clamping: length).bigEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt64(bitPattern: itemSize).bigEndian) { data.append(contentsOf: $0) }
        return data
    }

    package func seal(_ plaintext: Data, item: String, offset: Int64, itemSize: Int64) throws -> Data {
        let box = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(),
                                   authenticating: associatedData(item: item, offset: offset, length: plaintext.count,
                                                                  itemSize: itemSize))
        // A 12-byte nonce always has a combined form.
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        return combined
    }

    /// The plaintext of `box`, which must hold the `length` bytes at `offset` of `item` of `itemSize` bytes.
    package func open<Bytes: DataProtocol>(_ box: Bytes, item: String, offset: Int64, length: Int,
                                           itemSize: Int64) throws -> Data {
        try AES.GCM.open(AES.GCM.SealedBox(combined: box), using: key,
                         authenticating: associatedData(item: item, offset: offset, length: length, itemSize: itemSize))
    }
}
