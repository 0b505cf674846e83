/* Running tessera serve in the Criterion tests (test_serve, test_serve_hostile). */
#ifndef TSR_TESTS_SERVE_UTIL_H
#define TSR_TESTS_SERVE_UTIL_H

#include <sys/types.h>

typedef struct server {
    pid_t pid;
    int port, out; /* out: its standard output */
    char log[8192];
} server;

/* Starts the tests' tessera serve on model directory `dir` (relative to the
 * source tree unless absolute) with `extra` options (NULL terminated) on an
 * ephemeral port, and waits until it is ready; the test fails otherwise. */
void serve_start(server *s, const char *dir, const char *const *extra);

#endif
