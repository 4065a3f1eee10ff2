import CTandemBareSockets
import Foundation
import NIOCore
import Synchronization
import TandemCore

/// The kernel's transmit stamps of clock probes and their answers, on the local monotonic clock: when the datagram
/// left (handed to the loopback or network driver), not when the stamp written into it was read (before it was
/// sealed, and before the event loop and the send call got to it).
///
/// The kernel returns a transmit stamp through the sending socket's error queue, and NIO closes a datagram channel
/// whose socket polls as failed, which a queued stamp makes it do. So these datagrams go from a second socket,
/// bound to the same address and port as the channel's (`tdm_open_sender`): the port hands every arriving datagram to
/// the channel's socket, and this one only sends, reading its own stamp right after each send. The stamp is on
/// CLOCK_REALTIME and is moved to CLOCK_MONOTONIC as `KernelReceiveStamps` does.
///
/// A system that gives no stamp (a driver that does not stamp) costs at most three short waits
/// (`wait`): after three datagrams in a row without one, the datagrams still go from here, without waiting.
final class KernelSendStamps: Sendable {
    private struct State {
        /// The number the kernel gives the next datagram sent (`SOF_TIMESTAMPING_OPT_ID`).
        var next: UInt32 = 0
        var missesInARow = 0
        var closed = false
    }

    let descriptor: CInt
    private let state = Mutex(State())

    /// How long a send waits for its stamp (on loopback and veth it is there when the send returns).
    static let wait = TimeSpan.microseconds(200)
    /// Datagrams in a row without a stamp after which sends stop waiting for one.
    static let missesBeforeGivingUp = 3

    /// `TANDEM_CLOCK_STAMPS=receive` turns the send stamps off in this process (and `user` both kinds), to measure
    /// what they bring.
    static let turnedOff: Bool = {
        let value = ProcessInfo.processInfo.environment["TANDEM_CLOCK_STAMPS"]
        return value == "receive" || value == "user"
    }()

    private init(descriptor: CInt) {
        self.descriptor = descriptor
    }

    /// Lets the not-yet-bound `receiving` socket (from `KernelReceiveStamps`) share its port with a sender.
    static func prepare(receiving descriptor: CInt) -> Bool {
        tdm_allow_sender(descriptor) == 0
    }

    /// The sender beside the bound `receiving` socket (after `prepare`), or nil when the system does not allow one.
    static func open(beside descriptor: CInt) -> KernelSendStamps? {
        let sender = tdm_open_sender(descriptor)
        guard sender >= 0 else { return nil }
        return KernelSendStamps(descriptor: sender)
    }

    func close() {
        let wasOpen = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        if wasOpen { _ = Glibc.close(descriptor) }
    }

    deinit { close() }

    /// Sends `datagram` to `address` and returns when it left by the kernel's stamp, judged against the clock's
    /// readings around the send (`monotonic`); `sent` false when it could not be sent from here (the caller sends it
    /// the usual way), `departure` nil when it went without a plausible stamp.
    func send(_ datagram: ByteBuffer, to address: SocketAddress) -> (sent: Bool, departure: LocalInstant?) {
        state.withLock { state -> (sent: Bool, departure: LocalInstant?) in
            guard !state.closed else { return (false, nil) }
            let wait = state.missesInARow >= Self.missesBeforeGivingUp ? 0 : Int32(Self.wait.nanoseconds / 1_000)
            var realtime: Int64 = 0
            let before = Self.monotonicNow()
            let result = datagram.withUnsafeReadableBytes { bytes in
                address.withSockAddr { pointer, length in
                    tdm_send_stamped(descriptor, bytes.baseAddress, bytes.count, pointer, UInt32(length),
                                     state.next, wait, &realtime)
                }
            }
            guard result >= 0 else { return (false, nil) }
            state.next &+= 1
            guard result == 1 else {
                state.missesInARow += 1
                return (true, nil)
            }
            let after = Self.monotonicNow()
            let (offset, bracket) = KernelReceiveStamps.realtimeMinusMonotonic()
            let stamp = realtime &- offset
            // A stamp outside the send's own bracket (widened by the conversion's) is not this datagram's.
            guard stamp >= before &- bracket &- 1_000, stamp <= after &+ bracket &+ 1_000 else {
                state.missesInARow += 1
                return (true, nil)
            }
            state.missesInARow = 0
            return (true, LocalInstant(nanoseconds: min(max(stamp, before), after)))
        }
    }

    private static func monotonicNow() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
