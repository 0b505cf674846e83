/* The command's workers (cli/workers.h): a ring of batch slots, two per
 * worker, so that every worker has a batch to take while the main thread
 * prints one and reads another. Slots go FREE -> READY (read and parsed) ->
 * BUSY (a worker computes it) -> DONE -> printed, in input order -> FREE. */
#include "cli/workers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/line_reader.h"

/* ---- The pool --------------------------------------------------------------- */

enum slot_state { SLOT_FREE, SLOT_READY, SLOT_BUSY, SLOT_DONE };

typedef struct slot {
    void *state;          /* the command's batch */
    size_t n;             /* its lines */
    long batch;           /* its number in input order */
    size_t first_line;    /* the input line number of its first line */
    enum slot_state kind;
    int rc;
    char err[1024];
} slot;

typedef struct pool {
    const cli_work *w;
    void *ctx;
    slot *slots;
    int n_slots;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
} pool;

typedef struct worker {
    pool *p;
    tessera_runtime *rt;
    pthread_t thread;
} worker;

/* The READY slot read first, or NULL. Call with the lock. */
static slot *first_ready(pool *p)
{
    slot *best = NULL;
    for (int i = 0; i < p->n_slots; i++)
        if (p->slots[i].kind == SLOT_READY && (!best || p->slots[i].batch < best->batch))
            best = &p->slots[i];
    return best;
}

static void *worker_main(void *arg)
{
    worker *wk = arg;
    pool *p = wk->p;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        slot *s;
        while (!(s = first_ready(p)) && !p->stop)
            pthread_cond_wait(&p->cond, &p->lock);
        if (!s)
            break;
        s->kind = SLOT_BUSY;
        pthread_mutex_unlock(&p->lock);
        s->err[0] = '\0';
        int rc = p->w->compute(p->ctx, s->state, s->n, s->first_line - 1, wk->rt, s->err,
                               sizeof s->err);
        pthread_mutex_lock(&p->lock);
        s->rc = rc;
        s->kind = SLOT_DONE;
        pthread_cond_broadcast(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* A batch's error as one line. The library names an input by its place in
 * the call ("sentence 3 (40 tokens) needs ..."): that becomes its line of
 * the input ("line 17 (40 tokens) needs ..."). */
static int batch_error(const slot *s)
{
    size_t k;
    int at = 0;
    if ((sscanf(s->err, "sentence %zu %n", &k, &at) == 1 ||
         sscanf(s->err, "pair %zu %n", &k, &at) == 1) && at > 0 && k >= 1 && k <= s->n)
        return cli_error("line %zu %s", s->first_line + k - 1, s->err + at);
    return cli_error("%s", s->err);
}

/* Waits for batch `b` (in slot b % n_slots) to be computed, prints it and
 * frees its slot; the exit status. */
static int print_batch(pool *p, long b)
{
    slot *s = &p->slots[b % p->n_slots];
    pthread_mutex_lock(&p->lock);
    while (s->kind != SLOT_DONE)
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
    int status = s->rc != 0 ? batch_error(s) : p->w->print(p->ctx, s->state, s->n);
    pthread_mutex_lock(&p->lock);
    s->kind = SLOT_FREE;
    pthread_mutex_unlock(&p->lock);
    return status;
}

/* Reads and parses up to cap lines (and max_tokens source tokens, when not
 * 0) into slot s. A line that fails stops the input: pending receives "line
 * N: message", so that the lines before it are still computed and printed
 * before the error. Returns 1 when more input may follow, 0 at its end or
 * after an error. */
static int read_batch(pool *p, cli_line_reader *r, slot *s, size_t cap, size_t max_tokens,
                      char *pending, size_t pending_len)
{
    char *line, msg[768];
    size_t len, tokens = 0;
    s->n = 0;
    while (s->n < cap) {
        int rc = cli_read_line(r, &line, &len);
        if (rc == 0)
            return 0;
        if (rc < 0) {
            snprintf(pending, pending_len, "line %zu: cannot read standard input: %s",
                     r->line_no + 1, strerror(r->error));
            return 0;
        }
        if (memchr(line, '\0', len)) {
            snprintf(pending, pending_len, "line %zu: contains a NUL byte", r->line_no);
            return 0;
        }
        size_t more = 0;
        if (p->w->parse(p->ctx, s->state, line, len, s->n, &more, msg, sizeof msg) != 0) {
            snprintf(pending, pending_len, "line %zu: %s", r->line_no, msg);
            return 0;
        }
        if (max_tokens) {
            if (s->n > 0 && tokens + more > max_tokens) {
                cli_unread_line(r, len); /* the next batch starts with it */
                return 1;
            }
            tokens += more;
        }
        if (s->n == 0)
            s->first_line = r->line_no;
        s->n++;
    }
    return 1;
}

/* Reads, hands out and prints every batch; the exit status. */
static int run_batches(pool *p, size_t cap, size_t max_tokens)
{
    cli_line_reader r = {.in = stdin};
    char pending[1024] = "";
    long read = 0, printed = 0;
    int status = 0, more = 1;
    while (status == 0 && more) {
        slot *s = &p->slots[read % p->n_slots];
        /* The slot is free once the batch n_slots before this one is printed. */
        while (status == 0 && printed <= read - p->n_slots)
            status = print_batch(p, printed++);
        if (status != 0)
            break;
        more = read_batch(p, &r, s, cap, max_tokens, pending, sizeof pending);
        if (s->n > 0) {
            pthread_mutex_lock(&p->lock);
            s->batch = read++;
            s->kind = SLOT_READY;
            pthread_cond_broadcast(&p->cond);
            pthread_mutex_unlock(&p->lock);
        }
    }
    while (status == 0 && printed < read)
        status = print_batch(p, printed++);
    if (status == 0 && pending[0])
        status = cli_error("%s", pending);
    cli_line_reader_free(&r);
    return status;
}

int cli_run_workers(const cli_work *w, void *ctx, size_t cap, size_t max_tokens,
                    tessera_runtime *const *runtimes, int workers)
{
    pool p = {.w = w, .ctx = ctx, .n_slots = 2 * workers};
    worker *wk = calloc((size_t)workers, sizeof *wk);
    p.slots = calloc((size_t)p.n_slots, sizeof *p.slots);
    int status = wk && p.slots ? 0 : cli_error("out of memory for %d workers", workers);
    for (int i = 0; status == 0 && i < p.n_slots; i++)
        if (!(p.slots[i].state = calloc(1, w->slot_bytes)) ||
            w->slot_init(ctx, p.slots[i].state, cap) != 0)
            status = cli_error("out of memory for batches of %zu lines", cap);
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.cond, NULL);
    int started = 0;
    while (status == 0 && started < workers) {
        wk[started] = (worker){.p = &p, .rt = runtimes[started]};
        if (pthread_create(&wk[started].thread, NULL, worker_main, &wk[started]) != 0) {
            status = cli_error("cannot start worker %d of %d", started + 1, workers);
            break;
        }
        started++;
    }
    if (status == 0)
        status = run_batches(&p, cap, max_tokens);
    /* A failed batch stops the printing, not the workers: batches not yet
     * taken are dropped, those being computed are waited for, and every slot
     * then releases whatever results it still holds. */
    pthread_mutex_lock(&p.lock);
    for (int i = 0; i < p.n_slots; i++)
        if (p.slots[i].kind == SLOT_READY)
            p.slots[i].kind = SLOT_FREE;
    p.stop = 1;
    pthread_cond_broadcast(&p.cond);
    pthread_mutex_unlock(&p.lock);
    for (int i = 0; i < started; i++)
        pthread_join(wk[i].thread, NULL);
    pthread_cond_destroy(&p.cond);
    pthread_mutex_destroy(&p.lock);
    for (int i = 0; p.slots && i < p.n_slots; i++)
        if (p.slots[i].state) {
            w->slot_free(ctx, p.slots[i].state, cap);
            free(p.slots[i].state);
        }
    free(p.slots);
    free(wk);
    return status;
}
