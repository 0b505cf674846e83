/* Unpacking an .argosmodel through libzip (core/model/argos/unzip.h). Only
 * the files a package's model needs are written, each created afresh
 * (O_EXCL) under the caller's empty directory, and no name may leave it. */
#include "core/model/argos/unzip.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "base/errors.h"
#include "base/memory.h"
#include "base/quote.h"

int tsr_unzip_available(void) { return 1; }

/* The package's folder in the zip: "" (metadata.json at the top) or "X/"
 * (X/metadata.json, X without a '/'). */
static int find_package(zip_t *z, char *prefix, size_t prefix_len, char *err, size_t err_len)
{
    zip_int64_t n = zip_get_num_entries(z, 0);
    for (zip_int64_t i = 0; i < n; i++) {
        const char *name = zip_get_name(z, (zip_uint64_t)i, 0);
        if (!name)
            continue;
        const char *slash = strchr(name, '/');
        const char *leaf = slash ? slash + 1 : name;
        if (strcmp(leaf, "metadata.json") != 0 || (size_t)(leaf - name) >= prefix_len)
            continue;
        snprintf(prefix, prefix_len, "%.*s", (int)(leaf - name), name);
        return 0;
    }
    return tsr_fail(err, err_len,
                    "no metadata.json at its top or in its one top folder: not an Argos "
                    "Translate package");
}

/* The part of the package a name is ("metadata.json", "model/model.bin",
 * ...), or NULL for what the model does not need. */
static const char *wanted(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0)
        return NULL;
    const char *rel = name + n;
    if (!strcmp(rel, "metadata.json") || !strcmp(rel, "sentencepiece.model") ||
        !strcmp(rel, "bpe.model"))
        return rel;
    if (strncmp(rel, "model/", 6) == 0 && rel[6] && !strchr(rel + 6, '/') &&
        strcmp(rel + 6, ".") != 0 && strcmp(rel + 6, "..") != 0)
        return rel;
    return NULL;
}

static int extract(zip_t *z, zip_uint64_t index, const char *name, const char *path,
                   zip_uint64_t size, char *err, size_t err_len)
{
    char quoted[TSR_QUOTE_LEN];
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return tsr_fail(err, err_len, "entry '%s': cannot create it: %s",
                        tsr_quote(quoted, sizeof quoted, name, '\''), strerror(errno));
    zip_file_t *zf = zip_fopen_index(z, index, 0);
    unsigned char *buf = tsr_malloc((size_t)1 << 20);
    int rc = 0;
    zip_uint64_t done = 0;
    if (!zf || !buf)
        rc = zf ? tsr_fail_oom(err, err_len, "out of memory unpacking the package")
                : tsr_fail(err, err_len, "entry '%s': %s",
                           tsr_quote(quoted, sizeof quoted, name, '\''), zip_strerror(z));
    while (rc == 0) {
        zip_int64_t got = zip_fread(zf, buf, (zip_uint64_t)1 << 20);
        if (got < 0) {
            rc = tsr_fail(err, err_len, "entry '%s': %s",
                          tsr_quote(quoted, sizeof quoted, name, '\''), zip_file_strerror(zf));
            break;
        }
        if (got == 0)
            break;
        for (zip_int64_t off = 0; off < got && rc == 0;) {
            ssize_t w = write(fd, buf + off, (size_t)(got - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                rc = tsr_fail(err, err_len, "entry '%s': cannot write it: %s",
                              tsr_quote(quoted, sizeof quoted, name, '\''), strerror(errno));
            else
                off += w;
        }
        done += (zip_uint64_t)got;
    }
    if (rc == 0 && done != size)
        rc = tsr_fail(err, err_len, "entry '%s': %llu bytes, the directory says %llu",
                      tsr_quote(quoted, sizeof quoted, name, '\''), (unsigned long long)done,
                      (unsigned long long)size);
    tsr_free(buf);
    if (zf)
        zip_fclose(zf);
    if (close(fd) != 0 && rc == 0)
        rc = tsr_fail(err, err_len, "entry '%s': cannot write it: %s",
                      tsr_quote(quoted, sizeof quoted, name, '\''), strerror(errno));
    return rc;
}

static int unpack(zip_t *z, const char *dir, size_t max_bytes, char *err, size_t err_len)
{
    char prefix[512];
    TSR_TRY(find_package(z, prefix, sizeof prefix, err, err_len));
    char path[4400];
    snprintf(path, sizeof path, "%s/model", dir);
    if (mkdir(path, 0700) != 0)
        return tsr_fail(err, err_len, "%s: %s", path, strerror(errno));
    zip_uint64_t total = 0;
    zip_int64_t n = zip_get_num_entries(z, 0);
    for (zip_int64_t i = 0; i < n; i++) {
        const char *name = zip_get_name(z, (zip_uint64_t)i, 0);
        const char *rel = name ? wanted(name, prefix) : NULL;
        if (!rel)
            continue;
        zip_stat_t st;
        char quoted[TSR_QUOTE_LEN];
        if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
            return tsr_fail(err, err_len, "entry '%s': no size",
                            tsr_quote(quoted, sizeof quoted, name, '\''));
        if (st.size > max_bytes || total > max_bytes - st.size)
            return tsr_fail(err, err_len, "entry '%s': the package's files pass %zu bytes",
                            tsr_quote(quoted, sizeof quoted, name, '\''), max_bytes);
        total += st.size;
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        TSR_TRY(extract(z, (zip_uint64_t)i, name, path, st.size, err, err_len));
    }
    return 0;
}

int tsr_unzip_package(const char *zip_path, const char *dir, size_t max_bytes, char *err,
                      size_t err_len)
{
    int code;
    zip_t *z = zip_open(zip_path, ZIP_RDONLY, &code);
    if (!z) {
        zip_error_t e;
        zip_error_init_with_code(&e, code);
        int rc = tsr_fail(err, err_len, "not a zip archive it can read: %s",
                          zip_error_strerror(&e));
        zip_error_fini(&e);
        return rc;
    }
    int rc = unpack(z, dir, max_bytes, err, err_len);
    zip_discard(z);
    return rc;
}
