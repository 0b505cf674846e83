/* tessera's failures as Python exceptions. Each carries tessera's one-line
 * message as its only argument, so str(exception) is that message. */
#ifndef TSR_PY_ERRORS_H
#define TSR_PY_ERRORS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The message buffers the module hands to the library. */
#define TSR_PY_ERR_LEN 1024

/* Raises the exception for a call's status (a tessera_status):
 * TESSERA_ERR_INPUT -> ValueError, TESSERA_ERR_NOMEM -> MemoryError, any
 * other -> RuntimeError. Returns NULL, for `return tsr_py_raise(...)`. */
PyObject *tsr_py_raise(int status, const char *message);

/* tsr_py_raise for a message of translate's, with the decoding options it
 * names (the library's field names) put as translate_batch's keywords:
 * "beam: 0 is out of range" becomes "beam_size: 0 is out of range". */
PyObject *tsr_py_raise_options(int status, const char *message);

/* Raises the exception for a model that did not load from dir: MemoryError
 * for TESSERA_ERR_NOMEM, else OSError (FileNotFoundError when dir or its
 * config.json is missing), the model's files being what failed. */
PyObject *tsr_py_raise_load(int status, const char *message, const char *dir);

#endif
