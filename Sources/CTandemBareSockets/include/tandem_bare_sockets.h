#ifndef TANDEM_BARE_SOCKETS_H
#define TANDEM_BARE_SOCKETS_H

// epoll and timerfd for the bare relay of `tandem bench relay --floor` (TandemBench/Relay/BareRelay.swift).
// Swift's Glibc module leaves out <sys/epoll.h> and <sys/timerfd.h>; these functions wrap the few calls the bare
// relay makes, so that the Swift side sees plain integers (no packed `epoll_event`, no flag enums). Nothing here
// allocates: every descriptor returned is the caller's to close.

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

#endif
