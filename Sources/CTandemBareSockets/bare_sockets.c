#include "tandem_bare_sockets.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>

int tdm_bare_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int tdm_bare_epoll_watch(int epoll_fd, int fd, uint32_t bits, int modify) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = bits;
    event.data.fd = fd;
    return epoll_ctl(epoll_fd, modify ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event);
}

int tdm_bare_epoll_wait(int epoll_fd, int32_t *fds, uint32_t *bits, int capacity, int timeout_ms) {
    struct epoll_event events[512];
    if (capacity > 512) capacity = 512;
    int count = epoll_wait(epoll_fd, events, capacity, timeout_ms);
    if (count < 0) return errno == EINTR ? 0 : -1;
    for (int i = 0; i < count; i++) {
        fds[i] = events[i].data.fd;
        bits[i] = events[i].events;
    }
    return count;
}

int tdm_bare_timer_create(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

int tdm_bare_timer_arm_at(int timer_fd, int64_t monotonic_ns) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    spec.it_value.tv_sec = (time_t)(monotonic_ns / 1000000000);
    spec.it_value.tv_nsec = (long)(monotonic_ns % 1000000000);
    return timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &spec, NULL);
}
