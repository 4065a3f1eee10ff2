import Foundation
import Tandem

/// The bounds a standalone relay (`tandem serve`) is started with: checked, and turned into its server
/// configuration. Each default is the one SECURITY.md documents.
public struct RelayLimits: Sendable {
    public var sessions = 100
    public var participants = 32
    public var unauthenticated = 512
    public var unauthenticatedPerAddress = 16
    public var connectionsPerAddress = 64
    public var sessionsPerAddress = 4
    public var creationsPerMinute = 10
    public var journalBytes = ServerConfiguration.defaultJournalBudget
    public var spoolDirectory = ServerConfiguration.defaultSpoolDirectory
    public var threads = ProcessInfo.processInfo.activeProcessorCount
    /// Whether the relay passes hosts' shared items to their joiners (`--relay-media`), and each session's cap.
    public var relayMedia = false
    public var relayMediaRate = RelayMediaConfiguration().bytesPerSecond

    public init() {}

    /// What is wrong with these limits, in the words of the `serve` options that set them; nil when nothing is.
    public var problem: String? {
        let atLeast: [(value: Int, least: Int, option: String)] = [
            (sessions, 1, "--max-sessions"), (participants, 2, "--max-participants"),
            (unauthenticated, 1, "--max-unauthenticated"), (unauthenticatedPerAddress, 1, "--max-unauthenticated-per-address"),
            (connectionsPerAddress, 1, "--max-connections-per-address"), (sessionsPerAddress, 1, "--max-sessions-per-address"),
            (creationsPerMinute, 1, "--creations-per-minute"),
        ]
        if let low = atLeast.first(where: { $0.value < $0.least }) { return "\(low.option) must be at least \(low.least)" }
        if journalBytes < 0 { return "--max-journal-bytes cannot be negative" }
        if !(1...256).contains(threads) { return "--threads must be 1 to 256" }
        if relayMediaRate < 65_536 { return "--relay-media-rate must be at least 65536 (bytes per second: one request's size)" }
        return nil
    }

    /// A relay's server configuration: clients may create sessions, within these bounds.
    public var serverConfiguration: ServerConfiguration {
        var authority = AuthorityConfiguration()
        authority.maxParticipants = participants
        var configuration = ServerConfiguration(authority: authority)
        configuration.allowsRemoteSessionCreation = true
        configuration.maxSessions = sessions
        configuration.threads = threads
        configuration.maxUnauthenticatedConnections = unauthenticated
        configuration.maxUnauthenticatedConnectionsPerAddress = unauthenticatedPerAddress
        configuration.maxConnectionsPerAddress = connectionsPerAddress
        configuration.maxSessionsPerAddress = sessionsPerAddress
        configuration.sessionCreationsPerMinute = creationsPerMinute
        configuration.maxJournalBytes = journalBytes
        configuration.spoolDirectory = spoolDirectory
        configuration.relayMedia = relayMedia ? RelayMediaConfiguration(bytesPerSecond: relayMediaRate) : nil
        return configuration
    }
}
