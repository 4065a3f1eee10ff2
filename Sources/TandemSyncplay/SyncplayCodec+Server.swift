import Foundation

extension SyncplayCodec {
    /// One line a server sends a client carrying `command`. As `encode`, except that a `List` carries the rooms
    /// and their users (a client's `List` is `null`), each with the keys Syncplay's clients read.
    public static func encodeForClient(_ command: SyncplayCommand) -> String {
        // Syncplay's clients read `user` (and `index`) of a playlist setting unconditionally: null, not absent.
        if case .set(let settings) = command, settings.count == 1 {
            switch settings[0] {
            case .playlistChange(let user, let files):
                return json(["Set": ["playlistChange": ["user": user.map { $0 as Any } ?? NSNull(), "files": files] as [String: Any]]])
            case .playlistIndex(let user, let index):
                return json(["Set": ["playlistIndex": ["user": user.map { $0 as Any } ?? NSNull(),
                                                       "index": index.map { $0 as Any } ?? NSNull()] as [String: Any]]])
            default:
                break
            }
        }
        guard case .list(let rooms) = command else { return encode(command) }
        var list: [String: Any] = [:]
        for (room, users) in rooms {
            var members: [String: Any] = [:]
            for (name, user) in users {
                members[name] = [
                    "position": 0, "file": user.file.map(fileJSON) ?? [String: Any](), "controller": user.controller,
                    "isReady": user.isReady.map { $0 as Any } ?? NSNull(), "features": [String: Any](),
                ] as [String: Any]
            }
            list[room] = members
        }
        return json(["List": list])
    }

    private static func json(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
