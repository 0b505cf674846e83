/* A call's languages against its model (core/model/call_languages.h). */
#include "core/model/call_languages.h"

#include <string.h>

#include "base/errors.h"
#include "base/quote.h"
#include "core/model/languages.h"
#include "core/model/model.h"

/* Languages shown when a call names none. */
#define LANGUAGES_SHOWN 4

static int one_language(const tessera_model *m, const char *field, const char *side, int takes,
                        const char *name, int32_t *id, char *err, size_t err_len)
{
    char q[TSR_QUOTE_LEN];
    *id = -1;
    if (!takes && !name)
        return 0;
    if (!takes)
        return tsr_fail(err, err_len, "%s: the model takes no %s language (given '%s')", field,
                        side, tsr_quote(q, sizeof q, name, '\''));
    if (name)
        return tsr_languages_find(m->languages, field, name, id, err, err_len);
    const tsr_languages *l = m->languages;
    size_t n = l ? l->n : 0;
    char some[LANGUAGES_SHOWN * (TSR_LANGUAGE_NAME_MAX + 2) + 8] = "";
    for (size_t i = 0; i < n && i < LANGUAGES_SHOWN; i++) {
        strcat(some, i ? ", " : " (");
        strcat(some, l->names[i]);
    }
    if (n)
        strcat(some, n > LANGUAGES_SHOWN ? ", ...)" : ")");
    return tsr_fail(err, err_len, "%s: the model needs a %s language: one of its %zu%s", field,
                    side, n, some);
}

int tsr_languages_for_call(const tessera_model *m, const char *source, const char *target,
                           int with_target, int32_t *source_id, int32_t *target_id, char *err,
                           size_t err_len)
{
    const tessera_config *c = &m->cfg;
    TSR_TRY(one_language(m, "source_lang", "source",
                         c->source_language != TESSERA_SOURCE_LANGUAGE_NONE, source, source_id,
                         err, err_len));
    *target_id = -1;
    if (!with_target)
        return 0;
    return one_language(m, "target_lang", "target",
                        c->target_language != TESSERA_TARGET_LANGUAGE_NONE, target, target_id,
                        err, err_len);
}

size_t tessera_model_language_count(const tessera_model *m)
{
    return m && m->languages ? m->languages->n : 0;
}

const char *tessera_model_language(const tessera_model *m, size_t i, int32_t *id)
{
    if (i >= tessera_model_language_count(m))
        return NULL;
    if (id)
        *id = m->languages->ids[i];
    return m->languages->names[i];
}

int tessera_model_language_id(const tessera_model *m, const char *name, int32_t *id, char *err,
                              size_t err_len)
{
    if (!m || !name || !id)
        return tsr_fail(err, err_len, "language id: %s is NULL",
                        !m ? "the model" : !name ? "the name" : "the result pointer");
    return tsr_languages_find(m->languages, "language", name, id, err, err_len);
}

int tessera_model_check_languages(const tessera_model *m, const char *source_lang,
                                  const char *target_lang, int with_target, char *err,
                                  size_t err_len)
{
    if (!m)
        return tsr_fail(err, err_len, "check languages: the model is NULL");
    int32_t source, target;
    return tsr_languages_for_call(m, source_lang, target_lang, with_target, &source, &target, err,
                                  err_len);
}
