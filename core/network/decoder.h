/* The decoder stack, run incrementally: each call feeds some new tokens per
 * hypothesis slot, appends their self-attention keys and values to the
 * slot's cache, and attends to the cached prefix, so a decoding step costs
 * O(current length). Teacher-forced scoring is the same call with all target
 * tokens at once. */
#ifndef TSR_CORE_NETWORK_DECODER_H
#define TSR_CORE_NETWORK_DECODER_H

#include "base/memory.h"
#include "core/model/model.h"
#include "core/network/batch.h"
#include "core/network/kv_cache.h"
#include "core/network/ops.h"

/* Cross-attention keys and values of every decoder layer, computed once per
 * sentence from the encoder output. kv[layer] holds `width` x d floats per
 * source row; sentence s's n rows at kv[layer] + src->row0[s] * width * d,
 * head by head: K of head h is [n][d_head] at h * n * d_head, V of head h
 * at n * d + h * n * d_head, and, when width is 3, K again, transposed
 * ([d_head][n]), at 2 n d + h * n * d_head. A decoding step reads a head's
 * keys and values as one contiguous run each, not as d_head floats of every
 * 2d-float row (a stride that maps a head's keys to a few cache sets and
 * pages), and its scores from the transposed keys with plain vector loads
 * (the attention kernels' kt); K itself serves the kernels that read K,
 * teacher-forced scoring and the alignments. Scoring, which takes no
 * one-row steps, builds width 2. */
typedef struct tsr_cross_memory {
    float **kv;
    const tsr_packing *src;
    size_t width; /* 3: K transposed as well, for decoding steps; 2: K and V only */
} tsr_cross_memory;

/* steps: the decoder will take one-row decoding steps (translation), so K
 * is kept transposed too; 0 for teacher-forced scoring alone. */
int tsr_cross_memory_build(const tsr_exec *ex, const float *memory, const tsr_packing *src,
                           int steps, tsr_cross_memory *cm, char *err, size_t err_len);
void tsr_cross_memory_free(const tessera_model *m, tsr_cross_memory *cm);

/* The new tokens of one hypothesis in a decoder call. */
typedef struct tsr_decode_seq {
    size_t slot;     /* its KV cache slot; its tokens go at positions len.. */
    size_t sentence; /* which source sentence it attends to */
    size_t n_new;    /* tokens fed in this call */
} tsr_decode_seq;

typedef struct tsr_decoder {
    const tsr_exec *ex; /* the call's context (core/runtime/runtime.h), for the decoder's life */
    const tsr_cross_memory *cross;
    tsr_kv_cache cache;
    tsr_buffer x, h, qkv, attn, scratch;
    tsr_attention_job *jobs;
    size_t *row0; /* first row of each sequence in the call */
    size_t jobs_cap;
    /* Set by tsr_decoder_want_alignments: after each call, alignment[row]
     * is the row's source position (core/network/alignment.h) in the last layer. */
    int want_alignments;
    int32_t *alignment;
    size_t alignment_cap, longest_source;
    tsr_buffer alignment_work;
} tsr_decoder;

int tsr_decoder_init(tsr_decoder *dec, const tsr_exec *ex, const tsr_cross_memory *cross,
                     size_t n_slots, char *err, size_t err_len);
void tsr_decoder_free(tsr_decoder *dec);

/* From now on every call also fills dec->alignment. */
void tsr_decoder_want_alignments(tsr_decoder *dec);

/* Feeds `tokens` (the new tokens of seqs[0], then seqs[1], ...) through the
 * decoder. On success *hidden points to [rows][d] final hidden states (after
 * the final norm when present), valid until the next call; each slot's cache
 * length has grown by its n_new. A tessera_status with a message on
 * allocation failure (TESSERA_ERR_NOMEM) or when a position would pass
 * max_positions (TESSERA_ERR_INPUT). */
int tsr_decoder_forward(tsr_decoder *dec, const int32_t *tokens, const tsr_decode_seq *seqs,
                        size_t n, const float **hidden, char *err, size_t err_len);

/* After a call: leaves out the first `drop` rows of every sequence (each fed
 * more than `drop` tokens) from the hidden states and the alignments, the
 * others packed in their order; returns the hidden states. For the rows
 * whose next token is given rather than predicted: a start token before a
 * forced target language. */
const float *tsr_decoder_drop_leading_rows(tsr_decoder *dec, const tsr_decode_seq *seqs, size_t n,
                                           size_t drop);

/* Memory plans (core/runtime/plan.h): the cross memory of src_rows source
 * rows, and what building it holds besides (one layer's rows before their
 * layout); a decoder over `slots` hypotheses whose caches reach `positions`
 * positions, fed `rows` rows by `seqs` sequences per call at the most; with
 * alignments, over sources of up to longest_src tokens. */
size_t tsr_cross_memory_plan(const tessera_model *m, size_t src_rows, int steps);
size_t tsr_cross_memory_build_plan(const tessera_model *m, size_t src_rows);
size_t tsr_decoder_plan(const tsr_exec *ex, size_t slots, size_t seqs, size_t rows,
                        size_t positions, size_t longest_src, int alignments);

#endif
