#include "tandem_bare_sockets.h"

#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

int tdm_stamped_udp_socket(int family) {
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (family == AF_INET6) {
        // Dual stack, as NIO makes its IPv6 sockets: "::" takes IPv4 peers too.
        int zero = 0;
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    // The first SIOCGSTAMPNS turns the socket's stamps on (and fails with ENOENT: nothing received yet). From
    // then on every datagram read leaves its stamp for the next call.
    struct timespec ignored;
    (void)ioctl(fd, SIOCGSTAMPNS, &ignored);
    return fd;
}

int tdm_last_receive_stamp(int fd, int64_t *realtime_ns) {
    struct timespec stamp;
    if (ioctl(fd, SIOCGSTAMPNS, &stamp) != 0) return -1;
    *realtime_ns = (int64_t)stamp.tv_sec * 1000000000 + (int64_t)stamp.tv_nsec;
    return 0;
}

static int64_t nanoseconds(clockid_t id) {
    struct timespec now;
    clock_gettime(id, &now);
    return (int64_t)now.tv_sec * 1000000000 + (int64_t)now.tv_nsec;
}

int64_t tdm_realtime_minus_monotonic(int tries, int64_t *bracket_ns) {
    int64_t best_offset = 0;
    int64_t best_bracket = INT64_MAX;
    for (int i = 0; i < (tries > 0 ? tries : 1); i++) {
        int64_t before = nanoseconds(CLOCK_MONOTONIC);
        int64_t real = nanoseconds(CLOCK_REALTIME);
        int64_t after = nanoseconds(CLOCK_MONOTONIC);
        if (after - before < best_bracket) {
            best_bracket = after - before;
            best_offset = real - (before + (after - before) / 2);
        }
    }
    if (bracket_ns) *bracket_ns = best_bracket;
    return best_offset;
}
