/* A CTranslate2 Transformer in tessera's terms (core/model/ctranslate2/spec.h).
 * The semantics are CTranslate2's, as its layers read the spec's variables
 * (src/layers/transformer.cc, common.cc, attention.cc): attributes missing
 * from a file take the defaults CTranslate2 gives them there, so a file
 * means here what it means to CTranslate2. */
#include "core/model/ctranslate2/spec.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/json_kind.h"
#include "base/memory.h"
#include "base/quote.h"
#include "core/model/config.h"
#include "core/model/ctranslate2/attributes.h"
#include "core/model/ctranslate2/settings.h"
#include "core/model/ctranslate2/vocabulary.h"
#include "text/vocabulary.h"

/* The computed positions cover this many tokens (CTranslate2 grows its
 * table without a bound; tessera's is made at load). */
#define SINUSOID_POSITIONS 1024

/* Spec revisions the reader knows (CTranslate2 4.x's current ones). */
#define TRANSFORMER_REVISION_MAX 7
#define ENCODER_REVISION_MAX 1

int tsr_ct2_is_model_dir(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (access(path, F_OK) == 0)
        return 0;
    snprintf(path, sizeof path, "%s/model.bin", dir);
    return access(path, F_OK) == 0;
}

/* ---- What tessera does not run ---- */

/* A variable whose name holds one of these path parts belongs to a feature
 * tessera does not run. */
static const struct {
    const char *part, *feature;
} unsupported[] = {
    {"/relative_position_keys", "relative positions (Shaw et al.)"},
    {"/relative_asymmetric_position_keys", "asymmetric relative positions"},
    {"/relative_attention_bias", "a relative attention bias (T5)"},
    {"/rotary_dim", "rotary positions"},
    {"/linear_0_noact/", "a gated FFN (GLU: linear_0_noact)"},
    {"/num_heads_kv", "multi-query or grouped-query attention"},
    {"/q_norm/", "query and key norms"},
    {"/k_norm/", "query and key norms"},
    {"/v_norm/", "value norms"},
    {"/input_layer_norm/", "a layer with norms before and after each part"},
    {"/post_attention_layer_norm/", "a layer with norms before and after each part"},
    {"/pre_feedforward_layer_norm/", "a layer with norms before and after each part"},
    {"/post_feedforward_layer_norm/", "a layer with norms before and after each part"},
    {"/shared_layer_norm/", "a parallel residual"},
    {"/external_pre_encoder_attention_layer_norm/", "extra cross-attention norms"},
    {"/external_post_encoder_attention_layer_norm/", "extra cross-attention norms"},
    {"/project_in/", "projections around the embeddings"},
    {"/project_out/", "projections around the embeddings"},
    {"/final_logit_softcapping", "logit soft-capping"},
    {"/layer_scalar", "layer scalars"},
    {"/sliding_window", "sliding-window attention"},
    {"/weight_zero", "AWQ quantization (zero points)"},
    {"encoder/embeddings_1/", "several source features"},
};

static int refuse_unsupported(const tsr_ct2_model *m, char *err, size_t err_len)
{
    for (size_t i = 0; i < m->file.n_vars; i++) {
        char name[520];
        snprintf(name, sizeof name, "/%s", m->file.vars[i].name);
        for (size_t u = 0; u < sizeof unsupported / sizeof *unsupported; u++)
            if (strstr(name, unsupported[u].part))
                return tsr_fail(err, err_len, "variable '%s': %s, which tessera does not run",
                                m->file.vars[i].name, unsupported[u].feature);
        size_t len = strlen(name);
        if (len > 6 && strcmp(name + len - 6, "/gamma") == 0) {
            char beta[520];
            snprintf(beta, sizeof beta, "%.*sbeta", (int)(len - 1 - 6 + 1), name + 1);
            if (!tsr_ct2_find(&m->file, beta))
                return tsr_fail(err, err_len,
                                "variable '%s' has no beta: an RMSNorm, which tessera does not run",
                                m->file.vars[i].name);
        }
    }
    return 0;
}

/* ---- The architecture ---- */

static const tsr_ct2_variable *matrix(const tsr_ct2_model *m, const char *name, char *err,
                                      size_t err_len)
{
    const tsr_ct2_variable *v = tsr_ct2_find(&m->file, name);
    if (!v)
        tsr_fail(err, err_len, "variable '%s': missing", name);
    else if (v->rank != 2 || v->shape[0] == 0 || v->shape[1] == 0)
        tsr_fail(err, err_len, "variable '%s': expected a matrix, got rank %zu", name, v->rank);
    else
        return v;
    return NULL;
}

/* The factor a side's token embeddings are multiplied by (CTranslate2's
 * build_embeddings_scale): "SCOPE/scale_embeddings" (older files:
 * "SCOPE/embeddings/multiply_by_sqrt_depth"), an int8 flag (true, or absent:
 * sqrt(d_model)) or the factor itself. */
static int embedding_scale(tsr_ct2_model *m, const char *scope, const char *embeddings, int d,
                           double *factor, char *err, size_t err_len)
{
    char name[320];
    snprintf(name, sizeof name, "%s/scale_embeddings", scope);
    const tsr_ct2_variable *v = tsr_ct2_find(&m->file, name);
    if (!v) {
        snprintf(name, sizeof name, "%s/multiply_by_sqrt_depth", embeddings);
        v = tsr_ct2_find(&m->file, name);
    }
    *factor = sqrt((double)d);
    if (!v)
        return 0;
    double value;
    TSR_TRY(tsr_ct2_scalar(&m->file, name, &value, err, err_len));
    if (v->dtype == TSR_CT2_I8)
        *factor = value != 0 ? sqrt((double)d) : 1;
    else
        *factor = value;
    return 0;
}

static const char *activation_name(int code)
{
    /* CTranslate2's ActivationType: ReLU, GELUTanh, Swish, GELU, GELUSigmoid,
     * Tanh, Sigmoid. */
    static const char *const names[] = {"relu", "gelu_tanh", "silu", "gelu", "gelu_sigmoid"};
    return code >= 0 && code < 5 ? names[code] : NULL;
}

/* One attribute of both sides, which tessera holds once: they must agree. */
static int both_sides(tsr_ct2_model *m, int decoder, const char *name, double fallback,
                      double *v, char *err, size_t err_len)
{
    TSR_TRY(tsr_ct2_attribute(&m->file, "encoder", name, fallback, v, err, err_len));
    if (!decoder)
        return 0;
    double dv;
    TSR_TRY(tsr_ct2_attribute(&m->file, "decoder", name, fallback, &dv, err, err_len));
    if (dv != *v)
        return tsr_fail(err, err_len,
                        "variables 'encoder/%s' (%g) and 'decoder/%s' (%g) differ: tessera holds "
                        "one for both sides",
                        name, *v, name, dv);
    return 0;
}

/* Each attention's optional queries_scale must be CTranslate2's default,
 * 1/sqrt(d_head), which is what tessera applies. */
static int check_queries_scales(tsr_ct2_model *m, int d_head, char *err, size_t err_len)
{
    for (size_t i = 0; i < m->file.n_vars; i++) {
        const char *name = m->file.vars[i].name;
        size_t len = strlen(name);
        if (len < 14 || strcmp(name + len - 14, "/queries_scale") != 0)
            continue;
        double v;
        TSR_TRY(tsr_ct2_scalar(&m->file, name, &v, err, err_len));
        if (fabs(v * sqrt((double)d_head) - 1) > 1e-6)
            return tsr_fail(err, err_len,
                            "variable '%s': %g, not 1/sqrt(%d): another attention scale, which "
                            "tessera does not run",
                            name, v, d_head);
    }
    return 0;
}

static int vocab_id(const tessera_vocabulary *v, const char *token, const char *side,
                    const char *what, int *id, char *err, size_t err_len)
{
    *id = tsr_vocabulary_find(v, token, strlen(token));
    char quoted[TSR_QUOTE_LEN];
    if (*id < 0)
        return tsr_fail(err, err_len, "the %s token '%s' is not in the %s vocabulary", what,
                        tsr_quote(quoted, sizeof quoted, token, '\''), side);
    return 0;
}

/* The vocabularies: shared_vocabulary, or source_vocabulary +
 * target_vocabulary (an encoder alone: vocabulary). */
static int load_vocabularies(const char *dir, tsr_ct2_model *m, int decoder, const char *unk,
                             char *err, size_t err_len)
{
    char file[2][64];
    tessera_vocabulary *shared;
    TSR_TRY(tsr_ct2_vocabulary_load(dir, decoder ? "shared_vocabulary" : "vocabulary", unk,
                                    &shared, file[0], sizeof file[0], err, err_len));
    if (shared) {
        m->vocab[0] = m->vocab[1] = shared;
        return 0;
    }
    if (!decoder)
        return tsr_fail(err, err_len, "vocabulary.json or vocabulary.txt: missing");
    TSR_TRY(tsr_ct2_vocabulary_load(dir, "source_vocabulary", unk, &m->vocab[0], file[0],
                                    sizeof file[0], err, err_len));
    TSR_TRY(tsr_ct2_vocabulary_load(dir, "target_vocabulary", unk, &m->vocab[1], file[1],
                                    sizeof file[1], err, err_len));
    if (!m->vocab[1])
        return tsr_fail(err, err_len,
                        "no vocabulary: expected shared_vocabulary or target_vocabulary (.json "
                        "or .txt)");
    if (!m->vocab[0]) {
        char probe[4200];
        snprintf(probe, sizeof probe, "%s/source_1_vocabulary.txt", dir);
        int features = access(probe, F_OK) == 0;
        snprintf(probe, sizeof probe, "%s/source_1_vocabulary.json", dir);
        features |= access(probe, F_OK) == 0;
        return tsr_fail(err, err_len, "%s",
                        features ? "source_1_vocabulary: several source features, which tessera "
                                   "does not run"
                                 : "no source vocabulary: expected source_vocabulary (.json or "
                                   ".txt)");
    }
    return 0;
}

/* The vocabulary must match its embedding table's rows. */
static int check_vocab_size(const tsr_ct2_model *m, int side, const tsr_ct2_variable *emb,
                            char *err, size_t err_len)
{
    size_t n = tessera_vocabulary_size(m->vocab[side]);
    if (n != emb->shape[0])
        return tsr_fail(err, err_len,
                        "the %s vocabulary has %zu tokens (the unknown token included), but "
                        "variable '%s' has %zu rows",
                        side ? "target" : "source", n, emb->name, emb->shape[0]);
    return 0;
}

/* Positions: both sides' tables, or neither (CTranslate2's sinusoid, sin |
 * cos halves at 10000^(-i/(d/2-1)), its first position 1). */
static int positions(tsr_ct2_model *m, int decoder, int d, json_t *cfg, char *err,
                     size_t err_len)
{
    const tsr_ct2_variable *t[2] = {tsr_ct2_find(&m->file, "encoder/position_encodings/encodings"),
                                    decoder ? tsr_ct2_find(&m->file,
                                                           "decoder/position_encodings/encodings")
                                            : NULL};
    if (!t[0] && !t[1]) {
        json_object_set_new(cfg, "position_encoding", json_string("sinusoid_halves_t2t"));
        json_object_set_new(cfg, "position_offset", json_integer(1));
        json_object_set_new(cfg, "max_positions", json_integer(SINUSOID_POSITIONS));
        return 0;
    }
    if (!t[0] || (decoder && !t[1]))
        return tsr_fail(err, err_len,
                        "variable '%s/position_encodings/encodings' without the %s's: one side "
                        "learned, the other computed, which tessera does not run",
                        t[0] ? "encoder" : "decoder", t[0] ? "decoder" : "encoder");
    size_t rows = t[0]->shape[0];
    for (int s = 0; s <= decoder; s++) {
        if (t[s]->rank != 2 || t[s]->shape[1] != (size_t)d || t[s]->shape[0] < 2)
            return tsr_fail(err, err_len, "variable '%s': expected [positions, %d]", t[s]->name,
                            d);
        if (t[s]->shape[0] < rows)
            rows = t[s]->shape[0];
    }
    if (rows > TESSERA_MAX_POSITIONS_MAX)
        rows = TESSERA_MAX_POSITIONS_MAX;
    json_object_set_new(cfg, "max_positions", json_integer((json_int_t)rows));
    return 0;
}

static int spec_kind(const tsr_ct2_file *f, int *decoder, int *heads, char *err, size_t err_len)
{
    static const struct {
        const char *name;
        int heads, decoder, revision_max;
    } known[] = {{"", 8, 1, TRANSFORMER_REVISION_MAX},
                 {"TransformerBase", 8, 1, TRANSFORMER_REVISION_MAX},
                 {"TransformerBig", 16, 1, TRANSFORMER_REVISION_MAX},
                 {"TransformerSpec", 8, 1, TRANSFORMER_REVISION_MAX},
                 {"TransformerEncoderSpec", 8, 0, ENCODER_REVISION_MAX}};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        if (strcmp(f->spec, known[i].name) != 0)
            continue;
        if (f->revision > (uint32_t)known[i].revision_max)
            return tsr_fail(err, err_len,
                            "spec %s revision %u: tessera reads revisions up to %d (a newer "
                            "CTranslate2 wrote it)",
                            f->spec, f->revision, known[i].revision_max);
        *decoder = known[i].decoder;
        *heads = known[i].heads;
        return 0;
    }
    return tsr_fail(err, err_len,
                    "spec '%s': %s, which tessera does not run (it runs TransformerSpec, "
                    "TransformerBase, TransformerBig and TransformerEncoderSpec)",
                    f->spec,
                    strstr(f->spec, "Whisper") || strstr(f->spec, "Wav2Vec2") ? "a speech model"
                    : strstr(f->spec, "Decoder")                               ? "a decoder-only model"
                                                                               : "another model");
}

/* Everything but the tokens and positions, into cfg (tessera's keys). */
static int architecture(tsr_ct2_model *m, int decoder, int spec_heads, json_t *cfg, int *d_out,
                        char *err, size_t err_len)
{
    char name[320];
    snprintf(m->encoder_embeddings, sizeof m->encoder_embeddings, "encoder/embeddings%s",
             tsr_ct2_find(&m->file, "encoder/embeddings/weight") ? "" : "_0");
    snprintf(name, sizeof name, "%s/weight", m->encoder_embeddings);
    const tsr_ct2_variable *src = matrix(m, name, err, err_len), *tgt = NULL;
    if (!src)
        return TESSERA_ERR_INPUT;
    if (decoder && !(tgt = matrix(m, "decoder/embeddings/weight", err, err_len)))
        return TESSERA_ERR_INPUT;
    int d = (int)src->shape[1];
    *d_out = d;
    TSR_TRY(check_vocab_size(m, 0, src, err, err_len));
    if (decoder)
        TSR_TRY(check_vocab_size(m, 1, tgt, err, err_len));
    size_t layers[2] = {tsr_ct2_count_layers(&m->file, "encoder"),
                        decoder ? tsr_ct2_count_layers(&m->file, "decoder") : 0};
    if (layers[0] == 0 || (decoder && layers[1] == 0))
        return tsr_fail(err, err_len, "variable '%s/layer_0/self_attention/linear_0/weight': "
                                      "missing (no layers)",
                        layers[0] == 0 ? "encoder" : "decoder");
    const tsr_ct2_variable *ff = matrix(m, "encoder/layer_0/ffn/linear_0/weight", err, err_len);
    if (!ff)
        return TESSERA_ERR_INPUT;

    double heads, pre_norm, act, merge, mqa;
    TSR_TRY(both_sides(m, decoder, "num_heads", spec_heads, &heads, err, err_len));
    TSR_TRY(both_sides(m, decoder, "pre_norm", 1, &pre_norm, err, err_len));
    TSR_TRY(both_sides(m, decoder, "activation", 0, &act, err, err_len));
    TSR_TRY(both_sides(m, decoder, "multi_query_attention", 0, &mqa, err, err_len));
    TSR_TRY(tsr_ct2_attribute(&m->file, "encoder", "embeddings_merge", 0, &merge, err, err_len));
    if (mqa != 0)
        return tsr_fail(err, err_len, "variable 'multi_query_attention': true, which tessera "
                                      "does not run");
    if (!activation_name((int)act))
        return tsr_fail(err, err_len,
                        "variable 'encoder/activation': %g (%s), which tessera does not run in "
                        "an FFN",
                        act, act == 5 ? "tanh" : act == 6 ? "sigmoid" : "unknown");
    if (!(heads >= 1) || d % (int)heads != 0)
        return tsr_fail(err, err_len, "variable 'encoder/num_heads': %g does not divide %d",
                        heads, d);
    TSR_TRY(check_queries_scales(m, d / (int)heads, err, err_len));

    double scale[2] = {0, 0};
    TSR_TRY(embedding_scale(m, "encoder", m->encoder_embeddings, d, &scale[0], err, err_len));
    if (decoder)
        TSR_TRY(embedding_scale(m, "decoder", "decoder/embeddings", d, &scale[1], err, err_len));
    else
        scale[1] = scale[0];
    for (int s = 0; s < 2; s++)
        if (fabs(scale[s] - scale[0]) > 1e-6 * scale[0] ||
            (fabs(scale[s] - 1) > 1e-6 && fabs(scale[s] - sqrt((double)d)) > 1e-6 * sqrt(d)))
            return tsr_fail(err, err_len,
                            "variable '%s/scale_embeddings': embeddings scaled by %g and %g; "
                            "tessera scales both sides by sqrt(d_model) or neither",
                            s ? "decoder" : "encoder", scale[0], scale[s]);

    json_object_set_new(cfg, "d_model", json_integer(d));
    json_object_set_new(cfg, "n_heads", json_integer((json_int_t)heads));
    json_object_set_new(cfg, "d_ff", json_integer((json_int_t)ff->shape[0]));
    json_object_set_new(cfg, "n_encoder_layers", json_integer((json_int_t)layers[0]));
    json_object_set_new(cfg, "n_decoder_layers", json_integer((json_int_t)layers[1]));
    json_object_set_new(cfg, "src_vocab_size", json_integer((json_int_t)src->shape[0]));
    json_object_set_new(cfg, "tgt_vocab_size", json_integer(tgt ? (json_int_t)tgt->shape[0] : 0));
    json_object_set_new(cfg, "activation", json_string(activation_name((int)act)));
    json_object_set_new(cfg, "norm_first", json_boolean(pre_norm != 0));
    json_object_set_new(cfg, "scale_embedding", json_boolean(fabs(scale[0] - 1) > 1e-6));
    json_object_set_new(cfg, "family", json_string("ctranslate2"));
    if (!decoder)
        return 0;

    /* Tables a CTranslate2 writer stored once and aliased. */
    const tsr_ct2_variable *proj = tsr_ct2_find(&m->file, "decoder/projection/weight");
    json_object_set_new(cfg, "share_embeddings", json_boolean(src->offset == tgt->offset));
    json_object_set_new(cfg, "tie_output_projection",
                        json_boolean(proj && proj->offset == tgt->offset));

    double zero_start, outputs = 1, alibi, layer, heads_avg;
    TSR_TRY(tsr_ct2_attribute(&m->file, "decoder", "start_from_zero_embedding", 0, &zero_start, err,
                              err_len));
    json_object_set_new(cfg, "decoder_start", json_string(zero_start != 0 ? "zeros" : "bos"));
    if (tsr_ct2_scalar(&m->file, "decoder/scale_outputs", &outputs, err, err_len) < 0)
        return TESSERA_ERR_INPUT;
    if (fabs(outputs - 1) > 1e-6)
        return tsr_fail(err, err_len,
                        "variable 'decoder/scale_outputs': %g: a scaled decoder output, which "
                        "tessera does not run",
                        outputs);
    TSR_TRY(tsr_ct2_attribute(&m->file, "decoder", "alibi", 0, &alibi, err, err_len));
    if (alibi != 0)
        return tsr_fail(err, err_len, "variable 'decoder/alibi': ALiBi, which tessera does not run");
    double unused;
    TSR_TRY(tsr_ct2_attribute(&m->file, "decoder", "alibi_use_positive_positions", 0, &unused, err,
                              err_len));
    TSR_TRY(tsr_ct2_attribute(&m->file, "decoder", "scale_alibi", 0, &unused, err, err_len));
    TSR_TRY(tsr_ct2_attribute(&m->file, "decoder", "alignment_layer", -1, &layer, err, err_len));
    TSR_TRY(tsr_ct2_attribute(&m->file, "decoder", "alignment_heads", 1, &heads_avg, err, err_len));
    if (layer < 0)
        layer += (double)layers[1];
    json_object_set_new(cfg, "alignment_layer", json_integer((json_int_t)layer));
    json_object_set_new(cfg, "alignment_heads", json_integer((json_int_t)heads_avg));
    return 0;
}

/* The special tokens' ids, each in the vocabulary that holds it. */
static int tokens(const tsr_ct2_model *m, int decoder, const tsr_ct2_settings *c, json_t *cfg,
                  char *err, size_t err_len)
{
    int unk_src, unk_tgt = 0, bos = 0, eos = 0, pad = 0, eos_src;
    TSR_TRY(vocab_id(m->vocab[0], c->unk, "source", "unknown", &unk_src, err, err_len));
    if (decoder) {
        TSR_TRY(vocab_id(m->vocab[1], c->unk, "target", "unknown", &unk_tgt, err, err_len));
        TSR_TRY(vocab_id(m->vocab[1], c->start, "target", "decoder start", &bos, err, err_len));
        TSR_TRY(vocab_id(m->vocab[1], c->eos, "target", "end", &eos, err, err_len));
        /* CTranslate2 has no padding token of its own: its converters' <blank>
         * (OpenNMT) or <pad> when both vocabularies hold it, else eos. */
        pad = eos;
        static const char *const pads[] = {"<blank>", "<pad>"};
        for (int i = 0; i < 2 && pad == eos; i++) {
            int s = tsr_vocabulary_find(m->vocab[0], pads[i], strlen(pads[i]));
            int t = tsr_vocabulary_find(m->vocab[1], pads[i], strlen(pads[i]));
            if (s >= 0 && s == t)
                pad = t;
        }
    }
    if (c->add_source_bos)
        return tsr_fail(err, err_len,
                        "config.json: add_source_bos true (a token before every source), which "
                        "tessera does not run yet");
    json_object_set_new(cfg, "unk_id", json_integer(decoder ? unk_tgt : unk_src));
    json_object_set_new(cfg, "source_unk_id", json_integer(unk_src));
    json_object_set_new(cfg, "bos_id", json_integer(bos));
    json_object_set_new(cfg, "eos_id", json_integer(eos));
    json_object_set_new(cfg, "pad_id", json_integer(decoder ? pad : unk_src));
    if (c->add_source_eos) {
        TSR_TRY(vocab_id(m->vocab[0], c->eos, "source", "end", &eos_src, err, err_len));
        json_t *suffix = json_array();
        json_array_append_new(suffix, json_integer(eos_src));
        json_object_set_new(cfg, "source_suffix", suffix);
    }
    json_object_set_new(cfg, "layer_norm_eps",
                        json_real(c->layer_norm_epsilon > 0 ? c->layer_norm_epsilon : 1e-5));
    return 0;
}

/* The config tessera's own reader makes of the keys gathered in cfg. */
static int to_tessera_config(json_t *cfg, tessera_config *out, char *err, size_t err_len)
{
    char *text = json_dumps(cfg, JSON_COMPACT);
    if (!text)
        return tsr_fail_oom(err, err_len, "out of memory describing the model");
    int rc = tsr_config_parse(text, strlen(text), out, err, err_len);
    free(text);
    return rc != 0 ? tsr_fail_prefix(rc, err, err_len, "the model's configuration") : 0;
}

static int open_model(const char *dir, tsr_ct2_model *m, char *err, size_t err_len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/model.bin", dir);
    int rc = tsr_ct2_open(path, &m->file, err, err_len);
    if (rc != 0)
        return tsr_fail_prefix(rc, err, err_len, "model.bin");
    int decoder = 0, spec_heads = 0, d = 0;
    tsr_ct2_settings c;
    TSR_TRY(spec_kind(&m->file, &decoder, &spec_heads, err, err_len));
    TSR_TRY(refuse_unsupported(m, err, err_len));
    TSR_TRY(tsr_ct2_settings_read(dir, &m->file, &c, err, err_len));
    TSR_TRY(load_vocabularies(dir, m, decoder, c.unk, err, err_len));
    json_t *cfg = json_object();
    if (!cfg)
        return tsr_fail_oom(err, err_len, "out of memory describing the model");
    rc = architecture(m, decoder, spec_heads, cfg, &d, err, err_len);
    if (rc == 0)
        rc = positions(m, decoder, d, cfg, err, err_len);
    if (rc == 0)
        rc = tokens(m, decoder, &c, cfg, err, err_len);
    if (rc == 0)
        rc = to_tessera_config(cfg, &m->cfg, err, err_len);
    json_decref(cfg);
    if (rc == 0 && !decoder) {
        /* A BERT-style pooling head: tessera encode gives the encoder's
         * vectors (its own --pool), never this layer's. */
        for (size_t i = 0; i < m->file.n_vars; i++)
            if (strncmp(m->file.vars[i].name, "pooler_", 7) == 0)
                m->file.vars[i].used = 1;
    }
    return rc;
}

static tessera_compute_type stored_type(const tsr_ct2_model *m)
{
    const tsr_ct2_variable *w = tsr_ct2_find(&m->file, "encoder/layer_0/ffn/linear_0/weight");
    return w->dtype == TSR_CT2_I8     ? TESSERA_COMPUTE_INT8
           : w->dtype == TSR_CT2_BF16 ? TESSERA_COMPUTE_BF16
                                      : TESSERA_COMPUTE_F32;
}

int tsr_ct2_model_open(const char *dir, tsr_ct2_model *m, char *err, size_t err_len)
{
    memset(m, 0, sizeof *m);
    int rc = open_model(dir, m, err, err_len);
    if (rc != 0) {
        tsr_ct2_model_close(m);
        return rc;
    }
    m->stored_type = stored_type(m);
    return 0;
}

int tsr_ct2_check_all_used(const tsr_ct2_model *m, char *err, size_t err_len)
{
    for (size_t i = 0; i < m->file.n_vars; i++) {
        const tsr_ct2_variable *v = &m->file.vars[i];
        /* A variable is used when it or an alias of it is (a tied table is
         * read once, under one of its names). */
        int used = v->used;
        for (size_t j = 0; !used && j < m->file.n_vars; j++)
            used = m->file.vars[j].used && m->file.vars[j].offset == v->offset;
        if (!used)
            return tsr_fail(err, err_len,
                            "model.bin: variable '%s' is read by no part of the model tessera "
                            "runs (a feature it does not know)",
                            v->name);
    }
    return 0;
}

void tsr_ct2_model_close(tsr_ct2_model *m)
{
    if (m->vocab[1] != m->vocab[0])
        tessera_vocabulary_free(m->vocab[1]);
    tessera_vocabulary_free(m->vocab[0]);
    tsr_ct2_close(&m->file);
    memset(m, 0, sizeof *m);
}
