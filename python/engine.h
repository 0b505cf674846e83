/* What a Translator or an Encoder holds: one loaded model and its workers,
 * runtimes that share it (as the command's --workers, cli/workers.c). A
 * call takes a free worker, waiting for one when all are busy, and gives it
 * back: any number of Python threads may call at once, N of them compute. */
#ifndef TSR_PY_ENGINE_H
#define TSR_PY_ENGINE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>

#include "core/tessera.h"

typedef struct tsr_py_engine {
    tessera_model *model;
    const tessera_config *cfg;
    tessera_runtime **runtimes;
    int n_runtimes;
    int *idle;  /* indices of the free runtimes, n_idle of them */
    int n_idle;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    int sync_made;
    /* Each side's vocabulary, for pieces: the model's own, else the model
     * directory's vocab.src.txt / vocab.tgt.txt when present (owned); NULL
     * when neither. */
    const tessera_vocabulary *vocab[2];
    tessera_vocabulary *owned_vocab[2];
    /* A Translator's vocabulary shortlists (python/translator.c): the one
     * its constructor named, used by every call, and the model directory's
     * vmap.txt when it has one, for use_vmap=True; NULL when none. A
     * directory's vmap.txt that cannot be read does not stop the
     * constructor: its message waits here for a call with use_vmap=True. */
    tessera_shortlist *shortlist, *dir_vmap;
    char dir_vmap_error[512];
} tsr_py_engine;

/* The arguments both classes take: (model, compute_type="f32", workers=1,
 * threads=0, max_memory=None). Loads the model (the GIL released) and makes
 * the workers. 0, or -1 with a Python exception set (the engine then holds
 * nothing). */
int tsr_py_engine_open(tsr_py_engine *e, PyObject *args, PyObject *kwargs);

/* Releases what the engine holds; safe on a zeroed or failed engine. No call
 * may be running (the object's last reference is gone). */
void tsr_py_engine_close(tsr_py_engine *e);

/* A free worker's runtime, waiting until one is; call without the GIL. */
tessera_runtime *tsr_py_engine_acquire(tsr_py_engine *e);
void tsr_py_engine_release(tsr_py_engine *e, tessera_runtime *rt);

/* tessera.Model, the base of Translator and Encoder: an object holding an
 * engine, made from the arguments tsr_py_engine_open takes, with the
 * properties both classes have (compute_type, workers, d_model). */
typedef struct tsr_py_model {
    PyObject_HEAD
    tsr_py_engine e;
} tsr_py_model;

extern PyTypeObject tsr_py_model_type;

#endif
