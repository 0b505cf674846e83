#define _GNU_SOURCE
#include "tests/http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int http_connect(int port, const char *source)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct sockaddr_in from = {.sin_family = AF_INET};
    if (source && (inet_pton(AF_INET, source, &from.sin_addr) != 1 ||
                   bind(fd, (struct sockaddr *)&from, sizeof from) != 0)) {
        close(fd);
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* The value of header `name` in the header block [head, end), copied. */
static void header(const char *head, const char *end, const char *name, char *out,
                   size_t out_len)
{
    size_t nlen = strlen(name);
    out[0] = '\0';
    for (const char *line = head; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        if ((size_t)(eol - line) > nlen + 1 && strncasecmp(line, name, nlen) == 0 &&
            line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (*v == ' ')
                v++;
            size_t len = (size_t)(eol - v);
            if (len && v[len - 1] == '\r')
                len--;
            if (len >= out_len)
                len = out_len - 1;
            memcpy(out, v, len);
            out[len] = '\0';
            return;
        }
        line = eol + 1;
    }
}

static int connect_loopback(int port) { return http_connect(port, NULL); }

int http_request(int port, const char *method, const char *path, const char *body,
                 size_t body_len, http_reply *reply)
{
    return http_request_from(NULL, port, method, path, body, body_len, reply);
}

int http_request_from(const char *source, int port, const char *method, const char *path,
                      const char *body, size_t body_len, http_reply *reply)
{
    char head[512];
    int hl = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                      method, path, port, body ? body_len : 0);
    return http_request_raw_from(source, port, head, (size_t)hl, body, body ? body_len : 0, reply);
}

int http_request_raw(int port, const char *head, size_t head_len, const char *body,
                     size_t body_len, http_reply *reply)
{
    return http_request_raw_from(NULL, port, head, head_len, body, body_len, reply);
}

int http_request_raw_from(const char *source, int port, const char *head, size_t head_len,
                          const char *body, size_t body_len, http_reply *reply)
{
    memset(reply, 0, sizeof *reply);
    int fd = http_connect(port, source);
    if (fd < 0) {
        reply->sys_error = errno;
        return -1;
    }
    if (send_all(fd, head, head_len) != 0 || (body_len && send_all(fd, body, body_len) != 0)) {
        /* The server may answer (413) before reading all of a large body. */
        reply->sys_error = errno;
    }
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        if (len + 1 == cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            reply->sys_error = errno;
            break;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    reply->bytes = (int)len;
    if (!buf)
        return -1;
    buf[len] = '\0';
    const char *end_of_head = strstr(buf, "\r\n\r\n");
    int status;
    if (!end_of_head || sscanf(buf, "HTTP/1.%*d %d", &status) != 1) {
        free(buf);
        return -1;
    }
    reply->status = status;
    header(buf, end_of_head, "Retry-After", reply->retry_after, sizeof reply->retry_after);
    header(buf, end_of_head, "Content-Type", reply->content_type, sizeof reply->content_type);
    const char *b = end_of_head + 4;
    reply->body_len = len - (size_t)(b - buf);
    memmove(buf, b, reply->body_len + 1);
    reply->body = buf;
    return 0;
}

int http_send_and_leave(int port, const char *path, const char *body, int ms)
{
    int fd = connect_loopback(port);
    if (fd < 0)
        return -1;
    char head[512];
    size_t len = strlen(body);
    int hl = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %zu\r\n\r\n",
                      path, port, len);
    int rc = send_all(fd, head, (size_t)hl) == 0 && send_all(fd, body, len) == 0 ? 0 : -1;
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    close(fd);
    return rc;
}

int http_send_partial(int port, const char *path, size_t declared, const char *part)
{
    int fd = connect_loopback(port);
    if (fd < 0)
        return -1;
    char head[512];
    int hl = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %zu\r\n\r\n",
                      path, port, declared);
    if (send_all(fd, head, (size_t)hl) != 0 || send_all(fd, part, strlen(part)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void http_reply_free(http_reply *reply)
{
    free(reply->body);
    reply->body = NULL;
}

int http_wait_output(int fd, const char *needle, int seconds, char *log, size_t log_len)
{
    size_t used = strlen(log);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (strstr(log, needle))
            return 0;
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left_ms = seconds * 1000L - ((t.tv_sec - t0.tv_sec) * 1000L +
                                          (t.tv_nsec - t0.tv_nsec) / 1000000L);
        if (left_ms <= 0 || used + 1 >= log_len)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)left_ms) <= 0)
            return -1;
        ssize_t r = read(fd, log + used, log_len - used - 1);
        if (r <= 0)
            return -1;
        used += (size_t)r;
        log[used] = '\0';
    }
}

int http_start_server(char *const argv[], int seconds, int *port, int *out_fd, char *log,
                      size_t log_len)
{
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        close(pipefd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pipefd[1]);
    log[0] = '\0';
    const char *at;
    if (http_wait_output(pipefd[0], "\n", seconds, log, log_len) != 0 ||
        !(at = strstr(log, "listening on http://")) || !(at = strchr(at + 20, ':')) ||
        sscanf(at + 1, "%d", port) != 1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(pipefd[0]);
        return -1;
    }
    *out_fd = pipefd[0];
    return pid;
}
