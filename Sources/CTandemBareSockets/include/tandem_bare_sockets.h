#ifndef TANDEM_BARE_SOCKETS_H
#define TANDEM_BARE_SOCKETS_H

// epoll and timerfd for the bare relay of `tandem bench relay --floor` (TandemBench/Relay/BareRelay.swift).
// Swift's Glibc module leaves out <sys/epoll.h> and <sys/timerfd.h>; these functions wrap the few calls the bare
// relay makes, so that the Swift side sees plain integers (no packed `epoll_event`, no flag enums). Nothing here
// allocates: every descriptor returned is the caller's to close.

#include <stddef.h>
#include <stdint.h>

/// The readiness bits the bare relay watches (EPOLLIN, EPOLLOUT) and the ones that mean the socket is done
/// (EPOLLERR, EPOLLHUP).
enum {
    TDM_BARE_READABLE = 0x001,
    TDM_BARE_WRITABLE = 0x004,
    TDM_BARE_ERROR = 0x008,
    TDM_BARE_HANGUP = 0x010,
};

/// A new epoll descriptor (close-on-exec), or -1 with errno set.
int tdm_bare_epoll_create(void);

/// Adds (`modify` 0) or changes (`modify` 1) `fd`'s watched bits in `epoll_fd`, level-triggered; 0 or -1.
int tdm_bare_epoll_watch(int epoll_fd, int fd, uint32_t bits, int modify);

/// Waits up to `timeout_ms` (-1: no limit) and writes up to `capacity` ready descriptors and their bits into the
/// caller's arrays; returns how many (0 on timeout or interruption), or -1 with errno set.
int tdm_bare_epoll_wait(int epoll_fd, int32_t *fds, uint32_t *bits, int capacity, int timeout_ms);

/// A new non-blocking CLOCK_MONOTONIC timer descriptor (close-on-exec), or -1 with errno set.
int tdm_bare_timer_create(void);

/// Arms `timer_fd` to expire once at `monotonic_ns` (absolute, CLOCK_MONOTONIC); 0 or -1.
int tdm_bare_timer_arm_at(int timer_fd, int64_t monotonic_ns);

// Kernel receive stamps for the datagram sockets of clock probes (TandemNet's `KernelReceiveStamps`).
//
// The kernel stamps every datagram when it arrives (on loopback: when the sender's packet is queued to the
// receiving side), before any event loop gets to it. `SIOCGSTAMPNS` hands the stamp of the datagram last read on a
// socket; read right after that datagram, it is that datagram's. The stamp is on CLOCK_REALTIME, which a time
// namespace does not shift (CLOCK_MONOTONIC it does), so it is brought to CLOCK_MONOTONIC with an offset sampled
// in the same process.

/// A new non-blocking, close-on-exec UDP socket of address family `family` (AF_INET, or AF_INET6 dual stack),
/// with the kernel's receive stamps turned on; -1 with errno set.
int tdm_stamped_udp_socket(int family);

/// The receive stamp (CLOCK_REALTIME, ns) of the datagram last read on `fd`: 0, or -1 with errno set (ENOENT: no
/// datagram stamped yet).
int tdm_last_receive_stamp(int fd, int64_t *realtime_ns);

/// CLOCK_REALTIME − CLOCK_MONOTONIC (ns) as this process sees them, from `tries` readings of monotonic, realtime,
/// monotonic back to back: the one with the smallest bracket (the two monotonic readings' distance, written to
/// `bracket_ns`) wins, and the realtime reading is taken to lie midway in it.
int64_t tdm_realtime_minus_monotonic(int tries, int64_t *bracket_ns);

// Kernel send stamps for the same sockets (TandemNet's `KernelSendStamps`).
//
// The kernel hands a datagram's transmit stamp back through the sending socket's error queue, and a socket whose
// error queue is not empty polls as failed (EPOLLERR), which an event loop that owns the socket may take as a
// reason to close it. So clock probes and their answers are sent from a second socket of their own: bound to the
// same address and port as the event loop's socket (SO_REUSEPORT), with a program on the port that hands every
// arriving datagram to the first socket, so that the second one only sends. Its error queue is read right after
// each send, by the sender, and nobody else watches it.

/// Lets `fd` (not yet bound) share its port with the sender `tdm_open_sender` makes once it is bound; 0 or -1.
int tdm_allow_sender(int fd);

/// For `fd`, bound after `tdm_allow_sender`: steers every datagram arriving at its port to `fd`, and returns a
/// new non-blocking, close-on-exec UDP socket bound to the same address and port, with software transmit stamps
/// on; -1 with errno set.
int tdm_open_sender(int fd);

/// Sends `count` bytes to `address` from `fd` (a sender from `tdm_open_sender`) and waits up to `wait_us`
/// microseconds for the transmit stamp of this datagram, the `number`th sent on `fd` (from 0): 1 with the stamp
/// (CLOCK_REALTIME, ns) in `realtime_ns`, 0 when the datagram went but no stamp came in time, -1 with errno set
/// when it could not be sent.
int tdm_send_stamped(int fd, const void *bytes, size_t count, const void *address, uint32_t address_length,
                     uint32_t number, int wait_us, int64_t *realtime_ns);

#endif
