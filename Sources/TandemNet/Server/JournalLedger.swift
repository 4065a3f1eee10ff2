import Synchronization
import TandemCore

/// The journal bytes a server holds across its sessions, per source address of their uploads and in all, within
/// `ServerConfiguration.maxJournalBytesPerAddress` and `maxJournalBytes`. Each session's own quotas (per
/// participant, per session) are its authority's; these stop an address that creates sessions of its own from
/// multiplying them, and bound the server as a whole.
final class JournalLedger: Sendable {
    let perAddress: Int64
    let total: Int64
    private let held = Mutex<(total: Int64, byAddress: [String: Int64])>((0, [:]))

    init(perAddress: Int64, total: Int64) {
        self.perAddress = perAddress
        self.total = total
    }

    /// Reserves `bytes` for an upload from `address`, or says why not in words for the uploader.
    func reserve(_ bytes: Int64, for address: String) -> String? {
        held.withLock { held in
            let own = held.byAddress[address] ?? 0
            if own + bytes > perAddress {
                return "this server holds at most \(AuthorityText.bytes(perAddress)) of attachments from one address, "
                    + "and yours already hold \(AuthorityText.bytes(own)); remove one first"
            }
            if held.total + bytes > total {
                return "this server's attachment space (\(AuthorityText.bytes(total))) is full; try a smaller attachment later"
            }
            held.total += bytes
            held.byAddress[address] = own + bytes
            return nil
        }
    }

    /// Counts `bytes` held already (a session restored after a restart), whatever the bounds.
    func restore(_ bytes: Int64, for address: String) {
        held.withLock { held in
            held.total += bytes
            held.byAddress[address, default: 0] += bytes
        }
    }

    func release(_ bytes: Int64, for address: String) {
        held.withLock { held in
            held.total -= bytes
            let left = (held.byAddress[address] ?? bytes) - bytes
            held.byAddress[address] = left > 0 ? left : nil
        }
    }

    /// Bytes held in all, and for `address`.
    var totalHeld: Int64 { held.withLock { $0.total } }
    func held(by address: String) -> Int64 { held.withLock { $0.byAddress[address] ?? 0 } }
}
