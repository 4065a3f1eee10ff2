import Foundation

extension SyncplayCodec {
    /// One line a server sends a client carrying `command`. As `encode`, except that a `List` carries the rooms
    /// and their users (a client's `List` is `null`), each with the keys Syncplay's clients read.
    public static func encodeForClient(_ command: SyncplayCommand) -> String {
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
        let data = (try? JSONSerialization.data(withJSONObject: ["List": list], options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
