/* Random sampling of the next token (README "Decoding options"): the
 * candidates are the top-k of the log-probabilities, cut to the nucleus of
 * mass top-p at the temperature, and one uniform number picks among them
 * walked in id order. Walking in id order (not in probability order) makes
 * the choice move only when the number falls within rounding of a boundary:
 * an order by probability would swap near-equal tokens under rounding and
 * change the choice with a chance as large as their probability. */
#ifndef TSR_CORE_SEARCH_SAMPLING_H
#define TSR_CORE_SEARCH_SAMPLING_H

#include <stddef.h>
#include <stdint.h>

typedef struct tsr_sampler {
    size_t topk; /* 0: no cut */
    double topp; /* 1: no cut */
    double temperature;
} tsr_sampler;

/* One candidate: a token, its log-probability and its weight at the
 * temperature. */
typedef struct tsr_sample_entry {
    double w;
    float lp;
    int32_t id;
} tsr_sample_entry;

/* The key of sentence `index`'s random stream under `seed`. */
uint64_t tsr_sample_key(uint64_t seed, uint64_t index);

/* Draw t (0, 1, ...) of the stream `key`: SplitMix64's output t from state
 * key, as a double in [0, 1) with 53 random bits. */
double tsr_sample_uniform(uint64_t key, uint64_t t);

/* The token drawn from log-probabilities lp[0..V) with the uniform number u;
 * scratch holds V entries. -1 when every lp is -inf. */
int32_t tsr_sample(const tsr_sampler *s, const float *lp, size_t V, double u,
                   tsr_sample_entry *scratch);

#endif
