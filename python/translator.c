/* tessera.Translator: translate_batch and score_batch on a model's workers. */
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "python/classes.h"

#include "python/convert.h"
#include "python/errors.h"
#include "python/results.h"

typedef tsr_py_model translator;

/* The constructor's shortlist keywords (the others are Model's). */
typedef struct shortlist_args {
    PyObject *vmap, *shortlist, *first, *best; /* borrowed; NULL: not given */
    float threshold;
} shortlist_args;

static const char *const shortlist_keywords[] = {"vmap", "shortlist", "shortlist_first",
                                                 "shortlist_best", "shortlist_threshold"};

/* The shortlist keywords of kwargs (borrowed from it: the caller's dict
 * outlives the constructor), and a copy of kwargs without them for Model's
 * (*rest, a new reference, or NULL when kwargs is). -1 with an exception set. */
static int take_shortlist_args(PyObject *kwargs, shortlist_args *a, PyObject **rest)
{
    memset(a, 0, sizeof *a);
    *rest = kwargs ? PyDict_Copy(kwargs) : NULL;
    if (kwargs && !*rest)
        return -1;
    PyObject *given[5] = {NULL};
    for (size_t i = 0; kwargs && i < 5; i++) {
        given[i] = PyDict_GetItemString(kwargs, shortlist_keywords[i]);
        if (given[i] && PyDict_DelItemString(*rest, shortlist_keywords[i]) != 0)
            return -1;
        if (given[i] == Py_None)
            given[i] = NULL;
    }
    a->vmap = given[0];
    a->shortlist = given[1];
    a->first = given[2];
    a->best = given[3];
    PyObject *threshold = given[4];
    if (threshold) {
        double t = PyFloat_AsDouble(threshold);
        if (PyErr_Occurred() || !(t >= 0.0 && t <= 1.0)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "shortlist_threshold: a probability in [0, 1]");
            return -1;
        }
        a->threshold = (float)t;
    }
    return 0;
}

/* A count keyword: None for the file's own (or Marian's), else a whole number >= 0. */
static int shortlist_count(PyObject *obj, const char *name, size_t *out)
{
    *out = TESSERA_SHORTLIST_DEFAULT_COUNT;
    if (!obj)
        return 0;
    long n = PyLong_AsLong(obj);
    if ((n == -1 && PyErr_Occurred()) || n < 0 || n > INT_MAX) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: a whole number >= 0, or None", name);
        return -1;
    }
    *out = (size_t)n;
    return 0;
}

/* The shortlists of a new translator: the one its keywords name, and its
 * directory's vmap.txt when there is one (as CTranslate2 reads it). */
static int load_shortlists(tsr_py_engine *e, PyObject *args, PyObject *kwargs,
                           const shortlist_args *a)
{
    size_t first, best;
    if (a->vmap && a->shortlist) {
        PyErr_SetString(PyExc_ValueError, "vmap and shortlist: give one of them");
        return -1;
    }
    if (!a->shortlist && (a->first || a->best || a->threshold != 0.0f)) {
        PyErr_SetString(PyExc_ValueError, "shortlist_first, shortlist_best and "
                                          "shortlist_threshold need shortlist=PATH");
        return -1;
    }
    if (shortlist_count(a->first, "shortlist_first", &first) != 0 ||
        shortlist_count(a->best, "shortlist_best", &best) != 0)
        return -1;
    PyObject *dir = NULL, *file = NULL;
    PyObject *model = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0)
                      : kwargs                   ? PyDict_GetItemString(kwargs, "model")
                                                 : NULL;
    if (!model || !PyUnicode_FSConverter(model, &dir))
        return -1;
    if ((a->vmap || a->shortlist) && !PyUnicode_FSConverter(a->vmap ? a->vmap : a->shortlist,
                                                            &file)) {
        Py_DECREF(dir);
        return -1;
    }
    char err[TSR_PY_ERR_LEN], vmap[4200];
    snprintf(vmap, sizeof vmap, "%s/vmap.txt", PyBytes_AS_STRING(dir));
    const char *path = file ? PyBytes_AS_STRING(file) : NULL;
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS
    if (path && a->vmap)
        rc = tessera_shortlist_load_vmap(e->model, e->vocab[0], e->vocab[1], path, &e->shortlist,
                                         err, sizeof err);
    else if (path)
        rc = tessera_shortlist_load_lexical(e->model, e->vocab[0], e->vocab[1], path, first,
                                            best, a->threshold, &e->shortlist, err, sizeof err);
    struct stat st;
    if (rc == 0 && stat(vmap, &st) == 0 && S_ISREG(st.st_mode) &&
        tessera_shortlist_load_vmap(e->model, e->vocab[0], e->vocab[1], vmap, &e->dir_vmap,
                                    e->dir_vmap_error, sizeof e->dir_vmap_error) != 0)
        e->dir_vmap = NULL;
    Py_END_ALLOW_THREADS
    Py_DECREF(dir);
    Py_XDECREF(file);
    if (rc != 0) {
        tsr_py_raise(rc, err);
        return -1;
    }
    return 0;
}

/* A Model with a decoder. */
static PyObject *translator_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    shortlist_args a;
    PyObject *rest;
    if (take_shortlist_args(kwargs, &a, &rest) != 0) {
        Py_XDECREF(rest);
        return NULL;
    }
    translator *self = (translator *)tsr_py_model_type.tp_new(type, args, rest);
    if (self && self->e.cfg->n_decoder_layers == 0) {
        Py_CLEAR(self);
        PyErr_SetString(PyExc_ValueError,
                        "the model has no decoder (an encoder alone): use tessera.Encoder");
    }
    if (self && load_shortlists(&self->e, args, kwargs, &a) != 0)
        Py_CLEAR(self);
    Py_XDECREF(rest);
    return (PyObject *)self;
}

/* end_token: None, a target id or a target piece. */
static int end_token_id(const tsr_py_engine *e, PyObject *obj, int *id)
{
    if (obj == Py_None) {
        *id = -1;
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        Py_ssize_t n;
        const char *piece = PyUnicode_AsUTF8AndSize(obj, &n);
        if (!piece)
            return -1;
        int32_t found = e->vocab[TESSERA_TARGET]
                            ? tessera_vocabulary_find(e->vocab[TESSERA_TARGET], piece, (size_t)n)
                            : -1;
        if (found < 0) {
            PyErr_Format(PyExc_ValueError, "end_token '%s' is not in the target vocabulary",
                         piece);
            return -1;
        }
        *id = found;
        return 0;
    }
    int overflow;
    long v = PyLong_AsLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < 0 || v >= e->cfg->tgt_vocab_size) {
        PyErr_Format(PyExc_ValueError, "end token: out of range [0, %d)",
                     e->cfg->tgt_vocab_size);
        return -1;
    }
    *id = (int)v;
    return 0;
}

/* Hypothesis k of sentence i as TranslationResult fields. */
static int add_hypothesis(const tsr_py_engine *e, tsr_py_form form, const char *text,
                          const tessera_hypothesis *h, PyObject *hyps, PyObject *scores,
                          PyObject *alignments, int return_scores, int return_alignments)
{
    PyObject *hyp = form == TSR_PY_TEXT ? PyUnicode_FromString(text)
                                        : tsr_py_target(e, form, h->ids, h->len);
    if (!hyp || PyList_Append(hyps, hyp) != 0) {
        Py_XDECREF(hyp);
        return -1;
    }
    Py_DECREF(hyp);
    if (return_scores) {
        PyObject *s = PyFloat_FromDouble(h->score);
        if (!s || PyList_Append(scores, s) != 0) {
            Py_XDECREF(s);
            return -1;
        }
        Py_DECREF(s);
    }
    if (return_alignments) {
        PyObject *a = tsr_py_int_list(h->alignment, h->alignment ? h->len : 0);
        if (!a || PyList_Append(alignments, a) != 0) {
            Py_XDECREF(a);
            return -1;
        }
        Py_DECREF(a);
    }
    return 0;
}

static PyObject *translation_results(const tsr_py_engine *e, tsr_py_form form, size_t n, int K,
                                     const tessera_hypothesis *h,
                                     const tessera_text_hypothesis *th, int return_scores,
                                     int return_alignments)
{
    PyObject *out = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        PyObject *hyps = PyList_New(0), *scores = PyList_New(0), *alignments = PyList_New(0);
        int rc = hyps && scores && alignments ? 0 : -1;
        for (int k = 0; rc == 0 && k < K; k++) {
            size_t at = i * (size_t)K + (size_t)k;
            rc = add_hypothesis(e, form, th ? th[at].text : NULL, th ? &th[at].tokens : &h[at],
                                hyps, scores, alignments, return_scores, return_alignments);
        }
        PyObject *r = NULL;
        if (rc == 0)
            r = tsr_py_translation_result(hyps, scores, alignments);
        else {
            Py_XDECREF(hyps);
            Py_XDECREF(scores);
            Py_XDECREF(alignments);
        }
        if (!r) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, r);
    }
    return out;
}

/* The model's language whose token id is `id`, or NULL. */
static const char *language_of_id(const tessera_model *model, int32_t id)
{
    for (size_t i = 0; i < tessera_model_language_count(model); i++) {
        int32_t lang_id;
        const char *name = tessera_model_language(model, i, &lang_id);
        if (lang_id == id)
            return name;
    }
    return NULL;
}

/* CTranslate2's way of naming a forced target language: target_prefix
 * [["fra_Latn"], ...], the language token first in every prefix. On a model
 * that forces one (target_language in its config), a prefix that starts with
 * a language token gives target_lang (the same one for every sentence: a
 * call has one target language) and loses that token, which tessera forces
 * itself. 0, or -1 with ValueError set. */
static int target_lang_from_prefix(const tsr_py_engine *e, tsr_py_batch *pre,
                                   const char **target_lang)
{
    if (e->cfg->target_language == TESSERA_TARGET_LANGUAGE_NONE || pre->n == 0)
        return 0;
    const char *found = NULL;
    size_t with = 0;
    for (size_t i = 0; i < pre->n; i++) {
        const char *name =
            pre->seqs[i].len > 0 ? language_of_id(e->model, pre->seqs[i].ids[0]) : NULL;
        if (!name)
            continue;
        if (found && strcmp(found, name) != 0) {
            PyErr_Format(PyExc_ValueError,
                         "target_prefix: sentence %zu starts with %s, an earlier one with %s: "
                         "one target language per call (group the sentences by language)",
                         i, name, found);
            return -1;
        }
        found = name;
        with++;
    }
    if (!found)
        return 0;
    if (with != pre->n) {
        PyErr_Format(PyExc_ValueError,
                     "target_prefix: %zu of %zu prefixes start with the language %s: give it "
                     "to every sentence, or as target_lang",
                     with, pre->n, found);
        return -1;
    }
    if (*target_lang && strcmp(*target_lang, found) != 0) {
        PyErr_Format(PyExc_ValueError, "target_prefix starts with %s but target_lang is %s",
                     found, *target_lang);
        return -1;
    }
    *target_lang = found;
    for (size_t i = 0; i < pre->n; i++) {
        pre->seqs[i].ids++;
        pre->seqs[i].len--;
    }
    return 0;
}

/* translate_batch(callback=fn): fn gets each token as it joins a sentence's
 * hypothesis (beam search: its best, once final), as one object with CTranslate2's GenerationStepResult fields
 * (batch_id, step, token_id, token, log_prob, hypothesis_id), and a true
 * return ends that sentence. Called on the runtime's thread, which takes the
 * interpreter's lock for it (the caller's thread has let it go). An
 * exception from fn ends every sentence and is raised by translate_batch. */
typedef struct py_stream {
    PyObject *fn;
    const tessera_vocabulary *vocab;
    PyObject *error_type, *error, *error_trace; /* the first exception of fn */
} py_stream;

static int py_on_token(void *arg, size_t sentence, int32_t id, float logprob, size_t step)
{
    py_stream *p = arg;
    PyGILState_STATE held = PyGILState_Ensure();
    int stop = 1;
    if (!p->error_type) {
        const char *piece = p->vocab ? tessera_vocabulary_piece(p->vocab, id) : NULL;
        PyObject *result = tsr_py_generation_step(sentence, step, id, piece, (double)logprob);
        PyObject *said = result ? PyObject_CallOneArg(p->fn, result) : NULL;
        int truth = said ? PyObject_IsTrue(said) : -1;
        if (truth < 0)
            PyErr_Fetch(&p->error_type, &p->error, &p->error_trace);
        else
            stop = truth;
        Py_XDECREF(said);
        Py_XDECREF(result);
    }
    PyGILState_Release(held);
    return stop;
}

static PyObject *translate_batch(translator *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"source", "target_prefix", "max_batch_size", "batch_type",
                               "beam_size", "max_decoding_length", "num_hypotheses",
                               "length_penalty", "return_scores", "return_alignments",
                               "sampling_topk", "sampling_topp", "sampling_temperature", "seed",
                               "min_decoding_length", "no_repeat_ngram_size",
                               "repetition_penalty", "disable_unk", "end_token", "source_lang",
                               "target_lang", "use_vmap", "callback", NULL};
    tsr_py_engine *e = &self->e;
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    PyObject *source, *prefix = Py_None, *end_token = Py_None, *seed = NULL, *callback = Py_None;
    int max_batch_size = 0, return_scores = 0, return_alignments = 0, use_vmap = 0;
    const char *batch_type = "examples";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$isiiifppiffOiifpOzzpO:translate_batch",
                                     keywords, &source, &prefix, &max_batch_size, &batch_type,
                                     &o.beam, &o.max_len, &o.n_best, &o.length_penalty,
                                     &return_scores, &return_alignments, &o.sampling_topk,
                                     &o.sampling_topp, &o.sampling_temperature, &seed,
                                     &o.min_len, &o.no_repeat_ngram, &o.repetition_penalty,
                                     &o.disable_unk, &end_token, &o.source_lang,
                                     &o.target_lang, &use_vmap, &callback))
        return NULL;
    py_stream stream = {0};
    if (callback != Py_None) {
        if (!PyCallable_Check(callback)) {
            PyErr_SetString(PyExc_TypeError, "callback: a function of one argument, or None");
            return NULL;
        }
        stream.fn = callback;
        stream.vocab = e->vocab[TESSERA_TARGET];
        o.on_token = py_on_token;
        o.on_token_arg = &stream;
    }
    if (use_vmap && (e->shortlist || !e->dir_vmap)) {
        if (!e->shortlist && e->dir_vmap_error[0])
            PyErr_Format(PyExc_ValueError, "use_vmap: %s", e->dir_vmap_error);
        else
            PyErr_SetString(PyExc_ValueError,
                            e->shortlist ? "use_vmap: this translator has its own shortlist"
                                         : "use_vmap: the model directory has no vmap.txt");
        return NULL;
    }
    o.shortlist = use_vmap ? e->dir_vmap : e->shortlist;
    if (seed) {
        o.seed = PyLong_AsUnsignedLongLong(seed);
        if (PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "seed: a whole number in [0, 2^64)");
            return NULL;
        }
    }
    o.return_alignments = return_alignments;
    tsr_py_batch src, pre = {0};
    PyObject *out = NULL;
    if (tsr_py_batch_read(e, TESSERA_SOURCE, source, "source", &src) != 0 ||
        (prefix != Py_None &&
         tsr_py_batch_read(e, TESSERA_TARGET, prefix, "target_prefix", &pre) != 0) ||
        end_token_id(e, end_token, &o.end_token) != 0 ||
        tsr_py_batching(max_batch_size, batch_type, src.n, &o.batch, &o.batch_tokens) != 0)
        goto done;
    if (prefix != Py_None && pre.n != src.n) {
        PyErr_Format(PyExc_ValueError, "target_prefix: %zu prefixes for %zu sentences", pre.n,
                     src.n);
        goto done;
    }
    if (prefix != Py_None && pre.form != TSR_PY_TEXT &&
        target_lang_from_prefix(e, &pre, &o.target_lang) != 0)
        goto done;
    if (src.n == 0) {
        out = PyList_New(0);
        goto done;
    }
    tessera_hypothesis *h = NULL;
    tessera_text_hypothesis *th = NULL;
    char err[TSR_PY_ERR_LEN];
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = prefix != Py_None ? tsr_py_batch_tokenize(e, TESSERA_TARGET, &pre, err, sizeof err) : 0;
    o.target_prefix = prefix != Py_None ? pre.seqs : NULL;
    if (rc == 0) {
        tessera_runtime *rt = tsr_py_engine_acquire(e);
        rc = src.form == TSR_PY_TEXT
                 ? tessera_translate_text(rt, e->model, src.texts, src.n, &o, &th, err, sizeof err)
                 : tessera_translate_with(rt, e->model, src.seqs, src.n, &o, &h, err, sizeof err);
        tsr_py_engine_release(e, rt);
    }
    Py_END_ALLOW_THREADS
    if (stream.error_type) { /* the callback's own exception, whatever else happened */
        PyErr_Restore(stream.error_type, stream.error, stream.error_trace);
        if (rc == 0 && th)
            tessera_text_hypotheses_free(th, src.n * (size_t)o.n_best);
        else if (rc == 0)
            tessera_hypotheses_free(h, src.n * (size_t)o.n_best);
        goto done;
    }
    if (rc != 0) {
        tsr_py_raise_options(rc, err);
        goto done;
    }
    out = translation_results(e, src.form, src.n, o.n_best, h, th, return_scores,
                              return_alignments);
    if (th)
        tessera_text_hypotheses_free(th, src.n * (size_t)o.n_best);
    else
        tessera_hypotheses_free(h, src.n * (size_t)o.n_best);
done:
    tsr_py_batch_free(&src);
    tsr_py_batch_free(&pre);
    return out;
}

static PyObject *score_batch(translator *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"source",     "target",      "max_batch_size", "batch_type",
                               "source_lang", "target_lang", NULL};
    tsr_py_engine *e = &self->e;
    PyObject *source, *target;
    int max_batch_size = 0;
    const char *batch_type = "examples";
    tessera_score_options so;
    tessera_score_options_init(&so);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$iszz:score_batch", keywords, &source,
                                     &target, &max_batch_size, &batch_type, &so.source_lang,
                                     &so.target_lang))
        return NULL;
    tsr_py_batch src, tgt = {0};
    PyObject *out = NULL;
    if (tsr_py_batch_read(e, TESSERA_SOURCE, source, "source", &src) != 0 ||
        tsr_py_batch_read(e, TESSERA_TARGET, target, "target", &tgt) != 0 ||
        tsr_py_batching(max_batch_size, batch_type, src.n, &so.batch, &so.batch_tokens) != 0)
        goto done;
    if (tgt.n != src.n) {
        PyErr_Format(PyExc_ValueError, "target: %zu targets for %zu sources", tgt.n, src.n);
        goto done;
    }
    if (src.n == 0) {
        out = PyList_New(0);
        goto done;
    }
    /* Text is tokenized here, not by tessera_score_text: the results' lengths
     * are the targets' token counts, which that function does not return. */
    float **scores = NULL;
    char err[TSR_PY_ERR_LEN];
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tsr_py_batch_tokenize(e, TESSERA_SOURCE, &src, err, sizeof err);
    if (rc == 0)
        rc = tsr_py_batch_tokenize(e, TESSERA_TARGET, &tgt, err, sizeof err);
    if (rc == 0) {
        tessera_runtime *rt = tsr_py_engine_acquire(e);
        rc = tessera_score_with(rt, e->model, src.seqs, tgt.seqs, src.n, &so, &scores, err,
                                sizeof err);
        tsr_py_engine_release(e, rt);
    }
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        tsr_py_raise(rc, err);
        goto done;
    }
    out = PyList_New((Py_ssize_t)src.n);
    for (size_t i = 0; out && i < src.n; i++) {
        PyObject *lp = tsr_py_float_list(scores[i], tgt.seqs[i].len + 1);
        PyObject *r = lp ? tsr_py_scoring_result(lp) : NULL;
        if (!r) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, r);
    }
    tessera_scores_free(scores, src.n);
done:
    tsr_py_batch_free(&src);
    tsr_py_batch_free(&tgt);
    return out;
}

static PyMethodDef translator_methods[] = {
    {"translate_batch", (PyCFunction)(void (*)(void))translate_batch,
     METH_VARARGS | METH_KEYWORDS, TSR_PY_DOC_TRANSLATE_BATCH},
    {"score_batch", (PyCFunction)(void (*)(void))score_batch, METH_VARARGS | METH_KEYWORDS,
     TSR_PY_DOC_SCORE_BATCH},
    {NULL, NULL, 0, NULL}};

PyTypeObject tsr_py_translator_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tessera.Translator",
    .tp_basicsize = sizeof(translator),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = TSR_PY_DOC_TRANSLATOR,
    .tp_methods = translator_methods,
    .tp_base = &tsr_py_model_type,
    .tp_new = translator_new,
};
