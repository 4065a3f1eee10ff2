import Foundation
import Testing
import TandemPeer

/// Which command-line values carry a secret, what the warning names, and where a secret option's value comes from.
@Suite("Secrets on the command line")
struct CommandLineSecretsTests {
    @Test("an invite or a server address with a #secret given as an argument warns, naming the ways off the command line; other sources and bare addresses do not")
    func warnings() {
        #expect(CommandLineSecrets.holdsSecret("tandem://h:7420/s#Zr8x"))
        #expect(!CommandLineSecrets.holdsSecret("tandem://h:7420"))
        #expect(!CommandLineSecrets.holdsSecret("tandem://h:7420/s#"))
        let invite = "tandem://10.0.0.2:7420/s#Zr8x"
        let joining = CommandLineSecrets.warnings(invite: .argument(invite))
        #expect(joining.count == 1)
        for way in ["--invite-file FILE", "as - ", "TANDEM_INVITE", "/proc"] {
            #expect(joining.first?.contains(way) == true, "\(way) missing in \(joining)")
        }
        #expect(joining.first?.contains("Zr8x") == false, "the warning does not repeat the secret")
        for safe: InviteSource in [.file("invite.txt"), .standardInput, .environment(invite)] {
            #expect(CommandLineSecrets.warnings(invite: safe).isEmpty, "\(safe)")
        }
        let hosting = CommandLineSecrets.warnings(server: .argument(invite))
        #expect(hosting.count == 1 && hosting[0].contains("--server-file FILE") && hosting[0].contains("TANDEM_SERVER"))
        #expect(CommandLineSecrets.warnings(server: .argument("tandems://relay.example.org:7420")).isEmpty)
        #expect(CommandLineSecrets.warnings(server: .environment(invite)).isEmpty)
        #expect(CommandLineSecrets.warnings(server: .file("server.txt")).isEmpty)
        let password = CommandLineSecrets.warnings(roomPassword: .argument("hunter2"))
        #expect(password.count == 1 && password[0].contains("--room-password-file FILE") && password[0].contains("TANDEM_ROOM_PASSWORD"))
        #expect(password.first?.contains("hunter2") == false)
        #expect(CommandLineSecrets.warnings(roomPassword: .environment("hunter2")).isEmpty)
        #expect(CommandLineSecrets.warnings(invite: .argument(invite), server: nil, roomPassword: .argument("x")).count == 2)
    }

    @Test("a secret option comes from the option, else its file, else the environment (an empty one is none); the option and its file together are refused")
    func sources() throws {
        func source(_ argument: String?, _ file: String?, _ environment: String?) throws -> InviteSource? {
            try InviteSource.option("--server", argument: argument, fileOption: "--server-file", file: file, environment: environment)
        }
        #expect(try source("a", nil, "e") == .argument("a"))
        #expect(try source(nil, "f", "e") == .file("f"))
        #expect(try source(nil, nil, "e") == .environment("e"))
        #expect(try source(nil, nil, "") == nil)
        #expect(try source(nil, nil, nil) == nil)
        do {
            _ = try source("a", "f", nil)
            Issue.record("expected a usage error")
        } catch let failure as PeerFailure {
            #expect(failure.exit == .usage && failure.description.contains("--server-file"))
        }
    }
}
