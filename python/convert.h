/* Sentences from Python to tessera and results back. A batch is a list of
 * sentences in one form: token ids (lists of int), pieces (lists of str,
 * each a line of the side's vocabulary; an unknown one is unk_id), or text
 * (str, through the model's tokenizer). */
#ifndef TSR_PY_CONVERT_H
#define TSR_PY_CONVERT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "python/engine.h"

typedef enum tsr_py_form { TSR_PY_IDS, TSR_PY_PIECES, TSR_PY_TEXT } tsr_py_form;

typedef struct tsr_py_batch {
    size_t n;
    tsr_py_form form;
    tessera_tokens *seqs;  /* n sentences' ids (text: once tokenized) */
    int32_t **ids;         /* the ids seqs point to, owned */
    const char **texts;    /* text: n NUL-terminated UTF-8 strings in `keep`'s str */
    PyObject *keep;        /* a tuple of the sentences: they live as long as the batch */
} tsr_py_batch;

/* Reads a list of sentences of `side` (`what` names it in messages:
 * "source", "target", "target_prefix"). ids and pieces become ids at once;
 * text is kept as UTF-8 for the call, to tokenize without the GIL. 0, or -1
 * with TypeError (not a list of sentences) or ValueError (mixed forms, an id
 * beyond int32, pieces without a vocabulary, a NUL in text) set. */
int tsr_py_batch_read(const tsr_py_engine *e, tessera_side side, PyObject *list, const char *what,
                      tsr_py_batch *b);

/* Tokenizes a text batch into seqs (nothing to do for other forms); callable
 * without the GIL. 0, or a tessera_status with the message in err naming
 * the sentence. */
int tsr_py_batch_tokenize(const tsr_py_engine *e, tessera_side side, tsr_py_batch *b,
                          char *err, size_t err_len);

void tsr_py_batch_free(tsr_py_batch *b);

/* A target sentence as Python gives it back in `form`: a list of int, a
 * list of str (the target vocabulary's pieces), or str (detokenized). NULL
 * with an exception set on failure. */
PyObject *tsr_py_target(const tsr_py_engine *e, tsr_py_form form, const int32_t *ids, size_t len);

/* A list of n int32 as Python ints. */
PyObject *tsr_py_int_list(const int32_t *v, size_t n);

/* A list of n float32 as Python floats (exactly, widened to double). */
PyObject *tsr_py_float_list(const float *v, size_t n);

/* The batch options of every call: max_batch_size (0: the whole call) and
 * batch_type ("examples" or "tokens", as CTranslate2's) as tessera's batch
 * and batch_tokens for n sentences. 0, or -1 with ValueError set. */
int tsr_py_batching(int max_batch_size, const char *batch_type, size_t n, int *batch,
                    int *batch_tokens);

#endif
