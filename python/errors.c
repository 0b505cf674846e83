/* tessera's failures as Python exceptions (python/errors.h). */
#include "python/errors.h"

#include <sys/stat.h>

#include "core/tessera.h"

PyObject *tsr_py_raise(int status, const char *message)
{
    PyObject *type = status == TESSERA_ERR_INPUT   ? PyExc_ValueError
                     : status == TESSERA_ERR_NOMEM ? PyExc_MemoryError
                                                   : PyExc_RuntimeError;
    PyErr_SetString(type, message);
    return NULL;
}

PyObject *tsr_py_raise_load(int status, const char *message, const char *dir)
{
    if (status == TESSERA_ERR_NOMEM)
        return tsr_py_raise(status, message);
    /* The message alone, so that str(exception) is tessera's line. */
    char config[4096];
    struct stat st;
    snprintf(config, sizeof config, "%s/config.json", dir);
    int missing = stat(dir, &st) != 0 || stat(config, &st) != 0;
    PyErr_SetString(missing ? PyExc_FileNotFoundError : PyExc_OSError, message);
    return NULL;
}
