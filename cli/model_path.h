/* Where -m finds a model: a directory path, or the name of an installed model.
 * Part of the tessera command, not of the library. */
#ifndef TSR_CLI_MODEL_PATH_H
#define TSR_CLI_MODEL_PATH_H

#include <stddef.h>

/* The directory installed models live in, $(datadir)/tessera/models as
 * configured (a static string). */
const char *cli_models_dir(void);

/* Resolves the argument of -m: `arg` itself when it is an existing directory
 * (or names a path, i.e. holds a '/', in which case the loader reports what is
 * wrong with it); otherwise the first directory `arg` found in the
 * colon-separated directories of TESSERA_MODELS_PATH, then in
 * cli_models_dir(). Writes the directory to out and returns 0; returns -1
 * with a one-line message naming `arg` and every place searched in err.
 * Reads the environment: not thread-safe against setenv. */
int cli_model_path_resolve(const char *arg, char *out, size_t out_len, char *err, size_t err_len);

/* Writes the names of the models installed in dir (its subdirectories that
 * hold a config.json), sorted and separated by ", ", or "none" when there are
 * none or dir is absent. */
void cli_model_names(const char *dir, char *out, size_t out_len);

#endif
