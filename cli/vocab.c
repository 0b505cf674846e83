#include "cli/vocab.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/line_reader.h"


struct cli_vocab {
    char **tokens;  /* [size] */
    size_t size;
    int32_t *slots; /* open addressing: id + 1, 0 for empty */
    size_t n_slots; /* a power of two, at least 2 * size */
};

static uint64_t hash(const char *s, size_t len) /* FNV-1a */
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

int32_t cli_vocab_find(const cli_vocab *v, const char *token, size_t len)
{
    for (size_t i = hash(token, len) & (v->n_slots - 1);; i = (i + 1) & (v->n_slots - 1)) {
        int32_t id = v->slots[i] - 1;
        if (id < 0)
            return -1;
        if (strlen(v->tokens[id]) == len && memcmp(v->tokens[id], token, len) == 0)
            return id;
    }
}

const char *cli_vocab_token(const cli_vocab *v, int32_t id) { return v->tokens[id]; }

static void index_tokens(cli_vocab *v)
{
    for (size_t id = 0; id < v->size; id++) {
        size_t len = strlen(v->tokens[id]);
        if (cli_vocab_find(v, v->tokens[id], len) >= 0)
            continue; /* a duplicate: the first line keeps the token */
        size_t i = hash(v->tokens[id], len) & (v->n_slots - 1);
        while (v->slots[i])
            i = (i + 1) & (v->n_slots - 1);
        v->slots[i] = (int32_t)id + 1;
    }
}

/* The vocabulary file for reading, refused at once when it is not a regular
 * file: a FIFO would make a plain open wait for a writer forever, a
 * directory would read as an error later. NULL with the message in err. */
static FILE *open_vocab_file(const char *path, char *err, size_t err_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    const char *why = NULL;
    if (fd < 0)
        why = strerror(errno);
    else if (fstat(fd, &sb) != 0)
        why = strerror(errno);
    else if (S_ISDIR(sb.st_mode))
        why = "is a directory";
    else if (S_ISFIFO(sb.st_mode))
        why = "not a regular file (a FIFO)";
    else if (S_ISSOCK(sb.st_mode))
        why = "not a regular file (a socket)";
    else if (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode))
        why = "not a regular file (a device)";
    else if (!S_ISREG(sb.st_mode))
        why = "not a regular file (of an unknown type)";
    FILE *f = why ? NULL : fdopen(fd, "r");
    if (!f && !why)
        why = strerror(errno);
    if (!f) {
        if (fd >= 0)
            close(fd);
        cli_fail(err, err_len, "%s: cannot open (needed by --tokens): %s", path, why);
    }
    return f;
}

cli_vocab *cli_vocab_load(const char *path, size_t size, char *err, size_t err_len)
{
    FILE *f = open_vocab_file(path, err, err_len);
    if (!f)
        return NULL;
    cli_vocab *v = calloc(1, sizeof *v);
    if (v) {
        v->size = size;
        v->tokens = calloc(size + 1, sizeof *v->tokens);
    }
    char *line = NULL;
    size_t cap = 0, lines = 0;
    ssize_t n;
    int failed = !v || !v->tokens, read_error = 0;
    while (!failed) {
        errno = 0;
        if ((n = getline(&line, &cap, f)) < 0) {
            int e = errno;
            if (cli_read_failed(f, e))
                read_error = e ? e : EIO;
            break;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (lines < size && !(v->tokens[lines] = strdup(line)))
            failed = 1;
        lines++;
    }
    free(line);
    fclose(f);
    if (!failed && read_error) {
        cli_fail(err, err_len, "%s: cannot read line %zu: %s", path, lines + 1,
                 strerror(read_error));
        cli_vocab_free(v);
        return NULL;
    }
    if (!failed && lines != size) {
        cli_fail(err, err_len, "%s: %zu tokens, but the model's vocabulary has %zu", path, lines,
                 size);
        cli_vocab_free(v);
        return NULL;
    }
    if (!failed) {
        for (v->n_slots = 16; v->n_slots < 2 * size; v->n_slots *= 2)
            ;
        v->slots = calloc(v->n_slots, sizeof *v->slots);
        failed = !v->slots;
    }
    if (failed) {
        cli_fail(err, err_len, "%s: out of memory", path);
        cli_vocab_free(v);
        return NULL;
    }
    index_tokens(v);
    return v;
}

void cli_vocab_free(cli_vocab *v)
{
    if (!v)
        return;
    if (v->tokens)
        for (size_t i = 0; i < v->size; i++)
            free(v->tokens[i]);
    free(v->tokens);
    free(v->slots);
    free(v);
}
