/* The public shortlist calls (core/tessera.h, "Vocabulary shortlists"): the
 * readers of core/shortlist/ over a model's vocabularies. */
#include "base/errors.h"
#include "core/model/model.h"
#include "core/shortlist/shortlist.h"

/* The model's two vocabularies, or a message saying why a shortlist cannot
 * be read for it. */
static int vocabularies(const tessera_model *m, const char *path, const char *call,
                        const tessera_vocabulary **src, const tessera_vocabulary **tgt,
                        tessera_shortlist **out, char *err, size_t err_len)
{
    if (!out)
        return tsr_fail(err, err_len, "%s: the result pointer is NULL", call);
    *out = NULL;
    if (!m || !path)
        return tsr_fail(err, err_len, "%s: the %s is NULL", call, m ? "path" : "model");
    if (m->cfg.n_decoder_layers == 0)
        return tsr_fail(err, err_len, "%s: %s: the model is an encoder alone; it chooses no "
                        "target ids", call, path);
    if (!*src)
        *src = tessera_model_vocabulary(m, TESSERA_SOURCE);
    if (!*tgt)
        *tgt = tessera_model_vocabulary(m, TESSERA_TARGET);
    if (!*src || !*tgt)
        return tsr_fail(err, err_len, "%s: %s: a shortlist names pieces, and the model has no "
                        "%s vocabulary (config.json key 'tokenizer', docs/model-format.md "
                        "section 3)", call, path, *src ? "target" : "source");
    size_t sizes[2] = {tessera_vocabulary_size(*src), tessera_vocabulary_size(*tgt)};
    int want[2] = {m->cfg.src_vocab_size, m->cfg.tgt_vocab_size};
    for (int s = 0; s < 2; s++)
        if (sizes[s] != (size_t)want[s])
            return tsr_fail(err, err_len, "%s: %s: the %s vocabulary given has %zu pieces; the "
                            "model's has %d", call, path, s ? "target" : "source", sizes[s],
                            want[s]);
    return 0;
}

int tessera_shortlist_load_vmap(const tessera_model *m, const tessera_vocabulary *src,
                                const tessera_vocabulary *tgt, const char *path,
                                tessera_shortlist **out, char *err, size_t err_len)
{
    TSR_TRY(vocabularies(m, path, "shortlist", &src, &tgt, out, err, err_len));
    return tsr_shortlist_load_vmap(path, src, tgt, out, err, err_len);
}

int tessera_shortlist_load_lexical(const tessera_model *m, const tessera_vocabulary *src,
                                   const tessera_vocabulary *tgt, const char *path, size_t first,
                                   size_t best, float threshold, tessera_shortlist **out,
                                   char *err, size_t err_len)
{
    TSR_TRY(vocabularies(m, path, "shortlist", &src, &tgt, out, err, err_len));
    if (!(threshold >= 0.0f && threshold <= 1.0f))
        return tsr_fail(err, err_len, "shortlist: %s: the threshold %g is no probability in "
                        "[0, 1]", path, (double)threshold);
    return tsr_shortlist_load_lexical(path, src, tgt, tessera_config_unk_id(&m->cfg,
                                                                            TESSERA_SOURCE),
                                      first, best, threshold, m->cfg.share_embeddings, out, err,
                                      err_len);
}

void tessera_shortlist_free(tessera_shortlist *s)
{
    tsr_shortlist_free(s);
}
