/* The decoding options: their defaults and the one check of their rules,
 * which the library, the command and the server all use (tessera.h says how
 * its messages name the options). */
#include <stdio.h>
#include <string.h>

#include "base/errors.h"
#include "core/model/config.h"
#include "core/shortlist/shortlist.h"

void tessera_translate_options_init(tessera_translate_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->beam = 1;
    o->max_len = 256;
    o->length_penalty = 0.0f;
    o->n_best = 1;
    o->batch = 1;
    o->sampling_topk = 1;
    o->sampling_topp = 1.0f;
    o->sampling_temperature = 1.0f;
    o->repetition_penalty = 1.0f;
    o->end_token = -1;
}

/* "NAME: V is out of range [lo, HI]", HI written as given (a number, or
 * another option with its value). */
static int int_range(const char *name, int v, int lo, int hi, const char *hi_text, char *err,
                     size_t err_len)
{
    if (v >= lo && v <= hi)
        return 0;
    return tsr_fail(err, err_len, "%s: %d is out of range [%d, %s]", name, v, lo, hi_text);
}

static int float_range(const char *name, float v, float lo, float hi, char *err, size_t err_len)
{
    if (v >= lo && v <= hi) /* false for NaN */
        return 0;
    return tsr_fail(err, err_len, "%s: %g is out of range [%g, %g]", name, (double)v, (double)lo,
                    (double)hi);
}

/* Each whole-number option in its range; the upper bound of n_best and
 * min_len is another option. */
static int check_counts(const tessera_translate_options *o, char *err, size_t err_len)
{
    char beam[32], max_len[32], topk_max[32], ngram_max[32], beam_max[32], len_max[32];
    snprintf(beam, sizeof beam, "beam (%d)", o->beam);
    snprintf(max_len, sizeof max_len, "max_len (%d)", o->max_len);
    snprintf(beam_max, sizeof beam_max, "%d", TESSERA_BEAM_MAX);
    snprintf(len_max, sizeof len_max, "%d", TESSERA_MAX_LEN_MAX);
    snprintf(topk_max, sizeof topk_max, "%d", TESSERA_SAMPLING_TOPK_MAX);
    snprintf(ngram_max, sizeof ngram_max, "%d", TESSERA_NO_REPEAT_NGRAM_MAX);
    TSR_TRY(int_range("beam", o->beam, 1, TESSERA_BEAM_MAX, beam_max, err, err_len));
    TSR_TRY(int_range("n_best", o->n_best, 1, o->beam, beam, err, err_len));
    TSR_TRY(int_range("max_len", o->max_len, 0, TESSERA_MAX_LEN_MAX, len_max, err, err_len));
    TSR_TRY(int_range("min_len", o->min_len, 0, o->max_len, max_len, err, err_len));
    TSR_TRY(int_range("sampling_topk", o->sampling_topk, 0, TESSERA_SAMPLING_TOPK_MAX, topk_max,
                      err, err_len));
    TSR_TRY(int_range("no_repeat_ngram", o->no_repeat_ngram, 0, TESSERA_NO_REPEAT_NGRAM_MAX,
                      ngram_max, err, err_len));
    if (o->batch < 1)
        return tsr_fail(err, err_len, "batch: %d must be at least 1", o->batch);
    if (o->batch_tokens < 0)
        return tsr_fail(err, err_len, "batch_tokens: %d must not be negative", o->batch_tokens);
    return 0;
}

int tessera_translate_options_check(const tessera_config *cfg, const tessera_translate_options *o,
                                    char *err, size_t err_len)
{
    if (!o)
        return tsr_fail(err, err_len, "translate: the options are NULL");
    TSR_TRY(check_counts(o, err, err_len));
    TSR_TRY(float_range("length_penalty", o->length_penalty, 0.0f, TESSERA_LENGTH_PENALTY_MAX,
                        err, err_len));
    if (!(o->sampling_topp > 0.0f && o->sampling_topp <= 1.0f))
        return tsr_fail(err, err_len, "sampling_topp: %g is out of range (0, 1]",
                        (double)o->sampling_topp);
    TSR_TRY(float_range("sampling_temperature", o->sampling_temperature,
                        TESSERA_SAMPLING_TEMPERATURE_MIN, TESSERA_SAMPLING_TEMPERATURE_MAX, err,
                        err_len));
    TSR_TRY(float_range("repetition_penalty", o->repetition_penalty,
                        TESSERA_REPETITION_PENALTY_MIN, TESSERA_REPETITION_PENALTY_MAX, err,
                        err_len));
    if (o->sampling_topk == 1 && o->sampling_topp != 1.0f)
        return tsr_fail(err, err_len, "sampling_topp: %g needs sampling_topk 0 or above 1 "
                        "(1 is greedy decoding)", (double)o->sampling_topp);
    if (o->sampling_topk == 1 && o->sampling_temperature != 1.0f)
        return tsr_fail(err, err_len, "sampling_temperature: %g needs sampling_topk 0 or above "
                        "1 (1 is greedy decoding)", (double)o->sampling_temperature);
    if (o->sampling_topk != 1 && o->beam != 1)
        return tsr_fail(err, err_len, "sampling_topk: %d samples, which needs beam 1, not %d",
                        o->sampling_topk, o->beam);
    if (o->end_token < -1 || (cfg && o->end_token >= cfg->tgt_vocab_size)) {
        if (cfg)
            return tsr_fail(err, err_len, "end_token: %d is out of range [-1, %d) (-1: none)",
                            o->end_token, cfg->tgt_vocab_size);
        return tsr_fail(err, err_len, "end_token: %d must be -1 (none) or a target id",
                        o->end_token);
    }
    if (o->shortlist && cfg &&
        (tsr_shortlist_source_size(o->shortlist) != (size_t)cfg->src_vocab_size ||
         tsr_shortlist_target_size(o->shortlist) != (size_t)cfg->tgt_vocab_size))
        return tsr_fail(err, err_len, "shortlist: read over vocabularies of %zu and %zu ids, "
                        "not this model's %d and %d", tsr_shortlist_source_size(o->shortlist),
                        tsr_shortlist_target_size(o->shortlist), cfg->src_vocab_size,
                        cfg->tgt_vocab_size);
    return 0;
}

int tessera_target_prefix_check(const tessera_config *cfg, const tessera_translate_options *o,
                                const tessera_tokens *p, char *err, size_t err_len)
{
    if (!cfg || !o || !p || (p->len > 0 && !p->ids))
        return tsr_fail(err, err_len, "%s is NULL",
                        !cfg ? "the config" : !o ? "the options" : !p ? "the prefix" : "its ids");
    size_t start = tsr_start_length(cfg), limit = (size_t)cfg->max_positions - start;
    if (o->max_len >= 0 && (size_t)o->max_len < limit)
        limit = (size_t)o->max_len;
    if (p->len > limit)
        return tsr_fail(err, err_len,
                        "%zu tokens, more than the %zu target tokens allowed (max_len, "
                        "max_positions - %zu)", p->len, limit, start);
    for (size_t t = 0; t < p->len; t++) {
        int id = (int)p->ids[t];
        if (id < 0 || id >= cfg->tgt_vocab_size)
            return tsr_fail(err, err_len, "token id %d out of range [0, %d)", id,
                            cfg->tgt_vocab_size);
        if (id == cfg->eos_id || id == o->end_token)
            return tsr_fail(err, err_len, "holds the ending token %d (%s)", id,
                            id == cfg->eos_id ? "eos_id" : "end_token");
    }
    return 0;
}
