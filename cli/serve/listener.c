/* tessera serve: the listening socket, opened on --host and --port, and
 * closed for new connections at shutdown without dropping one the system
 * has completed (the loop, cli/serve/loop.c, accepts from it). */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/filter.h>
#endif

#include "cli/serve/server.h"

int srv_listener_open(const srv_settings *s, int *port, char *err, size_t err_len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *addr;
    char service[16];
    snprintf(service, sizeof service, "%d", s->port);
    int rc = getaddrinfo(s->host, service, &hints, &addr);
    if (rc != 0) {
        snprintf(err, err_len, "--host %s: %s", s->host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(addr->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    addr->ai_protocol);
    int on = 1;
    if (fd >= 0) {
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (addr->ai_family == AF_INET6)
            (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    }
    if (fd < 0 || bind(fd, addr->ai_addr, addr->ai_addrlen) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
        snprintf(err, err_len, "cannot listen on %s port %d: %s", s->host, s->port,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(addr);
        return -1;
    }
    freeaddrinfo(addr);
    struct sockaddr_storage bound;
    socklen_t len = sizeof bound;
    *port = s->port;
    if (getsockname(fd, (struct sockaddr *)&bound, &len) == 0)
        *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                  : ((struct sockaddr_in *)&bound)->sin_port);
    return fd;
}

/* Stops new connections at the listening socket: a filter that drops a
 * packet with SYN set and ACK clear, the first of a new connection. Returns
 * 1 when the system took it, 0 where it has no socket filters.
 *
 * Only the first packet: the filter also sees the last ACK of every
 * handshake whose SYN-ACK already went out, and a drop-all filter once
 * dropped such an ACK, leaving a client connected on its side (and its
 * request sent) to a connection the listener never queued and reset when it
 * closed. Sockets accepted later inherit the filter; an established
 * connection never receives a bare SYN, so it drops nothing of theirs. The
 * filter reads the TCP header, whose byte 13 holds the flags. */
int srv_listener_close_door(int listener)
{
#ifdef SO_ATTACH_FILTER
    enum { TCP_FLAGS_BYTE = 13, TCP_SYN = 0x02, TCP_ACK = 0x10 };
    struct sock_filter drop_syn[] = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, TCP_FLAGS_BYTE),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, TCP_SYN | TCP_ACK),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TCP_SYN, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0),          /* drop */
        BPF_STMT(BPF_RET | BPF_K, 0xffffffffu), /* keep the whole packet */
    };
    struct sock_fprog filter = {.len = sizeof drop_syn / sizeof drop_syn[0], .filter = drop_syn};
    return setsockopt(listener, SOL_SOCKET, SO_ATTACH_FILTER, &filter, sizeof filter) == 0;
#else
    (void)listener;
    return 0;
#endif
}
