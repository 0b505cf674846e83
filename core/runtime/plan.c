/* Memory plans (core/runtime/plan.h): the arithmetic every module's plan
 * shares, the size of each kind of block, and the threads' scratch (each
 * module plans what it allocates, next to the code that allocates it). */
#include "core/runtime/plan.h"

#include <stdint.h>

#include "base/memory.h"
#include "core/model/model.h"
#include "simd/gemm/gemm.h"

size_t tsr_plan_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

size_t tsr_plan_mul(size_t a, size_t b)
{
    return a != 0 && b > SIZE_MAX / a ? SIZE_MAX : a * b;
}

/* What the allocator may add to a request, counted as base/memory.c's tests'
 * build counts a block (its usable size): a malloc'd block at most 56 bytes
 * more; a tsr_alloc block its rounding and one more vector (2 x TSR_ALIGN)
 * and, when the allocator maps it whole, the rest of its last page. */
#define MALLOC_SLACK 64
#define ALLOC_SLACK (2 * TSR_ALIGN + 4096)

size_t tsr_plan_block(size_t bytes) { return tsr_plan_add(bytes, MALLOC_SLACK); }

size_t tsr_plan_aligned(size_t bytes) { return tsr_plan_add(bytes, ALLOC_SLACK); }

size_t tsr_plan_floats(size_t n) { return tsr_plan_aligned(tsr_plan_mul(n, sizeof(float))); }

size_t tsr_plan_buffer(size_t n)
{
    /* tsr_buffer_reserve: capacities 1024, 2048, ... floats; while it grows,
     * the old block is held beside the new one, at most half its size. */
    size_t cap = 1024;
    while (cap < n && cap <= SIZE_MAX / 2)
        cap *= 2;
    return tsr_plan_add(tsr_plan_floats(cap), tsr_plan_floats(cap / 2));
}

size_t tsr_plan_thread_scratch(const tsr_exec *ex)
{
    const tsr_gemm_config *cfg = ex->ks->gemm;
    const tessera_model *m = ex->m;
    size_t k = m->d > (size_t)m->cfg.d_ff ? m->d : (size_t)m->cfg.d_ff;
    /* A slot holds packed rows of x: at most the larger of one block
     * (a_block_floats) and one row tile of the longest k (mr rows, or the
     * portable int8 layer's 8); the int8 slot packs bytes, 4 per k group. */
    size_t mr = 8, a_block = 0;
    if (cfg) {
        a_block = cfg->a_block_floats;
        if (cfg->mr > mr)
            mr = cfg->mr;
        if (cfg->i8 && cfg->i8->mr > mr)
            mr = cfg->i8->mr;
    }
    size_t rows = tsr_plan_mul(mr, k + 4);
    size_t floats = rows > a_block ? rows : a_block;
    /* One slot is used: the float GEMM's (f32, bf16 weights) or the int8
     * layer's; and the table of slots. */
    size_t per_thread = tsr_plan_add(tsr_plan_floats(floats), 256);
    return tsr_plan_mul((size_t)ex->threads, per_thread);
}
