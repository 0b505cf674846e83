/* tessera_model_random: a model of any architecture on reproducible random
 * weights, for benchmarks that need no files. */
#include <math.h>
#include <string.h>

#include "base/errors.h"
#include "core/model/compute_type.h"
#include "core/model/config.h"
#include "core/model/model.h"
#include "simd/dispatch.h"

typedef struct random_source {
    uint64_t state;
    const tessera_config *cfg;
} random_source;

/* splitmix64: cheap, reproducible across platforms. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float uniform(uint64_t *s) /* [-1, 1) */
{
    return (float)((double)(next_u64(s) >> 11) * 0x1.0p-52 - 1.0);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Norms start at gamma 1, beta 0 like PyTorch; weights are uniform with a
 * Xavier-like scale so activations stay in range through deep stacks. The
 * generator's EOS bias is pushed down so that decoding runs to max-len, which
 * benchmarks of a fixed number of tokens rely on. */
static int fetch_random(void *ctx, const char *name, const size_t *shape, size_t ndim,
                        int optional, int rows_at_least, float *dst, void *scratch, char *err,
                        size_t err_len)
{
    random_source *rs = ctx;
    (void)scratch;
    (void)err;
    (void)err_len;
    (void)rows_at_least;
    if (optional && strstr(name, "pos_embedding"))
        return 1; /* use the computed sinusoid */
    if (!dst)
        return 0; /* checking: every tensor exists */
    size_t count = 1;
    for (size_t i = 0; i < ndim; i++)
        count *= shape[i];
    int is_norm = strstr(name, "norm") != NULL;
    if (is_norm) {
        float v = ends_with(name, ".weight") ? 1.0f : 0.0f;
        for (size_t i = 0; i < count; i++)
            dst[i] = v;
        return 0;
    }
    float scale = ndim == 2 ? sqrtf(6.0f / (float)(shape[0] + shape[1])) : 0.02f;
    if (strstr(name, "tok_emb"))
        scale = 1.0f / sqrtf((float)shape[1]);
    for (size_t i = 0; i < count; i++)
        dst[i] = scale * uniform(&rs->state);
    if (strcmp(name, "generator.bias") == 0)
        dst[rs->cfg->eos_id] = -30.0f;
    return 0;
}

int tessera_model_random(const tessera_config *config, uint64_t seed, tessera_model **model,
                         char *err, size_t err_len)
{
    /* The status codes are newer than this function: any error is -1. */
    return tessera_model_random_with(config, seed, NULL, model, err, err_len) != 0 ? -1 : 0;
}

int tessera_model_random_with(const tessera_config *config, uint64_t seed,
                              const tessera_load_options *options, tessera_model **model,
                              char *err, size_t err_len)
{
    tessera_compute_type type;
    if (!model || !config)
        return tsr_fail(err, err_len, "random model: %s is NULL",
                        !model ? "the result pointer" : "the config");
    *model = NULL;
    TSR_TRY(tsr_config_validate(config, err, err_len));
    TSR_TRY(tsr_compute_type_resolve(options, &type, err, err_len));
    const tsr_kernels *kernels = tsr_kernels_select(err, err_len);
    if (!kernels)
        return TESSERA_ERR_INPUT;
    random_source rs = {seed, config};
    tsr_weight_source src = {.fetch = fetch_random, .ctx = &rs}; /* in order: one state */
    return tsr_model_build(config, kernels, type, options ? options->numa : NULL, 1, &src, model,
                           err, err_len);
}
