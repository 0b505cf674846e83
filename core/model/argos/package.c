/* Argos Translate packages (core/model/argos/package.h). */
#include "core/model/argos/package.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/json_kind.h"
#include "base/memory.h"
#include "base/quote.h"
#include "core/model/argos/unzip.h"
#include "core/model/ctranslate2/load.h"
#include "core/model/model.h"
#include "text/spm.h"
#include "text/tokenizer.h"

/* The most an unpacked package may take (NLLB-3.3B in float16 is 6.6 GB). */
#define PACKAGE_MAX_BYTES ((size_t)32 << 30)
/* Larger than any SentencePiece model. */
#define SPM_FILE_MAX ((off_t)256 << 20)

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int exists(const char *dir, const char *name)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

int tsr_argos_is_package(const char *path)
{
    char inner[4400];
    if (is_dir(path)) {
        snprintf(inner, sizeof inner, "%s/model", path);
        return exists(path, "metadata.json") && is_dir(inner);
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    unsigned char magic[4] = {0};
    int zip = fd >= 0 && read(fd, magic, 4) == 4 && !memcmp(magic, "PK\3\4", 4);
    if (fd >= 0)
        close(fd);
    return zip;
}

/* metadata.json: an object; a target_prefix (forced first target tokens)
 * is refused until tessera runs one. */
static int read_metadata(const char *dir, char *err, size_t err_len)
{
    char path[4400], *bytes, why[4 * JSON_ERROR_TEXT_LENGTH + 4], quoted[TSR_QUOTE_LEN];
    size_t len;
    snprintf(path, sizeof path, "%s/metadata.json", dir);
    TSR_TRY(tsr_read_regular(path, (off_t)16 << 20, &bytes, &len, err, err_len));
    json_error_t jerr;
    json_t *root = json_loadb(bytes, len, 0, &jerr);
    tsr_free(bytes);
    if (!root)
        return tsr_fail(err, err_len, "metadata.json: line %d: %s", jerr.line,
                        tsr_quote(why, sizeof why, jerr.text, 0));
    int rc = 0;
    const json_t *prefix = json_object_get(root, "target_prefix");
    if (!json_is_object(root))
        rc = tsr_fail(err, err_len, "metadata.json: expected an object, got %s",
                      tsr_json_kind(root));
    else if (prefix && !json_is_null(prefix) && !json_is_string(prefix))
        rc = tsr_fail(err, err_len, "metadata.json: key 'target_prefix': expected a string, got %s",
                      tsr_json_kind(prefix));
    else if (json_is_string(prefix) && json_string_length(prefix) > 0)
        rc = tsr_fail(err, err_len,
                      "metadata.json: target_prefix '%s' (tokens forced before every "
                      "translation), which tessera does not run yet",
                      tsr_quote(quoted, sizeof quoted, json_string_value(prefix), '\''));
    json_decref(root);
    return rc;
}

static int check_tokenizer(const char *dir, char *err, size_t err_len)
{
    if (exists(dir, "sentencepiece.model"))
        return 0;
    if (exists(dir, "bpe.model"))
        return tsr_fail(err, err_len,
                        "bpe.model: a BPE tokenizer, which tessera does not read (it reads "
                        "packages with sentencepiece.model)");
    return tsr_fail(err, err_len, "sentencepiece.model: missing");
}

/* The package's SentencePiece model on both sides, through the shared
 * vocabulary the model already holds. */
static int attach_tokenizer(tessera_model *m, const char *dir, char *err, size_t err_len)
{
    tessera_config *cfg = &m->cfg;
    snprintf(cfg->source_tokenizer, sizeof cfg->source_tokenizer, "sentencepiece.model");
    snprintf(cfg->target_tokenizer, sizeof cfg->target_tokenizer, "sentencepiece.model");
    snprintf(cfg->family, sizeof cfg->family, "argos");
    tsr_model_text *t = m->text;
    if (!t || !t->side[0].vocab)
        return tsr_fail_internal(err, err_len, "the package's model has no vocabulary");
    for (int s = 0; s < 2; s++)
        t->side[s].file = "sentencepiece.model";
    if (!tsr_spm_available())
        return 0; /* ids and pieces still */
    char path[4400], *bytes;
    size_t len;
    snprintf(path, sizeof path, "%s/sentencepiece.model", dir);
    TSR_TRY(tsr_read_regular(path, SPM_FILE_MAX, &bytes, &len, err, err_len));
    int rc = tsr_spm_load("sentencepiece.model", bytes, len, &t->owned[0], err, err_len);
    tsr_free(bytes);
    TSR_TRY(rc);
    t->side[0].spm = t->side[1].spm = t->owned[0];
    return 0;
}

static int load_folder(const char *dir, const tessera_load_options *options,
                       tessera_model **model, char *err, size_t err_len)
{
    char inner[4400];
    TSR_TRY(read_metadata(dir, err, err_len));
    TSR_TRY(check_tokenizer(dir, err, err_len));
    snprintf(inner, sizeof inner, "%s/model", dir);
    TSR_TRY(tsr_ct2_model_load(inner, options, model, err, err_len));
    int rc = attach_tokenizer(*model, dir, err, err_len);
    if (rc != 0) {
        tessera_model_free(*model);
        *model = NULL;
    }
    return rc;
}

/* Removes what tsr_unzip_package wrote: dir/model's files, dir's, both. */
static void remove_unpacked(const char *dir)
{
    char sub[4400];
    snprintf(sub, sizeof sub, "%s/model", dir);
    const char *dirs[2] = {sub, dir};
    for (int d = 0; d < 2; d++) {
        DIR *h = opendir(dirs[d]);
        struct dirent *e;
        while (h && (e = readdir(h))) {
            char path[4700];
            snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !is_dir(path))
                unlink(path);
        }
        if (h)
            closedir(h);
        rmdir(dirs[d]);
    }
}

/* A zip: unpacked, loaded, removed; messages name the zip, not the
 * temporary directory. */
static int load_zip(const char *path, const tessera_load_options *options,
                    tessera_model **model, char *err, size_t err_len)
{
    if (!tsr_unzip_available())
        return tsr_unzip_package(path, NULL, 0, err, err_len);
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tessera-argos.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return tsr_fail(err, err_len, "cannot make a directory to unpack it in (%s): %s", dir,
                        strerror(errno));
    char why[2048];
    int rc = tsr_unzip_package(path, dir, PACKAGE_MAX_BYTES, why, sizeof why);
    if (rc == 0)
        rc = load_folder(dir, options, model, why, sizeof why);
    remove_unpacked(dir);
    if (rc != 0) {
        size_t n = strlen(dir);
        const char *rest = strncmp(why, dir, n) == 0 ? why + n + (why[n] == '/') : why;
        tsr_fail(err, err_len, "%s", rest);
    }
    return rc;
}

int tsr_argos_package_load(const char *path, const tessera_load_options *options,
                           tessera_model **model, char *err, size_t err_len)
{
    *model = NULL;
    int rc = is_dir(path) ? load_folder(path, options, model, err, err_len)
                          : load_zip(path, options, model, err, err_len);
    return rc != 0 && strncmp(err, path, strlen(path)) != 0
               ? tsr_fail_prefix(rc, err, err_len, path)
               : rc;
}
