import Foundation

/// The user's settings for `tandem host`, from `$XDG_CONFIG_HOME/tandem/config.toml` (default
/// `~/.config/tandem/config.toml`; `TANDEM_CONFIG` names another file). A small part of TOML: `key = "text"`,
/// `key = true|false`, comments after `#`, blank lines. The keys:
///
/// - `relay = "tandem://relay.example.org:7420"` — a default relay: `host` keeps its own embedded server when people
///   outside can reach it (a port mapped on the router, IPv6, a public address) and otherwise hosts on this relay,
///   and says which;
/// - `relay-create-token-file = "/path/to/token"` — the creation token that relay asks for, if any;
/// - `port-mapping = false` — never ask the router for a port (as `--no-port-mapping`).
///
/// An unknown key or a line that is not one of these is an error naming the file and the line.
package struct TandemConfiguration: Sendable, Equatable {
    package static let variable = "TANDEM_CONFIG"
    package static let keys = ["relay", "relay-create-token-file", "port-mapping"]

    package var relay: String?
    package var relayCreateTokenFile: String?
    package var portMapping: Bool?

    package init(relay: String? = nil, relayCreateTokenFile: String? = nil, portMapping: Bool? = nil) {
        self.relay = relay
        self.relayCreateTokenFile = relayCreateTokenFile
        self.portMapping = portMapping
    }

    /// Where the file is looked for.
    package static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let path = environment[variable], !path.isEmpty { return path }
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.config")
        return base + "/tandem/config.toml"
    }

    /// The settings (none when there is no file; one named by `TANDEM_CONFIG` must exist).
    package static func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws(PeerFailure) -> Self {
        let path = path(environment: environment)
        guard FileManager.default.fileExists(atPath: path) else {
            if environment[variable] != nil { throw PeerFailure(.usage, "\(variable)=\(path): no such file") }
            return Self()
        }
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              (attributes[.size] as? Int ?? 0) <= 64 * 1024,
              let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw PeerFailure(.usage, "\(path): cannot read it as text of at most 64 KiB")
        }
        return try parse(text, path: path)
    }

    package static func parse(_ text: String, path: String) throws(PeerFailure) -> Self {
        var configuration = Self()
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            func bad(_ why: String) -> PeerFailure {
                PeerFailure(.usage, "\(path) line \(index + 1): \(why) — write key = \"text\" or key = true|false "
                    + "(keys: \(keys.joined(separator: ", ")))")
            }
            guard let equals = line.firstIndex(of: "=") else { throw bad("no '='") }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = try Self.value(line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces), bad: bad)
            switch (key, value) {
            case ("relay", .text(let text)): configuration.relay = text
            case ("relay-create-token-file", .text(let text)): configuration.relayCreateTokenFile = text
            case ("port-mapping", .flag(let flag)): configuration.portMapping = flag
            case _ where !keys.contains(key): throw bad("unknown key '\(key)'")
            default: throw bad("'\(key)' takes \(key == "port-mapping" ? "true or false" : "a quoted text")")
            }
        }
        return configuration
    }

    private enum Value { case text(String), flag(Bool) }

    /// A quoted text (with \" and \\) or a flag, then nothing but a comment.
    private static func value(_ text: String, bad: (String) -> PeerFailure) throws(PeerFailure) -> Value {
        if text.hasPrefix("\"") {
            var result = ""
            var escaped = false
            for (offset, character) in text.dropFirst().enumerated() {
                if escaped { result.append(character); escaped = false; continue }
                if character == "\\" { escaped = true; continue }
                if character == "\"" {
                    let rest = text.dropFirst(offset + 2).trimmingCharacters(in: .whitespaces)
                    guard rest.isEmpty || rest.hasPrefix("#") else { throw bad("something after the closing quote") }
                    return .text(result)
                }
                result.append(character)
            }
            throw bad("no closing quote")
        }
        let word = text.split(separator: "#", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        switch word {
        case "true": return .flag(true)
        case "false": return .flag(false)
        default: throw bad("'\(word)' is neither a quoted text nor true or false")
        }
    }
}

extension TandemConfiguration {
    /// The default relay and the creation token it asks for (read from its file), when the file names a relay.
    package func fallbackRelay() throws(PeerFailure) -> (address: String, createToken: String?)? {
        guard let relay else { return nil }
        return (relay, try relayCreateTokenFile.map(CreateToken.read))
    }
}
