/* Running tessera serve in the Criterion tests (test_serve, test_serve_hostile). */
#ifndef TSR_TESTS_SERVE_UTIL_H
#define TSR_TESTS_SERVE_UTIL_H

#include <jansson.h>
#include <sys/types.h>

#include "tests/http_client.h"

typedef struct server {
    pid_t pid;
    int port, out; /* out: its standard output */
    char log[8192];
} server;

/* Starts the tests' tessera serve on model directory `dir` (relative to the
 * source tree unless absolute) with `extra` options (NULL terminated) on an
 * ephemeral port, and waits until it is ready; the test fails otherwise. */
void serve_start(server *s, const char *dir, const char *const *extra);

/* Whether this build's server reads text for model directory `dir`
 * (relative to the source tree): it has SentencePiece, the model tokenizers. */
int serve_reads_text(const char *dir);

/* SIGTERM; the server must exit 0 after saying it stopped. */
void serve_stop(server *s);

/* One request (body NULL: none) and its reply. */
http_reply serve_call(const server *s, const char *method, const char *path, const char *body);

/* The message of an error reply, checked to be the JSON error shape; NULL
 * when it is not. */
const char *serve_error_message(json_t *root);

#endif
