import TandemCrypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import TandemCore

// Losing the link and coming back as the same participant (`TandemClient.Options.reconnectGracePeriod`).
extension TandemClientConnection {
    // MARK: Reconnecting

    /// The current channel was lost without the server ending the session (called on its event loop).
    func channelLost(_ reason: InvalidationReason, silentSince: LocalInstant) {
        let now = clock.now
        let start = phase.withLock { phase -> Bool? in
            switch phase {
            case .connected:
                phase = .reconnecting(since: now, silentSince: silentSince)
                return true
            case .reconnecting: return false
            case .closing: return nil
            }
        }
        guard let start else {
            // Its owner closed (or aborted) it: the loss is the end.
            shared.finish(reason, announce: true)
            return
        }
        guard start else { return }
        shared.beginGap()
        shared.deliver(.notice(Notice(kind: .info, participant: localParticipantID,
                                      text: "lost the connection to the server (\(reason.message)); reconnecting…",
                                      sessionTime: sessionNow())))
        shared.deliver(ConnectionEvent.reconnecting(reason: reason.message))
        let task = Task { await self.reconnect(lostAt: now, reason: reason) }
        reconnectTask.withLock { $0 = task }
    }

    /// Tries to open a new channel as the same participant until it works or the grace period runs out.
    ///
    /// Clock sync starts afresh on the new channel (the previous estimate serves until its first exchange): a
    /// suspended machine's monotonic clock may have stopped meanwhile, so old samples cannot be trusted.
    func reconnect(lostAt: LocalInstant, reason: InvalidationReason) async {
        let deadline = lostAt + options.reconnectGracePeriod
        var delay = max(.zero, options.reconnectFirstDelay)
        var lastProblem = reason.message
        while true {
            let wait = min(delay, deadline - clock.now)
            if wait > .zero { try? await Task.sleep(nanoseconds: UInt64(wait.nanoseconds)) }
            guard isReconnecting else { return }
            let left = deadline - clock.now
            if left <= .zero { break }
            let epoch = lastEpoch.withLock { value in
                value += 1
                return value
            }
            var attempt = options
            attempt.reconnectAs = localParticipantID
            attempt.reconnectToken = welcome.reconnectToken ?? options.reconnectToken
            attempt.createSession = false  // it exists: this peer joined it
            attempt.connectTimeout = max(min(options.connectTimeout, left), .milliseconds(200))
            do {
                // On success the new channel's handler has already swapped itself in (`resumed`).
                _ = try await Self.establish(invite: invite, name: name, options: attempt, shared: shared, epoch: epoch,
                                             resuming: true)
                return
            } catch let lost as ReconnectIdentityLost {
                giveUp(InvalidationReason(code: .connectionLost, message:
                    "the server no longer knows this participant (it answered as \(lost.givenID)) — join again"))
                return
            } catch let error as TandemClientError {
                if let final = Self.finalReason(error) {
                    giveUp(final)
                    return
                }
                lastProblem = error.description
            } catch {
                lastProblem = "\(error)"
            }
            delay = min(max(delay * Int64(2), .nanoseconds(1)), max(options.reconnectMaxDelay, .nanoseconds(1)))
        }
        let grace = String(format: "%g", options.reconnectGracePeriod.seconds)
        giveUp(InvalidationReason(code: .connectionLost,
                                  message: "lost the server and could not reconnect within \(grace) s (\(lastProblem))"))
    }

    func giveUp(_ reason: InvalidationReason) {
        let stillTrying = phase.withLock { phase -> Bool in
            guard case .reconnecting = phase else { return false }
            phase = .closing
            return true
        }
        if stillTrying { shared.finish(reason, announce: true) }
    }

    /// Errors after which another attempt cannot help.
    static func finalReason(_ error: TandemClientError) -> InvalidationReason? {
        switch error {
        case .wrongSecret: return InvalidationReason(code: .authenticationFailed, message: error.description)
        case .noSuchSession, .protocolVersion: return InvalidationReason(code: .ended, message: error.description)
        case .sessionFull: return InvalidationReason(code: .sessionFull, message: error.description)
        case .sessionEnded(let reason), .closed(let reason): return reason
        default: return nil
        }
    }

    /// A reconnect's channel got its welcome as this participant (called on that channel's event loop): it becomes
    /// the connection's channel. False when the connection no longer wants it (closed meanwhile).
    func resumed(epoch: Int, welcome: SessionSnapshot, channel: any Channel,
                         handler: NIOLoopBound<ClientConnectionHandler>) -> Bool {
        let silentSince = phase.withLock { phase -> LocalInstant? in
            guard case .reconnecting(_, let silentSince) = phase else { return nil }
            phase = .connected
            return silentSince
        }
        guard let silentSince else { return false }
        current.withLock { $0 = CurrentChannel(channel: channel, handler: handler, welcome: welcome) }
        shared.makeCurrent(epoch: epoch)
        // What was sent while this link was away never reached it: the next gap of every sender is explained.
        shared.appData?.resumed()
        // The fresh snapshot first: the coordinator and the session resynchronise from it, then re-report what
        // the server forgot with the old channel (readiness, suspensions).
        shared.deliver(.welcome(welcome))
        let after = max(.zero, clock.now - silentSince)
        shared.deliver(.notice(Notice(kind: .info, participant: localParticipantID,
                                      text: String(format: "reconnected after %.1f s", after.seconds),
                                      sessionTime: sessionNow())))
        shared.deliver(ConnectionEvent.reconnected(after: after))
        shared.endGap()
        return true
    }

    func sessionNow() -> SessionInstant { clockMapping()?.sessionTime(atLocal: clock.now) ?? .zero }

    /// What happens to the link from now on: `reconnecting` when it is lost and the connection tries again,
    /// `reconnected` when that worked. The stream ends when the connection closes.
    public func connectionEvents() -> AsyncStream<ConnectionEvent> { shared.connectionEvents.subscribe() }


    /// Whether the connection is between a lost link and a reconnect.
    public var isReconnecting: Bool { phase.withLock { if case .reconnecting = $0 { true } else { false } } }

    /// Drops the current channel as a network failure would, leaving the connection to reconnect (tests).
    func dropChannel() async {
        try? await channel.close()
    }
}
