import Foundation
import Logging
import Synchronization

/// Logging for the `tandem` process: one line per record on standard error. Libraries only take a `Logger`;
/// the executable decides where records go and from which level.
enum CLILogging {
    private static let bootstrapped = Mutex(false)

    /// Routes logging to standard error at `.debug` with `-v`, otherwise at `defaultLevel`. Only the first call in
    /// a process counts (swift-log allows one bootstrap).
    static func bootstrap(verbose: Bool, defaultLevel: Logger.Level = .warning) {
        let level: Logger.Level = verbose ? .debug : defaultLevel
        bootstrapped.withLock { done in
            guard !done else { return }
            done = true
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}
