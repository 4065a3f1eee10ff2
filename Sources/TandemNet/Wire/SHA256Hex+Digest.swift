import TandemCrypto
import Foundation
import TandemCore

extension SHA256Hex {
    /// The SHA-256 of `data` in hex.
    package static func digest(_ data: Data) -> String { hex(SHA256.hash(data: data)) }
}
