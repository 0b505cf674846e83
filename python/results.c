/* TranslationResult, ScoringResult, GenerationStepResult and FloatArray
 * (python/results.h). */
#include "python/results.h"

#include <string.h>
#include <structmember.h>

static PyTypeObject *translation_result_type, *scoring_result_type, *generation_step_type;

static PyStructSequence_Field generation_step_fields[] = {
    {"batch_id", "the sentence's index in the source batch"},
    {"step", "the token's position in the hypothesis, from 0"},
    {"token_id", "the token's id"},
    {"token", "its piece, or None without a target vocabulary"},
    {"log_prob", "its log-probability, as it counts in the score"},
    {"hypothesis_id", "the hypothesis (always 0: the best)"},
    {NULL, NULL}};
static PyStructSequence_Desc generation_step_desc = {
    "tessera.GenerationStepResult", "One token, as translate_batch(callback=...) streams it.",
    generation_step_fields, 6};

PyObject *tsr_py_generation_step(size_t batch_id, size_t step, int32_t token_id,
                                 const char *token, double log_prob)
{
    PyObject *r = PyStructSequence_New(generation_step_type);
    PyObject *v[6] = {PyLong_FromSize_t(batch_id), PyLong_FromSize_t(step),
                      PyLong_FromLong(token_id),
                      token ? PyUnicode_DecodeUTF8(token, (Py_ssize_t)strlen(token), "replace")
                            : Py_NewRef(Py_None),
                      PyFloat_FromDouble(log_prob), PyLong_FromLong(0)};
    int ok = r != NULL;
    for (int i = 0; i < 6; i++)
        ok &= v[i] != NULL;
    for (int i = 0; i < 6; i++) {
        if (ok)
            PyStructSequence_SetItem(r, i, v[i]); /* steals it */
        else
            Py_XDECREF(v[i]);
    }
    if (!ok)
        Py_CLEAR(r);
    return r;
}

static PyStructSequence_Field translation_fields[] = {
    {"hypotheses", "the num_hypotheses best translations, best first: lists of ids, lists of "
                   "pieces or str, as the source was given"},
    {"scores", "their scores (log-probability / length^length_penalty) when return_scores, "
               "else []"},
    {"alignments", "for each hypothesis, the source position each of its tokens attends to "
                   "most, when return_alignments, else []"},
    {NULL, NULL}};
static PyStructSequence_Desc translation_desc = {
    "tessera.TranslationResult", "The translations of one source sentence.", translation_fields,
    3};

static PyStructSequence_Field scoring_fields[] = {
    {"log_probs", "the natural-log probability of each target token and then of the end of "
                  "sentence (len(target) + 1 values)"},
    {NULL, NULL}};
static PyStructSequence_Desc scoring_desc = {"tessera.ScoringResult",
                                             "The teacher-forced scores of one target sentence.",
                                             scoring_fields, 1};

PyObject *tsr_py_translation_result(PyObject *hypotheses, PyObject *scores, PyObject *alignments)
{
    PyObject *r = PyStructSequence_New(translation_result_type);
    if (!r) {
        Py_DECREF(hypotheses);
        Py_DECREF(scores);
        Py_DECREF(alignments);
        return NULL;
    }
    PyStructSequence_SET_ITEM(r, 0, hypotheses);
    PyStructSequence_SET_ITEM(r, 1, scores);
    PyStructSequence_SET_ITEM(r, 2, alignments);
    return r;
}

PyObject *tsr_py_scoring_result(PyObject *log_probs)
{
    PyObject *r = PyStructSequence_New(scoring_result_type);
    if (!r) {
        Py_DECREF(log_probs);
        return NULL;
    }
    PyStructSequence_SET_ITEM(r, 0, log_probs);
    return r;
}

/* ---- FloatArray ---------------------------------------------------------- */

typedef struct float_array {
    PyObject_HEAD
    PyObject *owner;
    float *data;
    int own;
    int ndim;
    Py_ssize_t shape[2], strides[2];
} float_array;

static PyTypeObject float_array_type;

PyObject *tsr_py_float_array(PyObject *owner, float *data, int own, int ndim, Py_ssize_t rows,
                             Py_ssize_t cols)
{
    float_array *a = PyObject_New(float_array, &float_array_type);
    if (!a) {
        if (own)
            PyMem_RawFree(data);
        return NULL;
    }
    a->owner = Py_XNewRef(owner);
    a->data = data;
    a->own = own;
    a->ndim = ndim;
    if (ndim == 2) {
        a->shape[0] = rows;
        a->shape[1] = cols;
        a->strides[0] = cols * (Py_ssize_t)sizeof(float);
        a->strides[1] = sizeof(float);
    } else {
        a->shape[0] = cols;
        a->strides[0] = sizeof(float);
    }
    return (PyObject *)a;
}

static Py_ssize_t elements(const float_array *a)
{
    return a->ndim == 2 ? a->shape[0] * a->shape[1] : a->shape[0];
}

static void float_array_dealloc(float_array *a)
{
    Py_XDECREF(a->owner);
    if (a->own)
        PyMem_RawFree(a->data);
    PyObject_Free(a);
}

static int float_array_getbuffer(float_array *a, Py_buffer *view, int flags)
{
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "tessera.FloatArray is read-only");
        view->obj = NULL;
        return -1;
    }
    view->buf = a->data;
    view->obj = Py_NewRef((PyObject *)a);
    view->len = elements(a) * (Py_ssize_t)sizeof(float);
    view->readonly = 1;
    view->itemsize = sizeof(float);
    view->format = (flags & PyBUF_FORMAT) ? "f" : NULL;
    view->ndim = (flags & PyBUF_ND) ? a->ndim : 1;
    view->shape = (flags & PyBUF_ND) ? a->shape : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? a->strides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static PyBufferProcs float_array_buffer = {(getbufferproc)float_array_getbuffer, NULL};

static Py_ssize_t float_array_len(float_array *a) { return a->shape[0]; }

static PyObject *float_array_shape(float_array *a, void *closure)
{
    (void)closure;
    return a->ndim == 2 ? Py_BuildValue("(nn)", a->shape[0], a->shape[1])
                        : Py_BuildValue("(n)", a->shape[0]);
}

static PyObject *float_array_ndim(float_array *a, void *closure)
{
    (void)closure;
    return PyLong_FromLong(a->ndim);
}

static PyObject *float_array_tolist(float_array *a, PyObject *unused)
{
    (void)unused;
    if (a->ndim == 1) {
        PyObject *list = PyList_New(a->shape[0]);
        for (Py_ssize_t j = 0; list && j < a->shape[0]; j++) {
            PyObject *x = PyFloat_FromDouble((double)a->data[j]);
            if (!x) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, j, x);
        }
        return list;
    }
    PyObject *rows = PyList_New(a->shape[0]);
    for (Py_ssize_t i = 0; rows && i < a->shape[0]; i++) {
        PyObject *row = PyList_New(a->shape[1]);
        for (Py_ssize_t j = 0; row && j < a->shape[1]; j++) {
            PyObject *x = PyFloat_FromDouble((double)a->data[i * a->shape[1] + j]);
            if (!x) {
                Py_CLEAR(row);
                break;
            }
            PyList_SET_ITEM(row, j, x);
        }
        if (!row) {
            Py_CLEAR(rows);
            break;
        }
        PyList_SET_ITEM(rows, i, row);
    }
    return rows;
}

static PyObject *float_array_repr(float_array *a)
{
    return a->ndim == 2 ? PyUnicode_FromFormat("<tessera.FloatArray float32 (%zd, %zd)>",
                                               a->shape[0], a->shape[1])
                        : PyUnicode_FromFormat("<tessera.FloatArray float32 (%zd,)>", a->shape[0]);
}

static PyGetSetDef float_array_getset[] = {
    {"shape", (getter)float_array_shape, NULL, "(rows, d_model), or (d_model,) pooled", NULL},
    {"ndim", (getter)float_array_ndim, NULL, "2, or 1 pooled", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef float_array_methods[] = {
    {"tolist", (PyCFunction)float_array_tolist, METH_NOARGS,
     "The floats as (nested) lists of Python floats."},
    {NULL, NULL, 0, NULL}};

static PySequenceMethods float_array_sequence = {.sq_length = (lenfunc)float_array_len};

static PyTypeObject float_array_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tessera.FloatArray",
    .tp_basicsize = sizeof(float_array),
    .tp_dealloc = (destructor)float_array_dealloc,
    .tp_repr = (reprfunc)float_array_repr,
    .tp_as_sequence = &float_array_sequence,
    .tp_as_buffer = &float_array_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only float32 vectors of the encoder, row-major: numpy.asarray(a) and "
              "memoryview(a) read them without a copy.",
    .tp_methods = float_array_methods,
    .tp_getset = float_array_getset,
};

int tsr_py_results_init(PyObject *module)
{
    translation_result_type = PyStructSequence_NewType(&translation_desc);
    scoring_result_type = PyStructSequence_NewType(&scoring_desc);
    generation_step_type = PyStructSequence_NewType(&generation_step_desc);
    if (!translation_result_type || !scoring_result_type || !generation_step_type ||
        PyType_Ready(&float_array_type) < 0)
        return -1;
    if (PyModule_AddObjectRef(module, "TranslationResult", (PyObject *)translation_result_type) < 0 ||
        PyModule_AddObjectRef(module, "ScoringResult", (PyObject *)scoring_result_type) < 0 ||
        PyModule_AddObjectRef(module, "GenerationStepResult",
                              (PyObject *)generation_step_type) < 0 ||
        PyModule_AddObjectRef(module, "FloatArray", (PyObject *)&float_array_type) < 0)
        return -1;
    return 0;
}
