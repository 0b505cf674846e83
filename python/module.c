/* The Python module tessera: Translator, Encoder and their results, over
 * libtessera's public API (core/tessera.h) only. */
#include "python/classes.h"
#include "python/engine.h"
#include "python/results.h"

#include "core/tessera.h"

PyMODINIT_FUNC PyInit_tessera(void);

static struct PyModuleDef tessera_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tessera",
    .m_doc = "CPU inference for encoder-decoder Transformers: Translator (translate_batch,\n"
             "score_batch) and Encoder (encode_batch), as the tessera command computes them.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit_tessera(void)
{
    if (PyType_Ready(&tsr_py_model_type) < 0 || PyType_Ready(&tsr_py_translator_type) < 0 ||
        PyType_Ready(&tsr_py_encoder_type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&tessera_module);
    if (!m)
        return NULL;
    if (tsr_py_results_init(m) != 0 ||
        PyModule_AddObjectRef(m, "Model", (PyObject *)&tsr_py_model_type) < 0 ||
        PyModule_AddObjectRef(m, "Translator", (PyObject *)&tsr_py_translator_type) < 0 ||
        PyModule_AddObjectRef(m, "Encoder", (PyObject *)&tsr_py_encoder_type) < 0 ||
        PyModule_AddStringConstant(m, "__version__", tessera_version()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
