import CTandemBareSockets
import Foundation
import NIOCore
import NIOPosix
import TandemCore

/// The kernel's arrival stamps of one UDP socket's datagrams, on the local monotonic clock: a clock probe's
/// receive time taken when the packet arrived, not when the event loop got round to it (a wake-up, a busy loop on
/// a loaded machine: tens to hundreds of microseconds that differ from probe to probe, on both ends).
///
/// The socket is made here with stamping on (`tdm_stamped_udp_socket`) and handed to NIO as a bound socket; the
/// handler reads the stamp (`SIOCGSTAMPNS`) in `channelRead`, which NIO calls for each datagram right after reading
/// it and before the next read, so the stamp is that datagram's. The kernel stamps on CLOCK_REALTIME; the probes
/// are on CLOCK_MONOTONIC, which a time namespace shifts while CLOCK_REALTIME stays the machine's, so the stamp is
/// moved by `CLOCK_REALTIME − CLOCK_MONOTONIC` read in this process, back to back with the smallest bracket.
///
/// Only for a clock that is the machine's CLOCK_MONOTONIC (`SystemMonotonicClock`): any other clock (a test's
/// manual clock, a benchmark's skewed one) gets no kernel stamps and its own readings are used, as they are
/// wherever a stamp is missing or implausible.
struct KernelReceiveStamps: Sendable {
    let descriptor: CInt

    /// How far before the event loop's own reading a stamp may lie and still be taken: a datagram that waited
    /// longer in the socket's queue than this is stamped by the loop (nothing real waits that long).
    static let plausibleWait = TimeSpan.seconds(1)

    /// `TANDEM_CLOCK_STAMPS=user` in the environment turns the stamps off in this process, to measure what they
    /// bring (`tandem bench sync --processes` passes its environment on to every peer).
    static let turnedOff = ProcessInfo.processInfo.environment["TANDEM_CLOCK_STAMPS"] == "user"

    /// Whether `clock` reads CLOCK_MONOTONIC, the time base the stamps are moved to (and stamps are not turned off).
    static func applies(to clock: any MonotonicClock) -> Bool {
        if turnedOff { return false }
        if clock is SystemMonotonicClock { return true }
        if let any = clock as? AnyMonotonicClock { return applies(to: any.base) }
        return false
    }

    /// A non-blocking UDP socket with stamps on, bound to `address`; the caller hands it to
    /// `DatagramBootstrap.withBoundSocket`, which owns it from then on. With `sharing`, the port is also open to
    /// the sender of `KernelSendStamps.open(beside:)` (which makes sure only this socket receives).
    static func boundSocket(at address: SocketAddress, sharing: Bool = false) throws -> KernelReceiveStamps {
        let family = address.protocol == .inet6 ? AF_INET6 : AF_INET
        let descriptor = tdm_stamped_udp_socket(family)
        guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        if sharing { _ = KernelSendStamps.prepare(receiving: descriptor) }
        let bound = address.withSockAddr { pointer, length in bind(descriptor, pointer, socklen_t(length)) }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            throw IOError(errnoCode: code, reason: "bind")
        }
        return KernelReceiveStamps(descriptor: descriptor)
    }

    /// `CLOCK_REALTIME − CLOCK_MONOTONIC` (ns) now, and the bracket of the readings it came from.
    static func realtimeMinusMonotonic() -> (offset: Int64, bracket: Int64) {
        var bracket: Int64 = 0
        let offset = tdm_realtime_minus_monotonic(3, &bracket)
        return (offset, bracket)
    }

    /// A realtime stamp on the monotonic axis, judged against the loop's own reading `now`: nil when it is later
    /// than `now` by more than the conversion's bracket (not this datagram's, or a clock stepped in between) or
    /// earlier by more than `plausibleWait`; otherwise the stamp, no later than `now`.
    static func monotonic(realtime: Int64, offset: Int64, bracket: Int64, now: LocalInstant) -> LocalInstant? {
        let stamp = realtime &- offset
        let slack = bracket + 1_000
        guard stamp <= now.nanoseconds &+ slack, stamp >= now.nanoseconds &- plausibleWait.nanoseconds else {
            return nil
        }
        return LocalInstant(nanoseconds: min(stamp, now.nanoseconds))
    }

    /// When the datagram just read in `buffer` arrived, and where that was read: the kernel's stamp when it is a
    /// `type` datagram (the header's type byte; whether it is authentic is checked later, and a stamp read for a
    /// forged one is simply not used) and a plausible stamp is there, else `now` (the loop's reading).
    static func arrival(of buffer: ByteBuffer, ifType type: DatagramType, stamps: Self?,
                        now: LocalInstant) -> (at: LocalInstant, source: ClockStampSource) {
        guard let stamps, buffer.getInteger(at: buffer.readerIndex + 3, as: UInt8.self) == type.rawValue,
              let stamp = stamps.lastArrival(now: now) else { return (now, .user) }
        return (stamp, .kernel)
    }

    /// The arrival of the datagram just read on the socket, on CLOCK_MONOTONIC, given the loop's reading `now`
    /// (taken after the read); nil when the kernel has no stamp or it is implausible.
    func lastArrival(now: LocalInstant) -> LocalInstant? {
        var realtime: Int64 = 0
        guard tdm_last_receive_stamp(descriptor, &realtime) == 0 else { return nil }
        let (offset, bracket) = Self.realtimeMinusMonotonic()
        return Self.monotonic(realtime: realtime, offset: offset, bracket: bracket, now: now)
    }
}
