/* Sentences from Python to tessera and results back (python/convert.h). */
#include "python/convert.h"

#include <limits.h>
#include <string.h>

#include "python/errors.h"

static const char *const form_names[] = {"a list of ids", "a list of pieces", "text (a str)"};

static int form_of(PyObject *sentence, tsr_py_form *form)
{
    if (PyUnicode_Check(sentence)) {
        *form = TSR_PY_TEXT;
        return 0;
    }
    if (!PyList_Check(sentence) && !PyTuple_Check(sentence))
        return -1;
    *form = PySequence_Fast_GET_SIZE(sentence) > 0 &&
                    PyUnicode_Check(PySequence_Fast_GET_ITEM(sentence, 0))
                ? TSR_PY_PIECES
                : TSR_PY_IDS;
    return 0;
}

/* Sentence i's ids, from a list or tuple of ints or of pieces. */
static int read_tokens(const tsr_py_engine *e, tessera_side side, PyObject *sentence,
                       tsr_py_form form, const char *what, size_t i, tsr_py_batch *b)
{
    Py_ssize_t len = PySequence_Fast_GET_SIZE(sentence);
    const tessera_vocabulary *vocab = e->vocab[side];
    if (form == TSR_PY_PIECES && !vocab) {
        PyErr_Format(PyExc_ValueError,
                     "%s sentence %zu: pieces need the model's %s vocabulary (%s), which it "
                     "has not: give ids", what, i + 1, side == TESSERA_SOURCE ? "source" : "target",
                     side == TESSERA_SOURCE ? "vocab.src.txt" : "vocab.tgt.txt");
        return -1;
    }
    int32_t *ids = PyMem_RawMalloc((size_t)(len > 0 ? len : 1) * sizeof *ids);
    if (!ids) {
        PyErr_NoMemory();
        return -1;
    }
    b->ids[i] = ids;
    b->seqs[i] = (tessera_tokens){ids, 0};
    /* An id's __index__ may run Python code that shortens the list. */
    for (Py_ssize_t t = 0; t < len && t < PySequence_Fast_GET_SIZE(sentence); t++) {
        b->seqs[i].len = (size_t)t + 1;
        PyObject *tok = PySequence_Fast_GET_ITEM(sentence, t);
        if (form == TSR_PY_PIECES) {
            Py_ssize_t n;
            const char *piece = PyUnicode_Check(tok) ? PyUnicode_AsUTF8AndSize(tok, &n) : NULL;
            if (!piece) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_TypeError,
                                 "%s sentence %zu, token %zd: a piece (str) like the first, "
                                 "not %s", what, i + 1, t + 1, Py_TYPE(tok)->tp_name);
                return -1;
            }
            int32_t id = tessera_vocabulary_find(vocab, piece, (size_t)n);
            ids[t] = id >= 0 ? id : tessera_config_unk_id(e->cfg, side);
            continue;
        }
        if (PyUnicode_Check(tok) || !PyIndex_Check(tok)) {
            PyErr_Format(PyExc_TypeError, "%s sentence %zu, token %zd: an id (int) like the "
                         "first, not %s", what, i + 1, t + 1, Py_TYPE(tok)->tp_name);
            return -1;
        }
        int overflow;
        long long id = PyLong_AsLongLongAndOverflow(tok, &overflow);
        if (id == -1 && PyErr_Occurred())
            return -1;
        if (overflow || id < INT32_MIN || id > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "%s sentence %zu, token %zd: id out of range",
                         what, i + 1, t + 1);
            return -1;
        }
        ids[t] = (int32_t)id;
    }
    return 0;
}

static int read_text(const tsr_py_engine *e, tessera_side side, PyObject *sentence,
                     const char *what, size_t i, tsr_py_batch *b)
{
    if (!tessera_model_has_tokenizer(e->model, side)) {
        PyErr_Format(PyExc_ValueError,
                     "%s sentence %zu: text needs the model's %s tokenizer (config.json key "
                     "'tokenizer', and a tessera built with SentencePiece): give ids or pieces",
                     what, i + 1, side == TESSERA_SOURCE ? "source" : "target");
        return -1;
    }
    Py_ssize_t n;
    const char *text = PyUnicode_AsUTF8AndSize(sentence, &n);
    if (!text)
        return -1;
    if (strlen(text) != (size_t)n) {
        PyErr_Format(PyExc_ValueError, "%s sentence %zu: contains a NUL character", what, i + 1);
        return -1;
    }
    b->texts[i] = text;
    return 0;
}

int tsr_py_batch_read(const tsr_py_engine *e, tessera_side side, PyObject *list, const char *what,
                      tsr_py_batch *b)
{
    memset(b, 0, sizeof *b);
    if (PyUnicode_Check(list) || PyBytes_Check(list) || !PySequence_Check(list)) {
        PyErr_Format(PyExc_TypeError, "%s: a list of sentences, not %s", what,
                     Py_TYPE(list)->tp_name);
        return -1;
    }
    /* A tuple of its own: another thread may change the caller's list while
     * the call runs without the GIL, but not this. */
    b->keep = PySequence_Tuple(list);
    if (!b->keep)
        return -1;
    b->n = (size_t)PyTuple_GET_SIZE(b->keep);
    size_t slots = b->n ? b->n : 1;
    b->seqs = PyMem_RawCalloc(slots, sizeof *b->seqs);
    b->ids = PyMem_RawCalloc(slots, sizeof *b->ids);
    b->texts = PyMem_RawCalloc(slots, sizeof *b->texts);
    if (!b->seqs || !b->ids || !b->texts) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < b->n; i++) {
        PyObject *s = PyTuple_GET_ITEM(b->keep, (Py_ssize_t)i);
        tsr_py_form form;
        if (form_of(s, &form) != 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s sentence %zu: a list of ids, a list of pieces or a str, not %s",
                         what, i + 1, Py_TYPE(s)->tp_name);
            return -1;
        }
        /* An empty list fits either list form. */
        if (i > 0 && form != b->form &&
            !(form != TSR_PY_TEXT && b->form != TSR_PY_TEXT && PySequence_Fast_GET_SIZE(s) == 0)) {
            PyErr_Format(PyExc_ValueError, "%s sentence %zu is %s, sentence 1 %s: a call takes "
                         "one form", what, i + 1, form_names[form], form_names[b->form]);
            return -1;
        }
        if (i == 0)
            b->form = form;
        if (b->form == TSR_PY_TEXT ? read_text(e, side, s, what, i, b) != 0
                                   : read_tokens(e, side, s, b->form, what, i, b) != 0)
            return -1;
    }
    return 0;
}

int tsr_py_batch_tokenize(const tsr_py_engine *e, tessera_side side, tsr_py_batch *b, char *err,
                          size_t err_len)
{
    if (b->form != TSR_PY_TEXT)
        return 0;
    /* As the command: a text too long for max_positions tokens is refused
     * before it is tokenized. */
    size_t most = (size_t)e->cfg->max_positions - (side == TESSERA_TARGET);
    for (size_t i = 0; i < b->n; i++) {
        size_t len = strlen(b->texts[i]);
        if (len / TESSERA_TEXT_BYTES_PER_TOKEN > most) {
            snprintf(err, err_len, "sentence %zu: %zu bytes of text, more than %zu tokens can "
                     "hold (max_positions; %d bytes a token)", i + 1, len, most,
                     TESSERA_TEXT_BYTES_PER_TOKEN);
            return TESSERA_ERR_INPUT;
        }
        tessera_tokenized t;
        char why[TSR_PY_ERR_LEN];
        int rc = tessera_tokenize(e->model, side, b->texts[i], len, 0, &t, why, sizeof why);
        if (rc != 0) {
            snprintf(err, err_len, "sentence %zu: %s", i + 1, why);
            return rc;
        }
        b->ids[i] = PyMem_RawMalloc((t.len ? t.len : 1) * sizeof(int32_t));
        if (!b->ids[i]) {
            tessera_tokenized_free(&t);
            snprintf(err, err_len, "sentence %zu: out of memory for its tokens", i + 1);
            return TESSERA_ERR_NOMEM;
        }
        if (t.len)
            memcpy(b->ids[i], t.ids, t.len * sizeof(int32_t));
        b->seqs[i] = (tessera_tokens){b->ids[i], t.len};
        tessera_tokenized_free(&t);
    }
    return 0;
}

void tsr_py_batch_free(tsr_py_batch *b)
{
    for (size_t i = 0; b->ids && i < b->n; i++)
        PyMem_RawFree(b->ids[i]);
    PyMem_RawFree(b->ids);
    PyMem_RawFree(b->seqs);
    PyMem_RawFree(b->texts);
    Py_CLEAR(b->keep);
    memset(b, 0, sizeof *b);
}

PyObject *tsr_py_int_list(const int32_t *v, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *x = PyLong_FromLong(v[i]);
        if (!x) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, x);
    }
    return list;
}

PyObject *tsr_py_float_list(const float *v, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *x = PyFloat_FromDouble((double)v[i]);
        if (!x) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, x);
    }
    return list;
}

PyObject *tsr_py_target(const tsr_py_engine *e, tsr_py_form form, const int32_t *ids, size_t len)
{
    if (form == TSR_PY_IDS)
        return tsr_py_int_list(ids, len);
    if (form == TSR_PY_PIECES) {
        const tessera_vocabulary *vocab = e->vocab[TESSERA_TARGET];
        if (!vocab)
            return PyErr_Format(PyExc_ValueError, "pieces need the model's target vocabulary "
                                "(vocab.tgt.txt), which it has not: give ids");
        PyObject *list = PyList_New((Py_ssize_t)len);
        for (size_t i = 0; list && i < len; i++) {
            const char *piece = tessera_vocabulary_piece(vocab, ids[i]);
            PyObject *x = piece ? PyUnicode_FromString(piece)
                                : PyErr_Format(PyExc_ValueError, "target id %d out of range",
                                               (int)ids[i]);
            if (!x) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i, x);
        }
        return list;
    }
    char *text, err[TSR_PY_ERR_LEN];
    int rc = tessera_detokenize(e->model, TESSERA_TARGET, ids, len, &text, err, sizeof err);
    if (rc != 0)
        return tsr_py_raise(rc, err);
    PyObject *s = PyUnicode_FromString(text);
    tessera_text_free(text);
    return s;
}

int tsr_py_batching(int max_batch_size, const char *batch_type, size_t n, int *batch,
                    int *batch_tokens)
{
    int tokens = strcmp(batch_type, "tokens") == 0;
    if (!tokens && strcmp(batch_type, "examples") != 0) {
        PyErr_Format(PyExc_ValueError, "batch_type '%s': 'examples' or 'tokens'", batch_type);
        return -1;
    }
    if (max_batch_size < 0) {
        PyErr_Format(PyExc_ValueError, "max_batch_size %d: must be >= 0 (0: no limit)",
                     max_batch_size);
        return -1;
    }
    int all = n == 0 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
    *batch = !tokens && max_batch_size > 0 ? max_batch_size : all;
    *batch_tokens = tokens ? max_batch_size : 0;
    return 0;
}
