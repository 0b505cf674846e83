/* Fuzz target: the command's input lines. The input is cut into lines as
 * the command reads them (through its reader, cli/line_reader.c), and each line
 * is parsed every way the commands parse one: a sentence of ids (translate,
 * encode), of pieces through a vocabulary (--pieces), of text through a
 * model's SentencePiece tokenizer (TSR_FUZZ_TEXT_MODEL: NFKC, byte
 * fallback), whose ids are written back as text, and as SOURCE<TAB>TARGET
 * (score, translate --prefix), both halves every way. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/line_reader.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "lines";

#define VOCAB_SIZE 8

static const tessera_vocabulary *vocab(void)
{
    static tessera_vocabulary *v;
    if (!v) {
        static const char words[] = "<unk>\n<s>\n</s>\n<pad>\na\nb\nf\xc3\xbcnf\nab\n";
        char err[512];
        if (tessera_vocabulary_load(fuzz_write_file("vocab.txt", words, sizeof words - 1),
                                    VOCAB_SIZE, &v, err, sizeof err) != 0)
            abort();
    }
    return v;
}

/* The text model, in the command's text form (NULL in a build without
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

static void check_text(const cli_model *cm, tessera_side side, const char *text, size_t len,
                       cli_ids *ids)
{
    char err[512];
    int vocab = side == TESSERA_SOURCE ? cm->cfg->src_vocab_size : cm->cfg->tgt_vocab_size;
    if (cli_parse_side(cm, side, text, len, ids, err, sizeof err) != 0)
        return;
    for (size_t i = 0; i < ids->len; i++)
        if (ids->ids[i] < 0 || ids->ids[i] >= vocab)
            __builtin_trap(); /* an id out of the vocabulary */
    cli_line out = {0};
    if (cli_line_side(&out, cm, side, ids->ids, ids->len, err, sizeof err) != 0)
        __builtin_trap(); /* the model's own ids must make text */
    if (memchr(out.text ? out.text : "", '\n', out.len) || (out.text && strlen(out.text) != out.len))
        __builtin_trap(); /* the text must stay one line, a C string */
    cli_line_free(&out);
}

static void parse_every_way(const char *text, size_t len, cli_ids *ids)
{
    char err[512];
    for (int tokens = 0; tokens < 2; tokens++)
        if (cli_parse_sentence(text, len, tokens ? vocab() : NULL, VOCAB_SIZE, 0, "source", ids, err,
                               sizeof err) == 0 &&
            ids->len > 0 && (ids->ids[0] < 0 || ids->ids[ids->len - 1] >= VOCAB_SIZE))
            __builtin_trap(); /* an id out of range got through */
    const cli_model *cm = text_model();
    if (cm) {
        check_text(cm, TESSERA_SOURCE, text, len, ids);
        check_text(cm, TESSERA_TARGET, text, len, ids);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    /* The lines come through the command's own reader, from a stream over
     * the input, as translate, score and encode read standard input. */
    FILE *in = fmemopen((void *)data, size, "r");
    if (!in)
        abort();
    cli_line_reader r = {.in = in};
    cli_ids ids = {0};
    char *line;
    size_t len;
    int rc;
    while ((rc = cli_read_line(&r, &line, &len)) == 1) {
        parse_every_way(line, len, &ids);
        const char *second;
        size_t first_len, second_len;
        char err[512];
        if (cli_split_at_tab(line, len, "SOURCE<TAB>TARGET", &first_len, &second, &second_len, err,
                             sizeof err) == 0) {
            if (first_len > len || second < line || second + second_len > line + len)
                __builtin_trap(); /* the halves must lie inside the line */
            parse_every_way(line, first_len, &ids);
            parse_every_way(second, second_len, &ids);
        }
    }
    if (rc < 0)
        __builtin_trap(); /* a stream over memory cannot fail to read */
    cli_line_reader_free(&r);
    fclose(in);
    free(ids.ids);
    return 0;
}
