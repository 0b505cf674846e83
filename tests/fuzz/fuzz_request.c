/* Fuzz target: the bodies `tessera serve` takes from the network. The input
 * is parsed as a /translate and as a /score request (cli/serve/request.c)
 * against a small model's configuration and vocabularies (text as pieces),
 * and against a model with a SentencePiece tokenizer (TSR_FUZZ_TEXT_MODEL:
 * text as text), so that ids, pieces and text all reach the sentence
 * readers. A body that is refused must come
 * with an HTTP status of 400, 413 or 500 and a message that srv_error_json
 * can carry (valid UTF-8: it is quoted into the JSON answer); a body that
 * is taken becomes a job whose every source, target and target prefix lies
 * within the model's limits, and whose answer (with empty hypotheses and zero scores,
 * as no model runs here) is valid JSON. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/serve/server.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "request";

#define VOCAB_SIZE 8
#define MAX_POSITIONS 16

static const cli_model *model(void)
{
    static tessera_config cfg = {
        .d_model = 8, .n_heads = 2, .d_ff = 12, .n_encoder_layers = 1, .n_decoder_layers = 1,
        .src_vocab_size = VOCAB_SIZE, .tgt_vocab_size = VOCAB_SIZE,
        .max_positions = MAX_POSITIONS, .bos_id = 1, .eos_id = 2, .pad_id = 3, .unk_id = 0,
    };
    static cli_model cm;
    if (!cm.cfg) {
        static const char words[] = "<unk>\n<s>\n</s>\n<pad>\na\nb\nf\xc3\xbcnf\nab\n";
        const char *path = fuzz_write_file("vocab.txt", words, sizeof words - 1);
        char err[512];
        cm.cfg = &cfg;
        static tessera_vocabulary *vocab;
        if (tessera_vocabulary_load(path, VOCAB_SIZE, &vocab, err, sizeof err) != 0)
            abort();
        cm.src_vocab = cm.tgt_vocab = vocab;
        cm.form = CLI_PIECES;
    }
    return &cm;
}

/* The text model, in the server's text form (NULL in a build without
 * SentencePiece). */
static const cli_model *text_model(void)
{
    static cli_model cm;
    if (!cm.model && (cm.model = (tessera_model *)fuzz_text_model(TSR_FUZZ_TEXT_MODEL))) {
        cm.cfg = tessera_model_config(cm.model);
        cm.form = CLI_TEXT;
    }
    return cm.model ? &cm : NULL;
}

static void check_tokens(const tessera_tokens *t, size_t max_len, int vocab)
{
    if (t->len > max_len)
        __builtin_trap(); /* longer than the model takes */
    for (size_t k = 0; k < t->len; k++)
        if (t->ids[k] < 0 || t->ids[k] >= vocab)
            __builtin_trap(); /* an id out of range got through */
}

static void parse_as(srv_kind kind, const char *body, size_t len, const cli_model *cm)
{
    const srv_settings settings = {.max_sentences = 32, .max_body = 1 << 20};
    const size_t max_positions = (size_t)cm->cfg->max_positions;
    int http_status = 0;
    char err[512] = "";
    srv_job *job = srv_job_parse(kind, body, len, cm, &settings, &http_status, err, sizeof err);
    if (!job) {
        if (http_status != 400 && http_status != 413 && http_status != 500)
            __builtin_trap(); /* a refusal without a client or server error status */
        char *answer = srv_error_json("bad_request", err);
        if (!answer)
            __builtin_trap(); /* the message cannot be sent as JSON (invalid UTF-8?) */
        free(answer);
        return;
    }
    if (job->n == 0 || job->n > (size_t)settings.max_sentences)
        __builtin_trap();
    for (size_t i = 0; i < job->n; i++) {
        check_tokens(&job->src[i], max_positions, cm->cfg->src_vocab_size);
        if (job->prefix) {
            check_tokens(&job->prefix[i], max_positions - 1, cm->cfg->tgt_vocab_size);
            for (size_t k = 0; k < job->prefix[i].len; k++)
                if (job->prefix[i].ids[k] == cm->cfg->eos_id)
                    __builtin_trap(); /* a prefix that ends before it starts */
        }
        if (kind == SRV_SCORE) {
            check_tokens(&job->tgt[i], max_positions - 1, cm->cfg->tgt_vocab_size);
            job->logprobs[i] = calloc(job->tgt[i].len + 1, sizeof **job->logprobs);
            if (!job->logprobs[i])
                abort();
        }
    }
    char *answer = srv_job_answer(job, cm);
    json_error_t jerr;
    json_t *parsed = answer ? json_loads(answer, 0, &jerr) : NULL;
    if (!parsed)
        __builtin_trap(); /* the answer is not JSON */
    json_decref(parsed);
    free(answer);
    srv_job_free(job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const cli_model *models[2] = {model(), text_model()};
    for (int m = 0; m < 2 && models[m]; m++) {
        parse_as(SRV_TRANSLATE, (const char *)data, size, models[m]);
        parse_as(SRV_SCORE, (const char *)data, size, models[m]);
    }
    return 0;
}
