/* The objects calls return: TranslationResult and ScoringResult (named
 * tuples, as CTranslate2's results read: result.hypotheses, .scores,
 * .log_probs), GenerationStepResult (a streamed token), and FloatArray, the encoder's float32 vectors that numpy and
 * memoryview read through the buffer protocol without a copy. */
#ifndef TSR_PY_RESULTS_H
#define TSR_PY_RESULTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Makes the types and adds them to the module; 0, or -1 with an exception. */
int tsr_py_results_init(PyObject *module);

/* TranslationResult(hypotheses, scores, alignments); steals the references. */
PyObject *tsr_py_translation_result(PyObject *hypotheses, PyObject *scores, PyObject *alignments);

/* GenerationStepResult: one streamed token (translate_batch(callback=...)),
 * CTranslate2's fields; token NULL gives None. */
PyObject *tsr_py_generation_step(size_t batch_id, size_t step, int32_t token_id,
                                 const char *token, double log_prob);

/* ScoringResult(log_probs); steals the reference. */
PyObject *tsr_py_scoring_result(PyObject *log_probs);

/* A read-only float32 array of shape (rows, cols) (ndim 2) or (cols,)
 * (ndim 1) at data. owner (a new reference is taken; may be NULL) keeps
 * data alive; with own, the array frees data (PyMem_RawMalloc'd) itself. */
PyObject *tsr_py_float_array(PyObject *owner, float *data, int own, int ndim, Py_ssize_t rows,
                             Py_ssize_t cols);

#endif
