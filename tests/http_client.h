/* A minimal HTTP/1.1 client for the tests and the load benchmark of tessera
 * serve: one request per connection (Connection: close), to a port on this
 * machine's loopback. */
#ifndef TSR_TESTS_HTTP_CLIENT_H
#define TSR_TESTS_HTTP_CLIENT_H

#include <stddef.h>

typedef struct http_reply {
    int status;        /* the HTTP status; 0 when no reply came */
    int sys_error;     /* errno of a failed connect/send/recv, else 0 */
    int bytes;         /* bytes of reply received (0: none at all) */
    char retry_after[16];
    char content_type[64];
    char *body;        /* NUL-terminated; malloc'd, NULL when no reply */
    size_t body_len;
} http_reply;

/* Sends METHOD PATH with `body` (NULL: none) to 127.0.0.1:port and reads the
 * whole reply. Returns 0 when a complete reply with a status line arrived,
 * -1 otherwise (sys_error / bytes say how far it got). */
int http_request(int port, const char *method, const char *path, const char *body,
                 size_t body_len, http_reply *reply);

/* Sends the bytes of head and then of body (body_len 0: none) as they are,
 * and reads the whole reply as http_request does. */
int http_request_raw(int port, const char *head, size_t head_len, const char *body,
                     size_t body_len, http_reply *reply);

/* The same from the loopback address `source` (127.x.y.z; NULL: the
 * system's choice, 127.0.0.1): a client of another address. */
int http_request_from(const char *source, int port, const char *method, const char *path,
                      const char *body, size_t body_len, http_reply *reply);
int http_request_raw_from(const char *source, int port, const char *head, size_t head_len,
                          const char *body, size_t body_len, http_reply *reply);

/* A socket connected to 127.0.0.1:port from `source` (NULL: any), or -1. */
int http_connect(int port, const char *source);

void http_reply_free(http_reply *reply);

/* Sends POST PATH with body, waits `ms` milliseconds without reading, and
 * closes the connection: a client that goes away. 0 when the request was
 * sent. */
int http_send_and_leave(int port, const char *path, const char *body, int ms);

/* Opens POST PATH announcing a body of `declared` bytes and sends only
 * `part` of it: a request still arriving, until the caller closes the
 * returned socket (-1 on failure). */
int http_send_partial(int port, const char *path, size_t declared, const char *part);

/* Starts `argv` (argv[0] a path) with its standard output on a pipe and
 * waits for a line "... listening on http://HOST:PORT": returns the process
 * id and the port, or -1 when it exited or printed no such line within
 * `seconds`. What it printed so far is in log (NUL-terminated, log_len
 * bytes at most); its further output is left on *out_fd. */
int http_start_server(char *const argv[], int seconds, int *port, int *out_fd, char *log,
                      size_t log_len);

/* Reads the server's output until `needle` appears or `seconds` pass; 0 when
 * it appeared. The text read is appended to log (NUL-terminated, at most
 * log_len bytes). */
int http_wait_output(int fd, const char *needle, int seconds, char *log, size_t log_len);

#endif
