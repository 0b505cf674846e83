/* tessera's failures as Python exceptions (python/errors.h). */
#include "python/errors.h"

#include <ctype.h>
#include <string.h>
#include <sys/stat.h>

#include "core/tessera.h"

PyObject *tsr_py_raise(int status, const char *message)
{
    PyObject *type = status == TESSERA_ERR_INPUT   ? PyExc_ValueError
                     : status == TESSERA_ERR_NOMEM ? PyExc_MemoryError
                                                   : PyExc_RuntimeError;
    PyErr_SetString(type, message);
    return NULL;
}

PyObject *tsr_py_raise_load(int status, const char *message, const char *dir)
{
    if (status == TESSERA_ERR_NOMEM)
        return tsr_py_raise(status, message);
    /* The message alone, so that str(exception) is tessera's line. */
    char config[4096];
    struct stat st;
    snprintf(config, sizeof config, "%s/config.json", dir);
    int missing = stat(dir, &st) != 0 || stat(config, &st) != 0;
    PyErr_SetString(missing ? PyExc_FileNotFoundError : PyExc_OSError, message);
    return NULL;
}

/* The library names decoding options by their tessera_translate_options
 * fields, as whole words (tessera_translate_options_check); translate_batch
 * takes CTranslate2's keywords where they differ. */
static const char *const option_keywords[][2] = {
    {"beam", "beam_size"},
    {"max_len", "max_decoding_length"},
    {"n_best", "num_hypotheses"},
    {"min_len", "min_decoding_length"},
    {"no_repeat_ngram", "no_repeat_ngram_size"},
    {"on_token", "callback"},
};

PyObject *tsr_py_raise_options(int status, const char *message)
{
    char out[2 * TSR_PY_ERR_LEN];
    size_t at = 0;
    for (const char *p = message; *p && at + 1 < sizeof out;) {
        size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
        const char *keyword = NULL;
        if (len > 0 && (p == message || !isalnum((unsigned char)p[-1])) &&
            !isalnum((unsigned char)p[len]))
            for (size_t i = 0; i < sizeof option_keywords / sizeof option_keywords[0]; i++)
                if (strlen(option_keywords[i][0]) == len && strncmp(p, option_keywords[i][0], len) == 0)
                    keyword = option_keywords[i][1];
        const char *from = keyword ? keyword : p;
        size_t n = keyword ? strlen(keyword) : len ? len : 1;
        for (size_t i = 0; i < n && at + 1 < sizeof out; i++)
            out[at++] = from[i];
        p += len ? len : 1;
    }
    out[at] = '\0';
    return tsr_py_raise(status, out);
}
