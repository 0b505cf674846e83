/* tessera_translate_options_check and tessera_target_prefix_check, rule by
 * rule: each bound just inside (accepted) and just outside (refused with a
 * message that starts with the field at fault). No model: a config. */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/tessera.h"

/* How a case moves a bound: the value itself, or the next float below or
 * above it (for a whole-number field, one below or above). */
typedef enum step { AT, BELOW, ABOVE } step;

typedef struct field {
    const char *name;
    size_t offset;
    int is_float;
} field;

#define FIELD(f, is_float) {#f, offsetof(tessera_translate_options, f), is_float}
static const field fields[] = {
    FIELD(beam, 0),           FIELD(n_best, 0),           FIELD(max_len, 0),
    FIELD(min_len, 0),        FIELD(batch, 0),            FIELD(batch_tokens, 0),
    FIELD(sampling_topk, 0),  FIELD(no_repeat_ngram, 0),  FIELD(end_token, 0),
    FIELD(length_penalty, 1), FIELD(sampling_topp, 1),    FIELD(sampling_temperature, 1),
    FIELD(repetition_penalty, 1),
};

static void set(tessera_translate_options *o, const char *name, double value, step s)
{
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (strcmp(fields[i].name, name) != 0)
            continue;
        char *at = (char *)o + fields[i].offset;
        if (fields[i].is_float) {
            float v = (float)value;
            *(float *)at = s == AT ? v : nextafterf(v, s == BELOW ? -INFINITY : INFINITY);
        } else {
            *(int *)at = (int)value + (s == BELOW ? -1 : s == ABOVE ? 1 : 0);
        }
        return;
    }
    cr_assert_fail("no field %s", name);
}

typedef struct rule_case {
    const char *name; /* the field at a bound */
    double value;
    const char *context; /* another field set first ("" none), at context_value */
    double context_value;
} rule_case;

/* The bounds of each rule: value is the bound, accepted AT it, refused one
 * step outside (BELOW a lower bound, ABOVE an upper one). */
static const struct bound {
    rule_case c;
    step outside;
} bounds[] = {
    {{"beam", 1, "", 0}, BELOW},
    {{"beam", TESSERA_BEAM_MAX, "", 0}, ABOVE},
    {{"n_best", 1, "", 0}, BELOW},
    {{"n_best", 4, "beam", 4}, ABOVE},
    {{"max_len", 0, "", 0}, BELOW},
    {{"max_len", TESSERA_MAX_LEN_MAX, "", 0}, ABOVE},
    {{"min_len", 0, "", 0}, BELOW},
    {{"min_len", 20, "max_len", 20}, ABOVE},
    {{"batch", 1, "", 0}, BELOW},
    {{"batch_tokens", 0, "", 0}, BELOW},
    {{"sampling_topk", 0, "", 0}, BELOW},
    {{"sampling_topk", TESSERA_SAMPLING_TOPK_MAX, "", 0}, ABOVE},
    {{"no_repeat_ngram", 0, "", 0}, BELOW},
    {{"no_repeat_ngram", TESSERA_NO_REPEAT_NGRAM_MAX, "", 0}, ABOVE},
    {{"end_token", -1, "", 0}, BELOW},
    {{"length_penalty", 0, "", 0}, BELOW},
    {{"length_penalty", TESSERA_LENGTH_PENALTY_MAX, "", 0}, ABOVE},
    {{"sampling_topp", 1, "sampling_topk", 0}, ABOVE},
    {{"sampling_temperature", TESSERA_SAMPLING_TEMPERATURE_MIN, "sampling_topk", 0}, BELOW},
    {{"sampling_temperature", TESSERA_SAMPLING_TEMPERATURE_MAX, "sampling_topk", 0}, ABOVE},
    {{"repetition_penalty", TESSERA_REPETITION_PENALTY_MIN, "", 0}, BELOW},
    {{"repetition_penalty", TESSERA_REPETITION_PENALTY_MAX, "", 0}, ABOVE},
};

static tessera_config model_config(void)
{
    tessera_config c;
    tessera_config_defaults(&c);
    c.tgt_vocab_size = 36;
    c.max_positions = 32;
    c.eos_id = 3;
    return c;
}

/* 0, or the status with the message in err. */
static int check(const rule_case *c, step s, const tessera_config *cfg, char *err, size_t len)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    if (c->context[0])
        set(&o, c->context, c->context_value, AT);
    set(&o, c->name, c->value, s);
    err[0] = '\0';
    return tessera_translate_options_check(cfg, &o, err, len);
}

/* The message starts with the field at fault. */
static void expect_names(const char *err, const char *name)
{
    size_t len = strlen(name);
    cr_expect(strncmp(err, name, len) == 0 && err[len] == ':', "'%s' does not start with '%s:'",
              err, name);
}

Test(options, every_bound_just_inside_and_just_outside)
{
    tessera_config cfg = model_config();
    char err[256];
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        const rule_case *c = &bounds[i].c;
        for (int with_config = 0; with_config < 2; with_config++) {
            const tessera_config *config = with_config ? &cfg : NULL;
            cr_expect_eq(check(c, AT, config, err, sizeof err), 0, "%s at %g: %s", c->name,
                         c->value, err);
            cr_expect_eq(check(c, bounds[i].outside, config, err, sizeof err), TESSERA_ERR_INPUT,
                         "%s just past %g: accepted", c->name, c->value);
            expect_names(err, c->name);
        }
    }
}

/* (0, 1]: the lower bound itself is out, the next float in. */
Test(options, sampling_topp_excludes_zero)
{
    char err[256];
    const rule_case zero = {"sampling_topp", 0, "sampling_topk", 0};
    cr_expect_eq(check(&zero, AT, NULL, err, sizeof err), TESSERA_ERR_INPUT);
    cr_expect_str_eq(err, "sampling_topp: 0 is out of range (0, 1]");
    cr_expect_eq(check(&zero, ABOVE, NULL, err, sizeof err), 0, "%s", err);
}

Test(options, not_a_number_is_out_of_every_range)
{
    char err[256];
    const char *const names[] = {"length_penalty", "sampling_topp", "sampling_temperature",
                                 "repetition_penalty"};
    for (size_t i = 0; i < 4; i++) {
        const rule_case c = {names[i], NAN, "sampling_topk", 0};
        cr_expect_eq(check(&c, AT, NULL, err, sizeof err), TESSERA_ERR_INPUT, "%s NaN", names[i]);
        expect_names(err, names[i]);
    }
}

/* The combinations: sampling shapes need sampling, sampling needs beam 1. */
Test(options, combinations)
{
    char err[256];
    static const struct {
        rule_case c;
        const char *says; /* NULL: accepted */
    } cases[] = {
        {{"sampling_topp", 0.5, "", 0},
         "sampling_topp: 0.5 needs sampling_topk 0 or above 1 (1 is greedy decoding)"},
        {{"sampling_temperature", 2, "", 0},
         "sampling_temperature: 2 needs sampling_topk 0 or above 1 (1 is greedy decoding)"},
        {{"sampling_topp", 0.5, "sampling_topk", 2}, NULL},
        {{"beam", 2, "sampling_topk", 0}, "sampling_topk: 0 samples, which needs beam 1, not 2"},
        {{"beam", 2, "sampling_topk", 1}, NULL},
        {{"n_best", 2, "", 0}, "n_best: 2 is out of range [1, beam (1)]"},
        {{"min_len", 257, "", 0}, "min_len: 257 is out of range [0, max_len (256)]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = check(&cases[i].c, AT, NULL, err, sizeof err);
        if (cases[i].says)
            cr_expect_str_eq(err, cases[i].says);
        else
            cr_expect_eq(rc, 0, "%s: %s", cases[i].c.name, err);
    }
}

/* end_token: any id >= 0 without a config; within the target vocabulary
 * with one. */
Test(options, end_token_within_the_model)
{
    tessera_config cfg = model_config();
    char err[256];
    const rule_case last = {"end_token", 35, "", 0};
    cr_expect_eq(check(&last, AT, &cfg, err, sizeof err), 0, "%s", err);
    cr_expect_eq(check(&last, ABOVE, NULL, err, sizeof err), 0, "%s", err);
    cr_expect_eq(check(&last, ABOVE, &cfg, err, sizeof err), TESSERA_ERR_INPUT);
    cr_expect_str_eq(err, "end_token: 36 is out of range [-1, 36) (-1: none)");
    cr_expect_eq(tessera_translate_options_check(&cfg, NULL, err, sizeof err), TESSERA_ERR_INPUT);
}

/* A prefix: at most min(max_len, max_positions - 1) tokens, ids in the
 * target vocabulary, no ending token. */
Test(options, target_prefix)
{
    tessera_config cfg = model_config();
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.end_token = 7;
    int32_t ids[40];
    for (size_t i = 0; i < 40; i++)
        ids[i] = 5;
    char err[256];
    tessera_tokens p = {ids, 31}; /* max_positions - 1 */
    cr_expect_eq(tessera_target_prefix_check(&cfg, &o, &p, err, sizeof err), 0, "%s", err);
    p.len = 32;
    cr_expect_eq(tessera_target_prefix_check(&cfg, &o, &p, err, sizeof err), TESSERA_ERR_INPUT);
    cr_expect_str_eq(err, "32 tokens, more than the 31 target tokens allowed (max_len, "
                          "max_positions - 1)");
    o.max_len = 4;
    p.len = 4;
    cr_expect_eq(tessera_target_prefix_check(&cfg, &o, &p, err, sizeof err), 0, "%s", err);
    p.len = 5;
    cr_expect_eq(tessera_target_prefix_check(&cfg, &o, &p, err, sizeof err), TESSERA_ERR_INPUT);
    static const struct {
        int32_t id;
        const char *says;
    } bad[] = {
        {-1, "token id -1 out of range [0, 36)"},
        {36, "token id 36 out of range [0, 36)"},
        {3, "holds the ending token 3 (eos_id)"},
        {7, "holds the ending token 7 (end_token)"},
    };
    p.len = 2;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ids[1] = bad[i].id;
        cr_expect_eq(tessera_target_prefix_check(&cfg, &o, &p, err, sizeof err),
                     TESSERA_ERR_INPUT, "id %d", bad[i].id);
        cr_expect_str_eq(err, bad[i].says);
    }
    ids[1] = 35;
    cr_expect_eq(tessera_target_prefix_check(&cfg, &o, &p, err, sizeof err), 0, "%s", err);
}
