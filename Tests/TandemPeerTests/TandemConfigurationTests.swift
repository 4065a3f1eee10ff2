import Testing
import TandemPeer

@Suite("config.toml: a default relay and port mapping")
struct TandemConfigurationTests {
    @Test("the keys it knows, comments, quotes and escapes; every mistake names the file, the line and what to write")
    func parsing() throws {
        let text = """
            # Tandem
            relay = "tandem://relay.example.org:7420"   # ours
            relay-create-token-file = "/home/ann/.config/tandem/token \\"a\\""

            port-mapping = false
            """
        let parsed = try TandemConfiguration.parse(text, path: "config.toml")
        #expect(parsed == TandemConfiguration(relay: "tandem://relay.example.org:7420",
                                              relayCreateTokenFile: "/home/ann/.config/tandem/token \"a\"", portMapping: false))
        #expect(try TandemConfiguration.parse("", path: "c") == TandemConfiguration())
        for (bad, says) in [("relays = \"x\"", "line 1: unknown key 'relays'"), ("relay", "line 1: no '='"),
                            ("\n\nrelay = x", "line 3: 'x' is neither a quoted text nor true or false"),
                            ("relay = \"x", "no closing quote"), ("relay = \"x\" y", "something after the closing quote"),
                            ("port-mapping = \"no\"", "'port-mapping' takes true or false"),
                            ("relay = true", "'relay' takes a quoted text")] {
            do {
                _ = try TandemConfiguration.parse(bad, path: "/home/ann/.config/tandem/config.toml")
                Issue.record("\\(bad) was taken")
            } catch {
                #expect(error.exit == .usage && error.description.contains(says)
                        && error.description.hasPrefix("/home/ann/.config/tandem/config.toml line "), "\\(error)")
            }
        }
    }

    @Test("found at TANDEM_CONFIG, else $XDG_CONFIG_HOME/tandem/config.toml, else ~/.config/tandem/config.toml; a missing default file is no settings, a missing TANDEM_CONFIG an error")
    func location() throws {
        #expect(TandemConfiguration.path(environment: ["TANDEM_CONFIG": "/etc/t.toml", "XDG_CONFIG_HOME": "/x"]) == "/etc/t.toml")
        #expect(TandemConfiguration.path(environment: ["XDG_CONFIG_HOME": "/x", "HOME": "/h"]) == "/x/tandem/config.toml")
        #expect(TandemConfiguration.path(environment: ["HOME": "/h"]) == "/h/.config/tandem/config.toml")
        #expect(try TandemConfiguration.load(environment: ["XDG_CONFIG_HOME": "/nonexistent-tandem"]) == TandemConfiguration())
        #expect(throws: PeerFailure.self) { try TandemConfiguration.load(environment: ["TANDEM_CONFIG": "/nonexistent-tandem.toml"]) }
    }
}
