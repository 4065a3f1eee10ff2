import TandemCrypto
import Foundation
import TandemCore

extension ServerConnectionHandler {
    /// Checks a proof; returns the session it opens, or refuses (and closes) and returns nil.
    ///
    /// An unknown session and a wrong secret get the same answer after the same work. A session is created
    /// only after its creator has proved the key it supplies, presented the server's creation token (when one
    /// is required) and stayed within its address's creation quota.
    func authenticate(_ proof: AuthProof, session sessionID: String, create: Bool, nonce: Data) -> HostedSession? {
        func verify(_ key: SymmetricKey) -> Bool {
            proof.clientNonce.count >= 16
                && SessionAuth.verify(proof: proof.proof, key: key, serverNonce: nonce, session: sessionID,
                                      clientNonce: proof.clientNonce)
        }
        func refuseAuthentication(_ reason: ServerRefusal, _ why: String) {
            server.logRefusal(reason, address: address, why)
            closeAfterSending(.authenticationFailed, authenticationRefusedText)
        }
        if let existing = server.session(named: sessionID) {
            guard verify(existing.key) else {
                refuseAuthentication(.authenticationFailed, "authentication failed")
                return nil
            }
            return existing
        }
        guard create, configuration.allowsRemoteSessionCreation, let keyData = proof.sessionKey, keyData.count == 32 else {
            // Same work as a real check, against a key nobody has.
            _ = verify(SymmetricKey(size: .bits256))
            refuseAuthentication(.authenticationFailed, "authentication failed")
            return nil
        }
        let key = SymmetricKey(data: keyData)
        guard verify(key) else {
            refuseAuthentication(.creationWrongProof, "session creation: wrong proof")
            return nil
        }
        if let required = configuration.createToken {
            let presented = Data(SHA256.hash(data: Data((proof.createToken ?? "").utf8)))
            guard presented.constantTimeEquals(Data(SHA256.hash(data: Data(required.utf8)))) else {
                server.logRefusal(.creationToken, address: address,
                                  proof.createToken == nil ? "session creation: no token" : "session creation: wrong token")
                closeAfterSending(.creationRefused,
                                  "this server requires a creation token to create sessions (tandem host --create-token-file)")
                return nil
            }
        }
        guard server.mayCreateSession(from: address) else {
            server.logRefusal(.creationQuota, address: address, "session creation: quota")
            closeAfterSending(.creationRefused,
                              "more than \(configuration.sessionCreationsPerMinute) sessions created from this address in a minute; try again later")
            return nil
        }
        if proof.probe == true {
            // A probe: everything a creation checks, and nothing created (the quota is not taken either).
            if let full = server.whyNoRoomForSession {
                closeAfterSending(.serverFull, full)
            } else {
                logger.debug("creation probe answered", metadata: ["address": "\(address)"])
                closeAfterSending(.creationAllowed, "this server would create the session; nothing was created", kind: .close)
            }
            return nil
        }
        do {
            return try server.createRemoteSession(id: sessionID, key: key, address: address)
        } catch {
            server.logRefusal(ServerRefusal(creationError: error), address: address, "session creation: \(error)")
            switch error {
            case .serverFull: closeAfterSending(.serverFull, error.description)
            case .sessionExists: closeAfterSending(.sessionExists, error.description)
            case .tooManySessionsFromAddress: closeAfterSending(.creationRefused, error.description)
            default: closeAfterSending(.serverShutdown, error.description)
            }
            return nil
        }
    }
}
