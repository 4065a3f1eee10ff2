#include "tandem_bare_sockets.h"

#include <errno.h>
#include <time.h>
#include <linux/errqueue.h>
#include <linux/filter.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int tdm_allow_sender(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
}

int tdm_open_sender(int fd) {
    // Every datagram that reaches the port goes to the group's first socket (`fd`, bound first): a one-line
    // classic BPF program that returns index 0. Without it the kernel would spread them over both sockets.
    struct sock_filter code[] = { { BPF_RET | BPF_K, 0, 0, 0 } };
    struct sock_fprog program = { .len = 1, .filter = code };
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &program, sizeof program) != 0) return -1;

    struct sockaddr_storage local;
    socklen_t length = sizeof local;
    if (getsockname(fd, (struct sockaddr *)&local, &length) != 0) return -1;
    int sender = socket(local.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (sender < 0) return -1;
    int one = 1, zero = 0;
    if (local.ss_family == AF_INET6) (void)setsockopt(sender, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    // Software transmit stamps (taken where the driver hands the packet on; on loopback and veth, within the
    // send call), only the stamp in the error queue (no copy of the packet), numbered from 0 per datagram sent.
    int flags = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_TSONLY |
                SOF_TIMESTAMPING_OPT_ID;
    if (setsockopt(sender, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
        setsockopt(sender, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) != 0 ||
        bind(sender, (struct sockaddr *)&local, length) != 0) {
        int code = errno;
        close(sender);
        errno = code;
        return -1;
    }
    return sender;
}

/// Reads one entry of `fd`'s error queue without waiting: 1 and the stamp and its number when it was a transmit
/// stamp, 0 when the queue is empty, 2 when it held something else (dropped).
static int read_stamp(int fd, int64_t *realtime_ns, uint32_t *number) {
    char control[256];
    char data[64];
    struct iovec vector = { .iov_base = data, .iov_len = sizeof data };
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    if (recvmsg(fd, &message, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return 0;
    int have_stamp = 0, have_number = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
            const struct timespec *stamps = (const struct timespec *)CMSG_DATA(c);
            // [0] software, [2] hardware; only software stamps are asked for.
            if (stamps[0].tv_sec != 0 || stamps[0].tv_nsec != 0) {
                *realtime_ns = (int64_t)stamps[0].tv_sec * 1000000000 + (int64_t)stamps[0].tv_nsec;
                have_stamp = 1;
            }
        } else if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                   (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
            const struct sock_extended_err *error = (const struct sock_extended_err *)CMSG_DATA(c);
            if (error->ee_errno == ENOMSG && error->ee_origin == SO_EE_ORIGIN_TIMESTAMPING) {
                *number = error->ee_data;
                have_number = 1;
            }
        }
    }
    return have_stamp && have_number ? 1 : 2;
}

int tdm_send_stamped(int fd, const void *bytes, size_t count, const void *address, uint32_t address_length,
                     uint32_t number, int wait_us, int64_t *realtime_ns) {
    // Stamps of earlier datagrams that came after their send returned are stale now: drop them.
    int64_t stale;
    uint32_t stale_number;
    for (int i = 0; i < 16 && read_stamp(fd, &stale, &stale_number) != 0; i++) {}

    if (sendto(fd, bytes, count, 0, (const struct sockaddr *)address, (socklen_t)address_length) < 0) return -1;

    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        int64_t stamp = 0;
        uint32_t got = 0;
        int result = read_stamp(fd, &stamp, &got);
        if (result == 1 && got == number) {
            *realtime_ns = stamp;
            return 1;
        }
        if (result != 0) continue;  // another datagram's stamp or something else: read on
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t waited_us = ((int64_t)(now.tv_sec - start.tv_sec) * 1000000000 + (now.tv_nsec - start.tv_nsec)) / 1000;
        if (waited_us >= wait_us) return 0;
        struct pollfd watch = { .fd = fd, .events = 0 };
        (void)poll(&watch, 1, 1);  // POLLERR when the stamp is queued; at most a millisecond
    }
}
