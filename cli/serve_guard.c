/* tessera serve: the read deadline no client can stretch. libmicrohttpd's
 * own timeout is an idle one (a byte every few seconds resets it), so a
 * client sending its headers a byte at a time would hold a connection, and
 * its thread, for as long as it likes: slowloris. Here every connection is
 * registered when it opens, and a sweeper thread cuts (shutdown(2)) any that
 * has spent longer than --read-timeout receiving one request - from its
 * opening, or from the end of its previous answer, to the end of the
 * request's body. While a request is being answered no read deadline runs
 * (the request's own --request-timeout does).
 *
 * The socket is dup'ed on registration, so that the sweeper never shuts a
 * descriptor the daemon has closed and the system reused for another
 * connection: the duplicate keeps the socket it names until the daemon
 * reports the connection closed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/serve.h"

struct srv_guard_entry {
    struct srv_guard_entry *prev, *next;
    int fd;                 /* our duplicate of the connection's socket */
    int reading;            /* receiving a request: the deadline runs */
    int cut;                /* shut down already */
    struct timespec since;  /* when the deadline began */
};

struct srv_guard {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t sweeper;
    int stopping;
    double read_timeout;
    srv_metrics *metrics;
    srv_guard_entry head; /* a ring: head.next is the oldest */
};

/* Shuts the entry's socket: the daemon's thread sees the end of the
 * stream and closes the connection. Under the lock. */
static void cut(srv_guard *g, srv_guard_entry *e, struct timespec now)
{
    if (e->cut || e->fd < 0)
        return;
    e->cut = 1;
    shutdown(e->fd, SHUT_RDWR);
    srv_metrics_request(g->metrics, "other", 408, srv_seconds_between(e->since, now));
}

static void *sweep(void *arg)
{
    srv_guard *g = arg;
    enum { SWEEP_MS = 100 };
    pthread_mutex_lock(&g->lock);
    while (!g->stopping) {
        struct timespec now, deadline;
        clock_gettime(CLOCK_MONOTONIC, &now);
        for (srv_guard_entry *e = g->head.next; e != &g->head; e = e->next)
            if (e->reading && srv_seconds_between(e->since, now) > g->read_timeout)
                cut(g, e, now);
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline = srv_after_ms(deadline, SWEEP_MS);
        pthread_cond_timedwait(&g->wake, &g->lock, &deadline);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

srv_guard *srv_guard_start(double read_timeout, srv_metrics *metrics, char *err, size_t err_len)
{
    srv_guard *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    g->read_timeout = read_timeout;
    g->metrics = metrics;
    g->head.next = g->head.prev = &g->head;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->wake, NULL);
    if (pthread_create(&g->sweeper, NULL, sweep, g) != 0) {
        pthread_cond_destroy(&g->wake);
        pthread_mutex_destroy(&g->lock);
        free(g);
        snprintf(err, err_len, "cannot start the read-deadline thread");
        return NULL;
    }
    return g;
}

srv_guard_entry *srv_guard_open(srv_guard *g, int fd)
{
    srv_guard_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    e->reading = 1;
    clock_gettime(CLOCK_MONOTONIC, &e->since);
    if (e->fd < 0) { /* out of descriptors: this one cannot be guarded; refuse it */
        shutdown(fd, SHUT_RDWR);
        e->cut = 1;
    }
    pthread_mutex_lock(&g->lock);
    e->prev = g->head.prev;
    e->next = &g->head;
    g->head.prev->next = e;
    g->head.prev = e;
    pthread_mutex_unlock(&g->lock);
    return e;
}

void srv_guard_reading(srv_guard *g, srv_guard_entry *e, int reading)
{
    if (!e)
        return;
    pthread_mutex_lock(&g->lock);
    e->reading = reading;
    clock_gettime(CLOCK_MONOTONIC, &e->since);
    pthread_mutex_unlock(&g->lock);
}

void srv_guard_close(srv_guard *g, srv_guard_entry *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&g->lock);
    e->prev->next = e->next;
    e->next->prev = e->prev;
    pthread_mutex_unlock(&g->lock);
    if (e->fd >= 0)
        close(e->fd);
    free(e);
}

void srv_guard_cut_readers(srv_guard *g)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&g->lock);
    for (srv_guard_entry *e = g->head.next; e != &g->head; e = e->next)
        if (e->reading)
            cut(g, e, now);
    pthread_mutex_unlock(&g->lock);
}

void srv_guard_stop(srv_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->stopping = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->sweeper, NULL);
    /* Entries left are the daemon's to close (it is stopped after this). */
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
}
