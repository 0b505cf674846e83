/* Sampling the next token; see sampling.h. All sums are in double, in an
 * order fixed by the definition (not by the thread or the batch). */
#include <math.h>
#include <stdlib.h>

#include "core/search/sampling.h"

#define GOLDEN_GAMMA 0x9E3779B97F4A7C15ull

/* SplitMix64's output function (Steele, Lea, Flood 2014). */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t tsr_sample_key(uint64_t seed, uint64_t index)
{
    return mix64(seed ^ mix64(index + GOLDEN_GAMMA));
}

double tsr_sample_uniform(uint64_t key, uint64_t t)
{
    uint64_t x = mix64(key + (t + 1) * GOLDEN_GAMMA);
    return (double)(x >> 11) * 0x1.0p-53;
}

/* Most likely first; equal log-probabilities: lower id first. */
static int more_likely(const tsr_sample_entry *a, const tsr_sample_entry *b)
{
    return a->lp > b->lp || (a->lp == b->lp && a->id < b->id);
}

static int by_likelihood(const void *pa, const void *pb)
{
    const tsr_sample_entry *a = pa, *b = pb;
    return more_likely(a, b) ? -1 : more_likely(b, a) ? 1 : 0;
}

static int by_id(const void *pa, const void *pb)
{
    const tsr_sample_entry *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

/* The k most likely of lp into e[0..k), sorted most likely first, by
 * insertion: for a small k most tokens fail the first comparison. */
static size_t top_k_by_insertion(const float *lp, size_t V, size_t k, tsr_sample_entry *e)
{
    size_t have = 0;
    for (size_t v = 0; v < V; v++) {
        tsr_sample_entry c = {0.0, lp[v], (int32_t)v};
        if (c.lp == -INFINITY || (have == k && !more_likely(&c, &e[k - 1])))
            continue;
        size_t j = have < k ? have++ : k - 1;
        while (j > 0 && more_likely(&c, &e[j - 1])) {
            e[j] = e[j - 1];
            j--;
        }
        e[j] = c;
    }
    return have;
}

/* Below this k the insertion above beats sorting the whole vocabulary. */
#define INSERTION_TOP_K 64

int32_t tsr_sample(const tsr_sampler *s, const float *lp, size_t V, double u,
                   tsr_sample_entry *e)
{
    size_t n = 0;
    int sorted = 0; /* e[0..n) most likely first, else in id order */
    if (s->topk > 0 && s->topk <= INSERTION_TOP_K) {
        n = top_k_by_insertion(lp, V, s->topk, e);
        sorted = 1;
    } else {
        for (size_t v = 0; v < V; v++)
            if (lp[v] != -INFINITY)
                e[n++] = (tsr_sample_entry){0.0, lp[v], (int32_t)v};
        if (s->topk > 0 && s->topk < n) {
            qsort(e, n, sizeof *e, by_likelihood);
            n = s->topk;
            sorted = 1;
        }
    }
    if (n == 0)
        return -1;
    float max_lp = e[0].lp;
    for (size_t i = 1; i < n; i++)
        if (e[i].lp > max_lp)
            max_lp = e[i].lp;
    const double inv_t = 1.0 / s->temperature;
    for (size_t i = 0; i < n; i++)
        e[i].w = exp(((double)e[i].lp - (double)max_lp) * inv_t);
    if (s->topp < 1.0) {
        if (!sorted)
            qsort(e, n, sizeof *e, by_likelihood);
        sorted = 1;
        double total = 0.0, run = 0.0;
        for (size_t i = 0; i < n; i++)
            total += e[i].w;
        size_t keep = 0;
        while (keep < n) {
            run += e[keep++].w;
            if (run >= s->topp * total)
                break;
        }
        n = keep;
    }
    if (sorted)
        qsort(e, n, sizeof *e, by_id);
    double W = 0.0;
    for (size_t i = 0; i < n; i++)
        W += e[i].w;
    const double target = u * W;
    double c = 0.0;
    for (size_t i = 0; i < n; i++) {
        c += e[i].w;
        if (c > target)
            return e[i].id;
    }
    return e[n - 1].id;
}
