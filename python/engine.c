/* A loaded model and the workers that share it (python/engine.h). */
#include "python/engine.h"

#include <string.h>
#include <unistd.h>

#include "python/errors.h"

static const char *const vocab_files[2] = {"vocab.src.txt", "vocab.tgt.txt"};

static int make_runtimes(tsr_py_engine *e, int workers, int threads, size_t max_memory,
                         char *err, size_t err_len)
{
    e->runtimes = PyMem_RawCalloc((size_t)workers, sizeof *e->runtimes);
    e->idle = PyMem_RawCalloc((size_t)workers, sizeof *e->idle);
    if (!e->runtimes || !e->idle) {
        snprintf(err, err_len, "out of memory for %d workers", workers);
        return TESSERA_ERR_NOMEM;
    }
    for (; e->n_runtimes < workers; e->n_runtimes++) {
        tessera_runtime_options o;
        tessera_runtime_options_init(&o);
        o.threads = threads;
        o.workers = workers;
        o.worker = e->n_runtimes;
        o.max_memory = max_memory;
        int rc = tessera_runtime_create(&o, &e->runtimes[e->n_runtimes], err, err_len);
        if (rc != 0)
            return rc;
        e->idle[e->n_idle++] = e->n_runtimes;
    }
    return 0;
}

/* The vocabularies pieces need, when the model holds none: its directory's
 * files, when it has them (a model without them reads ids only). */
static int load_vocabularies(tsr_py_engine *e, const char *dir, char *err, size_t err_len)
{
    for (int s = 0; s < 2; s++) {
        e->vocab[s] = tessera_model_vocabulary(e->model, (tessera_side)s);
        if (e->vocab[s])
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, vocab_files[s]);
        if (access(path, R_OK) != 0)
            continue;
        size_t size = (size_t)(s ? e->cfg->tgt_vocab_size : e->cfg->src_vocab_size);
        int rc = tessera_vocabulary_load(path, size, &e->owned_vocab[s], err, err_len);
        if (rc != 0)
            return rc;
        e->vocab[s] = e->owned_vocab[s];
    }
    return 0;
}

int tsr_py_engine_open(tsr_py_engine *e, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"model", "compute_type", "workers", "threads", "max_memory", NULL};
    PyObject *path = NULL, *max_memory_obj = Py_None;
    const char *compute_type = "f32";
    int workers = 1, threads = 0;
    memset(e, 0, sizeof *e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|$siiO:tessera model", keywords,
                                     PyUnicode_FSConverter, &path, &compute_type, &workers,
                                     &threads, &max_memory_obj))
        return -1;
    size_t max_memory = 0;
    tessera_load_options load;
    tessera_load_options_init(&load);
    char err[TSR_PY_ERR_LEN];
    if (max_memory_obj != Py_None) {
        max_memory = PyLong_AsSize_t(max_memory_obj);
        if (max_memory == (size_t)-1 && PyErr_Occurred()) {
            Py_DECREF(path);
            PyErr_SetString(PyExc_ValueError, "max_memory: bytes, a whole number >= 0, or None");
            return -1;
        }
    }
    if (workers < 1 || workers > 256) {
        Py_DECREF(path);
        PyErr_Format(PyExc_ValueError, "workers %d: must be between 1 and 256", workers);
        return -1;
    }
    if (strcmp(compute_type, "default") == 0)
        load.compute_type = TESSERA_COMPUTE_DEFAULT;
    else if (tessera_compute_type_parse(compute_type, &load.compute_type, err, sizeof err) != 0) {
        Py_DECREF(path);
        tsr_py_raise(TESSERA_ERR_INPUT, err);
        return -1;
    }
    load.threads = threads;
    const char *dir = PyBytes_AS_STRING(path);
    int rc, reading_files = 0;
    Py_BEGIN_ALLOW_THREADS
    /* The runtimes first, as the command: a bad thread count is reported
     * before the model is read. */
    rc = make_runtimes(e, workers, threads, max_memory, err, sizeof err);
    if (rc == 0) {
        reading_files = 1;
        rc = tessera_model_load_with(dir, &load, &e->model, err, sizeof err);
    }
    if (rc == 0) {
        e->cfg = tessera_model_config(e->model);
        rc = load_vocabularies(e, dir, err, sizeof err);
    }
    Py_END_ALLOW_THREADS
    if (rc == 0 && (pthread_mutex_init(&e->lock, NULL) != 0 ||
                    pthread_cond_init(&e->freed, NULL) != 0)) {
        rc = TESSERA_ERR_INTERNAL;
        reading_files = 0;
        snprintf(err, sizeof err, "cannot make the workers' lock");
    }
    if (rc != 0) {
        if (reading_files)
            tsr_py_raise_load(rc, err, dir);
        else
            tsr_py_raise(rc, err);
        Py_DECREF(path);
        tsr_py_engine_close(e);
        return -1;
    }
    e->sync_made = 1;
    Py_DECREF(path);
    return 0;
}

void tsr_py_engine_close(tsr_py_engine *e)
{
    for (int i = 0; i < e->n_runtimes; i++)
        tessera_runtime_free(e->runtimes[i]);
    PyMem_RawFree(e->runtimes);
    PyMem_RawFree(e->idle);
    tessera_vocabulary_free(e->owned_vocab[0]);
    tessera_vocabulary_free(e->owned_vocab[1]);
    tessera_shortlist_free(e->shortlist);
    tessera_shortlist_free(e->dir_vmap);
    tessera_model_free(e->model);
    if (e->sync_made) {
        pthread_cond_destroy(&e->freed);
        pthread_mutex_destroy(&e->lock);
    }
    memset(e, 0, sizeof *e);
}

tessera_runtime *tsr_py_engine_acquire(tsr_py_engine *e)
{
    pthread_mutex_lock(&e->lock);
    while (e->n_idle == 0)
        pthread_cond_wait(&e->freed, &e->lock);
    tessera_runtime *rt = e->runtimes[e->idle[--e->n_idle]];
    pthread_mutex_unlock(&e->lock);
    return rt;
}

void tsr_py_engine_release(tsr_py_engine *e, tessera_runtime *rt)
{
    pthread_mutex_lock(&e->lock);
    for (int i = 0; i < e->n_runtimes; i++)
        if (e->runtimes[i] == rt)
            e->idle[e->n_idle++] = i;
    pthread_cond_signal(&e->freed);
    pthread_mutex_unlock(&e->lock);
}

/* ---- tessera.Model ---------------------------------------------------------- */

static PyObject *model_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    tsr_py_model *self = (tsr_py_model *)type->tp_alloc(type, 0);
    if (self && tsr_py_engine_open(&self->e, args, kwargs) != 0)
        Py_CLEAR(self);
    return (PyObject *)self;
}

static void model_dealloc(tsr_py_model *self)
{
    tsr_py_engine_close(&self->e);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *model_compute_type(tsr_py_model *self, void *closure)
{
    (void)closure;
    tessera_compute_type type = tessera_model_compute_type(self->e.model);
    return PyUnicode_FromString(tessera_compute_type_name(type));
}

static PyObject *model_workers(tsr_py_model *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->e.n_runtimes);
}

static PyObject *model_d_model(tsr_py_model *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->e.cfg->d_model);
}

static PyGetSetDef model_getset[] = {
    {"compute_type", (getter)model_compute_type, NULL,
     "How the model holds its weights: 'f32', 'bf16' or 'int8'.", NULL},
    {"workers", (getter)model_workers, NULL,
     "How many calls compute at once (CTranslate2's num_translators).", NULL},
    {"d_model", (getter)model_d_model, NULL, "The model's width: an encoder vector's floats.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject tsr_py_model_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tessera.Model",
    .tp_basicsize = sizeof(tsr_py_model),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Model(model, compute_type='f32', workers=1, threads=0, max_memory=None)\n\n"
              "A loaded model and its workers: the base of Translator and Encoder.",
    .tp_getset = model_getset,
    .tp_new = model_new,
};
