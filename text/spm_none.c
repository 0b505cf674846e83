/* text/spm.h in a build without SentencePiece (configure
 * --without-sentencepiece, or libsentencepiece-dev absent): every model file
 * is refused with a message that says why. */
#include "text/spm.h"

#include "base/errors.h"

int tsr_spm_available(void) { return 0; }

int tsr_spm_load(const char *name, const void *bytes, size_t len, tsr_spm **spm, char *err,
                 size_t err_len)
{
    (void)bytes;
    (void)len;
    *spm = NULL;
    return tsr_fail(err, err_len,
                    "%s: this tessera was built without SentencePiece (configure found no "
                    "libsentencepiece-dev): give ids or pieces instead of text",
                    name);
}

void tsr_spm_free(tsr_spm *spm) { (void)spm; }

int tsr_spm_encode(const tsr_spm *spm, const char *text, size_t len, tsr_spm_piece_fn piece,
                   void *arg, char *err, size_t err_len)
{
    (void)spm, (void)text, (void)len, (void)piece, (void)arg;
    return tsr_fail_internal(err, err_len, "SentencePiece is not built in");
}

int tsr_spm_decode(const tsr_spm *spm, const char *const *pieces, size_t n, char **text,
                   size_t *len, char *err, size_t err_len)
{
    (void)spm, (void)pieces, (void)n, (void)len;
    *text = NULL;
    return tsr_fail_internal(err, err_len, "SentencePiece is not built in");
}
