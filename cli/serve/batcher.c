/* tessera serve: the queue of sentences and the workers that decode them in
 * batches (dynamic batching: cli/serve/server.h says how batches form). One lock
 * guards the queue and every job's counters; decoding runs outside it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "cli/serve/server.h"

/* One sentence waiting: sentence `index` of `job`. */
typedef struct item {
    srv_job *job;
    size_t index;
    struct timespec arrival;
} item;

typedef struct worker {
    srv_batcher *b;
    tessera_runtime *rt;
    pthread_t thread;
    item *batch;             /* [max_batch] taken from the queue */
    size_t n;                /* items in batch (read by the cancel function) */
    tessera_tokens *src, *tgt; /* [max_batch]; tgt: score's targets, translate's prefixes */
    uint64_t *streams;         /* [max_batch]: each sentence's index in its request */
} worker;

struct srv_batcher {
    pthread_mutex_t lock;
    pthread_cond_t work; /* items queued, or stopping */
    item *queue;         /* oldest first */
    size_t count, cap;
    size_t decoding; /* items the workers hold: they may come back to the queue */
    int stopping;
    int arriving; /* requests begun and not yet queued or refused */
    const cli_model *cm;
    const srv_settings *s;
    srv_metrics *metrics;
    worker *workers;
    int n_workers;
};

static int earlier(struct timespec a, struct timespec b)
{
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

/* A sentence of job is answered (or dropped): tells its owner when it was
 * the last. Under the lock. */
static void settle(srv_job *job)
{
    if (--job->pending == 0)
        job->decoded(job->decoded_arg);
}

/* Removes the items of stopped jobs from the queue. Under the lock. */
static void drop_stopped(srv_batcher *b)
{
    size_t kept = 0;
    for (size_t i = 0; i < b->count; i++) {
        srv_job *job = b->queue[i].job;
        if (job->stop != SRV_RUNNING) {
            job->waiting--;
            job->dropped++;
            settle(job);
        } else {
            b->queue[kept++] = b->queue[i];
        }
    }
    b->count = kept;
}

/* How many queued items decode with the head's key, up to the batch limits. */
static size_t matching(const srv_batcher *b)
{
    const srv_key *key = &b->queue[0].job->key;
    size_t n = 0, tokens = 0;
    for (size_t i = 0; i < b->count && n < (size_t)b->s->max_batch; i++) {
        const item *it = &b->queue[i];
        if (!srv_same_key(&it->job->key, key))
            continue;
        size_t len = it->job->src[it->index].len;
        if (n > 0 && tokens + len > (size_t)b->s->max_batch_tokens)
            break;
        tokens += len;
        n++;
    }
    return n;
}

/* Moves the head and the items matching it (as counted by matching) into
 * w->batch. Under the lock. */
static size_t take_batch(srv_batcher *b, worker *w, size_t n)
{
    const srv_key key = b->queue[0].job->key;
    size_t taken = 0, kept = 0;
    for (size_t i = 0; i < b->count; i++) {
        item *it = &b->queue[i];
        if (taken < n && srv_same_key(&it->job->key, &key)) {
            w->batch[taken++] = *it;
            it->job->waiting--;
        } else {
            b->queue[kept++] = *it;
        }
    }
    b->count = kept;
    b->decoding += taken;
    w->n = taken;
    return taken;
}

/* The worker's cancel function (tessera_cancel_fn), asked by its runtime
 * between decoding steps: stop when a job of the batch has stopped. */
static int batch_stopped(void *arg)
{
    worker *w = arg;
    pthread_mutex_lock(&w->b->lock);
    int stop = 0;
    for (size_t i = 0; i < w->n && !stop; i++)
        stop = w->batch[i].job->stop != SRV_RUNNING;
    pthread_mutex_unlock(&w->b->lock);
    return stop;
}

/* A cancelled batch: the stopped jobs' sentences are settled, the others go
 * back to the head of the queue, oldest first as they were. Under the lock. */
static void requeue_survivors(srv_batcher *b, worker *w, size_t n)
{
    size_t back = 0;
    for (size_t i = 0; i < n; i++)
        back += w->batch[i].job->stop == SRV_RUNNING;
    memmove(b->queue + back, b->queue, b->count * sizeof *b->queue);
    back = 0;
    for (size_t i = 0; i < n; i++) {
        srv_job *job = w->batch[i].job;
        if (job->stop != SRV_RUNNING) {
            job->dropped++;
            settle(job);
        } else {
            b->queue[back++] = w->batch[i];
            job->waiting++;
        }
    }
    b->count += back;
    if (back > 0)
        pthread_cond_broadcast(&b->work);
    srv_metrics_cancelled_batch(b->metrics, back);
}

/* Decodes the batch on the worker's runtime and hands each answer to its
 * job; then settles them under the lock. */
static void decode_batch(worker *w, size_t n)
{
    srv_batcher *b = w->b;
    const srv_key *key = &w->batch[0].job->key;
    char err[512] = "";
    size_t src_tokens = 0, tgt_tokens = 0;
    int prefixed = 0;
    for (size_t i = 0; i < n; i++) {
        const srv_job *job = w->batch[i].job;
        size_t index = w->batch[i].index;
        w->src[i] = job->src[index];
        /* A sentence without a prefix among prefixed ones: an empty one. */
        const tessera_tokens *second = job->tgt ? job->tgt : job->prefix;
        w->tgt[i] = second ? second[index] : (tessera_tokens){NULL, 0};
        prefixed |= job->prefix != NULL;
        w->streams[i] = index;
        src_tokens += w->src[i].len;
    }
    int rc;
    if (key->kind == SRV_TRANSLATE) {
        /* Sentence i of a request samples from (seed, i) whatever its batch
         * (cli/serve/api.md). */
        tessera_translate_options o = key->decoding;
        tessera_hypothesis *h;
        o.batch = (int)n;
        o.cancel = batch_stopped;
        o.cancel_arg = w;
        o.target_prefix = prefixed ? w->tgt : NULL;
        o.stream_index = w->streams;
        size_t K = (size_t)o.n_best;
        rc = tessera_translate_with(w->rt, b->cm->model, w->src, n, &o, &h, err, sizeof err);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            srv_job *job = w->batch[i].job;
            tgt_tokens += h[i * K].len;
            for (size_t k = 0; k < K; k++) {
                job->hyps[w->batch[i].index * K + k] = h[i * K + k];
                h[i * K + k].ids = NULL; /* the job owns them now */
                h[i * K + k].alignment = NULL;
            }
        }
        if (rc == 0)
            tessera_hypotheses_free(h, n * K);
    } else {
        tessera_score_options o;
        float **lp;
        tessera_score_options_init(&o);
        o.batch = (int)n;
        o.cancel = batch_stopped;
        o.cancel_arg = w;
        o.source_lang = key->decoding.source_lang;
        o.target_lang = key->decoding.target_lang;
        rc = tessera_score_with(w->rt, b->cm->model, w->src, w->tgt, n, &o, &lp, err, sizeof err);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            w->batch[i].job->logprobs[w->batch[i].index] = lp[i];
            tgt_tokens += w->tgt[i].len + 1;
            lp[i] = NULL;
        }
        if (rc == 0)
            tessera_scores_free(lp, n);
    }
#ifdef __GLIBC__
    /* What a cancelled batch freed lies between the blocks still in use of
     * its thread's arena, which glibc keeps (1.3 MB after a cancelled 50 MB
     * batch, measured): given back to the system now (cli/serve/serve.c sets the
     * thresholds that return the large blocks). */
    if (rc == TESSERA_ERR_CANCELLED)
        malloc_trim(0);
#endif
    pthread_mutex_lock(&b->lock);
    b->decoding -= n;
    if (rc == TESSERA_ERR_CANCELLED) {
        requeue_survivors(b, w, n);
    } else {
        for (size_t i = 0; i < n; i++) {
            srv_job *job = w->batch[i].job;
            if (rc != 0 && job->status == 0) {
                job->status = rc;
                snprintf(job->err, sizeof job->err, "%s", err);
            }
            settle(job);
        }
    }
    w->n = 0;
    pthread_mutex_unlock(&b->lock);
    if (rc == 0)
        srv_metrics_batch(b->metrics, n, src_tokens, tgt_tokens);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    srv_batcher *b = w->b;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        drop_stopped(b);
        if (b->count == 0) {
            if (b->stopping)
                break;
            pthread_cond_wait(&b->work, &b->lock);
            continue;
        }
        size_t n = matching(b);
        /* A batch not yet full waits for more sentences while requests are
         * arriving, until the oldest sentence has waited --batch-wait-ms
         * (not when stopping: finish now). */
        if (n < (size_t)b->s->max_batch && b->arriving > 0 && !b->stopping) {
            struct timespec now,
                deadline = srv_after_ms(b->queue[0].arrival, b->s->batch_wait_ms);
            clock_gettime(CLOCK_REALTIME, &now);
            if (earlier(now, deadline)) {
                pthread_cond_timedwait(&b->work, &b->lock, &deadline);
                continue;
            }
        }
        n = take_batch(b, w, n);
        pthread_mutex_unlock(&b->lock);
        decode_batch(w, n);
        pthread_mutex_lock(&b->lock);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* Frees every worker's buffers (all cm->n_runtimes of them, started or not). */
static void free_workers(srv_batcher *b)
{
    for (int i = 0; b->workers && i < b->cm->n_runtimes; i++) {
        free(b->workers[i].batch);
        free(b->workers[i].src);
        free(b->workers[i].tgt);
        free(b->workers[i].streams);
    }
    free(b->workers);
}

srv_batcher *srv_batcher_start(const cli_model *cm, const srv_settings *s, srv_metrics *metrics,
                               char *err, size_t err_len)
{
    srv_batcher *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, err_len, "out of memory for the queue");
        return NULL;
    }
    b->cm = cm;
    b->s = s;
    b->metrics = metrics;
    b->cap = (size_t)s->max_queue;
    b->queue = malloc(b->cap * sizeof *b->queue);
    b->workers = calloc((size_t)cm->n_runtimes, sizeof *b->workers);
    int ok = b->queue && b->workers;
    for (int i = 0; ok && i < cm->n_runtimes; i++) {
        worker *w = &b->workers[i];
        w->batch = malloc((size_t)s->max_batch * sizeof *w->batch);
        w->src = malloc((size_t)s->max_batch * sizeof *w->src);
        w->tgt = malloc((size_t)s->max_batch * sizeof *w->tgt);
        w->streams = malloc((size_t)s->max_batch * sizeof *w->streams);
        ok = w->batch && w->src && w->tgt && w->streams;
    }
    if (!ok) {
        free_workers(b);
        free(b->queue);
        free(b);
        snprintf(err, err_len, "out of memory for the queue of %d sentences", s->max_queue);
        return NULL;
    }
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->work, NULL);
    for (; b->n_workers < cm->n_runtimes; b->n_workers++) {
        worker *w = &b->workers[b->n_workers];
        w->b = b;
        w->rt = cm->runtimes[b->n_workers];
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            snprintf(err, err_len, "cannot start worker %d", b->n_workers);
            srv_batcher_stop(b);
            return NULL;
        }
    }
    return b;
}

int srv_batcher_submit(srv_batcher *b, srv_job *job, void (*decoded)(void *arg), void *arg)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    pthread_mutex_lock(&b->lock);
    if (b->stopping || b->count + b->decoding + job->n > b->cap) {
        pthread_mutex_unlock(&b->lock);
        return -1;
    }
    job->decoded = decoded;
    job->decoded_arg = arg;
    for (size_t i = 0; i < job->n; i++)
        b->queue[b->count++] = (item){job, i, now};
    job->waiting = job->pending = job->n;
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->lock);
    return 0;
}

void srv_batcher_stop_job(srv_batcher *b, srv_job *job, srv_stop why)
{
    /* Nobody will read the answer, or nobody wants it any more: what is
     * still queued is dropped, and a batch decoding any of it stops at its
     * next step (batch_stopped). */
    pthread_mutex_lock(&b->lock);
    if (job->pending > 0 && job->stop == SRV_RUNNING) {
        job->stop = why;
        drop_stopped(b);
    }
    pthread_mutex_unlock(&b->lock);
}

void srv_batcher_cancel_all(srv_batcher *b)
{
    pthread_mutex_lock(&b->lock);
    for (size_t i = 0; i < b->count; i++)
        b->queue[i].job->stop = SRV_SHUTDOWN;
    for (int w = 0; w < b->n_workers; w++)
        for (size_t i = 0; i < b->workers[w].n; i++)
            b->workers[w].batch[i].job->stop = SRV_SHUTDOWN;
    drop_stopped(b);
    pthread_mutex_unlock(&b->lock);
}

void srv_batcher_arriving(srv_batcher *b, int delta)
{
    pthread_mutex_lock(&b->lock);
    b->arriving += delta;
    if (b->arriving == 0)
        pthread_cond_broadcast(&b->work); /* nothing more to wait for */
    pthread_mutex_unlock(&b->lock);
}

size_t srv_batcher_depth(srv_batcher *b)
{
    pthread_mutex_lock(&b->lock);
    size_t n = b->count;
    pthread_mutex_unlock(&b->lock);
    return n;
}

void srv_batcher_stop(srv_batcher *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    b->stopping = 1;
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->lock);
    for (int i = 0; i < b->n_workers; i++)
        pthread_join(b->workers[i].thread, NULL);
    pthread_cond_destroy(&b->work);
    pthread_mutex_destroy(&b->lock);
    free_workers(b);
    free(b->queue);
    free(b);
}
