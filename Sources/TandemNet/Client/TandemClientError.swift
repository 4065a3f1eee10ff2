import Foundation
import TandemCore

/// Why connecting or sending failed, and what the user can do about it.
public enum TandemClientError: Error, Hashable, Sendable, CustomStringConvertible {
    case unreachable(String)
    case wrongSecret
    case noSuchSession(String)
    case sessionFull(String)
    case serverFull(String)
    case sessionEnded(InvalidationReason)
    case protocolVersion(String)
    case tls(String)
    case timedOut
    /// The server refused for another reason (code and text from its error frame).
    case refused(code: String, message: String)
    case messageTooLarge(size: Int, limit: Int)
    /// An unreliable message larger than one datagram carries (`MessageDelivery.maxUnreliableSize`).
    case unreliableMessageTooLarge(size: Int, limit: Int)
    case rateLimited(limit: Int)
    case attachmentTooLarge(size: Int, limit: Int64)
    case closed(InvalidationReason)
    /// The link is being re-established and too many sends already wait for it.
    case reconnecting

    public var description: String {
        switch self {
        case .unreachable(let s): return "cannot reach the server (\(s)); check the host and port, and that it is running"
        case .wrongSecret: return "the server refused the invite's secret; ask the host for a fresh invite"
        case .noSuchSession(let s): return "no such session: \(s)"
        case .sessionFull(let s): return "the session is full: \(s)"
        case .serverFull(let s): return "the server is full: \(s)"
        case .sessionEnded(let r): return "the session has ended: \(r.message)"
        case .protocolVersion(let s): return "protocol version mismatch: \(s)"
        case .tls(let s): return "TLS failed: \(s) (check the invite's pin or the trust roots)"
        case .timedOut: return "the server did not complete the handshake in time"
        case .refused(let code, let message): return "the server refused (\(code)): \(message)"
        case .messageTooLarge(let size, let limit): return "message of \(size) bytes exceeds the \(limit)-byte limit; send it as a journal attachment"
        case .unreliableMessageTooLarge(let size, let limit):
            return "unreliable message of \(size) bytes exceeds the \(limit)-byte limit of one datagram; send it reliably"
        case .rateLimited(let limit): return "more than \(limit) messages per second; slow down"
        case .attachmentTooLarge(let size, let limit): return "attachment of \(size) bytes exceeds the \(limit)-byte limit"
        case .closed(let r): return "the connection is closed: \(r.message)"
        case .reconnecting: return "the connection to the server is being re-established and too many messages wait for it; try again shortly"
        }
    }

    init(code: WireErrorCode, message: String) {
        switch code {
        case .authenticationFailed: self = .wrongSecret
        case .noSuchSession: self = .noSuchSession(message)
        case .sessionFull: self = .sessionFull(message)
        case .serverFull: self = .serverFull(message)
        case .protocolVersion: self = .protocolVersion(message)
        case .sessionEnded, .ended, .hostLeft, .serverShutdown:
            self = .sessionEnded(InvalidationReason(wire: code, message: message))
        default: self = .refused(code: code.rawValue, message: message)
        }
    }
}

extension InvalidationReason {
    /// The reason a close or error frame carries.
    init(wire code: WireErrorCode, message: String) {
        let mapped: InvalidationReason.Code
        switch code {
        case .ended, .sessionEnded: mapped = .ended
        case .hostLeft: mapped = .hostLeft
        case .serverShutdown: mapped = .serverShutdown
        case .removed: mapped = .removed
        case .sessionFull, .serverFull: mapped = .sessionFull
        case .authenticationFailed: mapped = .authenticationFailed
        case .left: mapped = .left
        case .connectionLost, .heartbeatTimeout: mapped = .connectionLost
        default: mapped = .protocolError
        }
        self.init(code: mapped, message: message)
    }
}
