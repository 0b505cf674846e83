/* -m DIR|NAME: a model directory given by path, or an installed model found by
 * name in TESSERA_MODELS_PATH and then in the directory `make install` fills. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/model_path.h"

/* Makefile.am passes $(datadir)/tessera/models to this file alone. */
#ifndef TSR_MODELS_DIR
#error "TSR_MODELS_DIR (the installed models directory) must be defined"
#endif

const char *cli_models_dir(void) { return TSR_MODELS_DIR; }

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Appends text to the message being built in buf (truncating quietly). */
static void append(char *buf, size_t len, const char *text)
{
    size_t used = strlen(buf);
    if (used + 1 < len)
        snprintf(buf + used, len - used, "%s", text);
}

/* Looks for name in dir (dir_len bytes, trailing '/' ignored); on a hit writes
 * DIR/NAME to out. Adds dir to the list of places searched either way. */
static int look_in(const char *dir, size_t dir_len, const char *name, char *out, size_t out_len,
                   char *searched, size_t searched_len)
{
    while (dir_len > 1 && dir[dir_len - 1] == '/')
        dir_len--;
    int n = snprintf(out, out_len, "%.*s/%s", (int)dir_len, dir, name);
    if (n > 0 && (size_t)n < out_len && *name && is_dir(out))
        return 1;
    size_t used = strlen(searched);
    if (used + 1 < searched_len)
        snprintf(searched + used, searched_len - used, "%s%.*s", used ? ", " : "", (int)dir_len,
                 dir);
    return 0;
}

int cli_model_path_resolve(const char *arg, char *out, size_t out_len, char *err, size_t err_len)
{
    struct stat st;
    /* A directory, a path, or a file here (an .argosmodel package). */
    if (is_dir(arg) || strchr(arg, '/') || (stat(arg, &st) == 0 && S_ISREG(st.st_mode))) {
        if (strlen(arg) >= out_len) {
            snprintf(err, err_len, "model '%s': path too long", arg);
            return -1;
        }
        strcpy(out, arg);
        return 0;
    }
    char searched[2048] = "";
    const char *path = getenv("TESSERA_MODELS_PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t len = strcspn(p, ":");
        if (len > 0 && look_in(p, len, arg, out, out_len, searched, sizeof searched))
            return 0;
        p += len;
        p += *p == ':';
    }
    if (*searched)
        append(searched, sizeof searched, " (TESSERA_MODELS_PATH)");
    const char *installed = cli_models_dir();
    if (look_in(installed, strlen(installed), arg, out, out_len, searched, sizeof searched))
        return 0;
    snprintf(err, err_len,
             "model '%s': no such directory, and no installed model of that name in %s", arg,
             searched);
    return -1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void cli_model_names(const char *dir, char *out, size_t out_len)
{
    char **names = NULL, path[4096];
    size_t n = 0, cap = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        int len = snprintf(path, sizeof path, "%s/%s/config.json", dir, e->d_name);
        if (len < 0 || (size_t)len >= sizeof path || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            char **grown = realloc(names, (cap = cap ? 2 * cap : 8) * sizeof *names);
            if (!grown)
                break;
            names = grown;
        }
        if ((names[n] = strdup(e->d_name)) != NULL)
            n++;
    }
    if (d)
        closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, by_name);
    snprintf(out, out_len, "%s", n ? "" : "none");
    for (size_t i = 0; i < n; i++) {
        append(out, out_len, i ? ", " : "");
        append(out, out_len, names[i]);
        free(names[i]);
    }
    free(names);
}
