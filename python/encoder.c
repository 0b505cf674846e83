/* tessera.Encoder: encode_batch, the encoder's output vectors. */
#include "python/classes.h"

#include <string.h>

#include "python/convert.h"
#include "python/errors.h"
#include "python/results.h"

typedef tsr_py_model encoder;

/* One call's vectors, released when the last FloatArray viewing them goes. */
typedef struct encodings {
    float **vectors;
    size_t n;
} encodings;

static void encodings_release(PyObject *capsule)
{
    encodings *v = PyCapsule_GetPointer(capsule, "tessera.encodings");
    tessera_encodings_free(v->vectors, v->n);
    PyMem_RawFree(v);
}

typedef enum pooling { POOL_NONE, POOL_MEAN, POOL_FIRST } pooling;

/* Sentence i's vectors as pooling asks; the mean summed in double, in token
 * order, as tessera encode --pool mean. */
static PyObject *sentence_vectors(PyObject *owner, float *rows, size_t len, size_t d, pooling p)
{
    if (p == POOL_NONE)
        return tsr_py_float_array(owner, rows, 0, 2, (Py_ssize_t)len, (Py_ssize_t)d);
    if (p == POOL_FIRST)
        return tsr_py_float_array(owner, rows, 0, 1, 1, (Py_ssize_t)d);
    float *mean = PyMem_RawMalloc(d * sizeof *mean);
    if (!mean)
        return PyErr_NoMemory();
    for (size_t j = 0; j < d; j++) {
        double sum = 0;
        for (size_t t = 0; t < len; t++)
            sum += rows[t * d + j];
        mean[j] = (float)(sum / (double)len);
    }
    return tsr_py_float_array(NULL, mean, 1, 1, 1, (Py_ssize_t)d);
}

static PyObject *encode_batch(encoder *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"source", "pooling", "max_batch_size", "batch_type", "source_lang",
                               NULL};
    tsr_py_engine *e = &self->e;
    PyObject *source;
    const char *pool_name = "none", *batch_type = "examples", *source_lang = NULL;
    int max_batch_size = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$sisz:encode_batch", keywords, &source,
                                     &pool_name, &max_batch_size, &batch_type, &source_lang))
        return NULL;
    pooling pool = strcmp(pool_name, "none") == 0    ? POOL_NONE
                   : strcmp(pool_name, "mean") == 0  ? POOL_MEAN
                   : strcmp(pool_name, "first") == 0 ? POOL_FIRST
                                                     : (pooling)-1;
    if ((int)pool < 0)
        return PyErr_Format(PyExc_ValueError, "pooling '%s': 'none', 'mean' or 'first'",
                            pool_name);
    tessera_encode_options eo;
    tessera_encode_options_init(&eo);
    eo.source_lang = source_lang;
    tsr_py_batch src;
    PyObject *out = NULL;
    if (tsr_py_batch_read(e, TESSERA_SOURCE, source, "source", &src) != 0 ||
        tsr_py_batching(max_batch_size, batch_type, src.n, &eo.batch, &eo.batch_tokens) != 0)
        goto done;
    if (src.n == 0) {
        out = PyList_New(0);
        goto done;
    }
    float **vectors = NULL;
    char err[TSR_PY_ERR_LEN];
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tsr_py_batch_tokenize(e, TESSERA_SOURCE, &src, err, sizeof err);
    if (rc == 0) {
        tessera_runtime *rt = tsr_py_engine_acquire(e);
        rc = tessera_encode_with(rt, e->model, src.seqs, src.n, &eo, &vectors, err, sizeof err);
        tsr_py_engine_release(e, rt);
    }
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        tsr_py_raise(rc, err);
        goto done;
    }
    encodings *owned = PyMem_RawMalloc(sizeof *owned);
    PyObject *owner = owned ? PyCapsule_New(owned, "tessera.encodings", encodings_release) : NULL;
    if (!owner) {
        tessera_encodings_free(vectors, src.n);
        PyMem_RawFree(owned);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    *owned = (encodings){vectors, src.n};
    size_t d = (size_t)e->cfg->d_model;
    out = PyList_New((Py_ssize_t)src.n);
    for (size_t i = 0; out && i < src.n; i++) {
        /* The encoder's output covers the ids the model appends too. */
        size_t len = src.seqs[i].len + (size_t)e->cfg->n_source_suffix +
                     (e->cfg->source_language != TESSERA_SOURCE_LANGUAGE_NONE);
        PyObject *v = sentence_vectors(owner, vectors[i], len, d, pool);
        if (!v) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, v);
    }
    Py_DECREF(owner);
done:
    tsr_py_batch_free(&src);
    return out;
}

static PyMethodDef encoder_methods[] = {
    {"encode_batch", (PyCFunction)(void (*)(void))encode_batch, METH_VARARGS | METH_KEYWORDS,
     TSR_PY_DOC_ENCODE_BATCH},
    {NULL, NULL, 0, NULL}};

PyTypeObject tsr_py_encoder_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tessera.Encoder",
    .tp_basicsize = sizeof(encoder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = TSR_PY_DOC_ENCODER,
    .tp_methods = encoder_methods,
    .tp_base = &tsr_py_model_type,
};
