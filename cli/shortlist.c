/* The command's vocabulary shortlists (translate, serve): --vmap FILE,
 * --use-vmap (a CTranslate2 directory's vmap.txt, as CTranslate2's
 * use_vmap) and --shortlist FILE with Marian's three numbers. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

void cli_usage_shortlist(FILE *f)
{
    fprintf(f,
            "\n"
            "Vocabulary shortlists (README \"Vocabulary shortlists\"): each sentence chooses\n"
            "among its own candidates, the softmax over them alone; faster with a large\n"
            "vocabulary. Give one of:\n"
            "  --vmap FILE             CTranslate2's vocabulary map ('<source n-gram><TAB>\n"
            "                          <target pieces>' lines)\n"
            "  --use-vmap              the model directory's vmap.txt (CTranslate2's use_vmap)\n"
            "  --shortlist FILE        a Marian lexical shortlist: text ('<target> <source>\n"
            "                          <probability>' lines, lex.s2t) or binary (lex.*.bin)\n"
            "  --shortlist-first N     text: target ids 0..N-1 are always candidates (100)\n"
            "  --shortlist-best N      text: each source word's N most probable targets (100)\n"
            "  --shortlist-threshold P text: only targets of probability above P (0)\n"
            "A binary shortlist holds its own counts: give none of the three.\n");
}

/* The flags' file and which reader it takes; NULL when none is named. */
static const char *named_file(const cli_options *o, const cli_model *cm, char *path, size_t size,
                              int *vmap)
{
    *vmap = o->vmap || o->use_vmap;
    if (o->use_vmap) {
        snprintf(path, size, "%s/vmap.txt", cm->dir);
        return path;
    }
    return o->vmap ? o->vmap : o->shortlist;
}

int cli_model_open_shortlist(const char *cmd, const cli_options *o, cli_model *cm,
                             tessera_translate_options *t)
{
    int given = (o->vmap != NULL) + o->use_vmap + (o->shortlist != NULL), vmap;
    int counts = o->shortlist_first != TESSERA_SHORTLIST_DEFAULT_COUNT ||
                 o->shortlist_best != TESSERA_SHORTLIST_DEFAULT_COUNT ||
                 o->shortlist_threshold_given;
    if (given > 1)
        return cli_error("%s: --vmap, --use-vmap and --shortlist: give one of them", cmd);
    if (counts && !o->shortlist)
        return cli_error("%s: --shortlist-first, --shortlist-best and --shortlist-threshold "
                         "need --shortlist FILE", cmd);
    char path[sizeof cm->dir + 16], err[1024];
    const char *file = named_file(o, cm, path, sizeof path, &vmap);
    if (!file)
        return 0;
    struct stat st;
    if (o->use_vmap && stat(cm->dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return cli_error("%s: --use-vmap: %s is a package, not a model directory; it has no "
                         "vmap.txt (give --vmap FILE)", cmd, cm->dir);
    if (o->use_vmap && access(file, F_OK) != 0)
        return cli_error("%s: --use-vmap: the model directory %s has no vmap.txt", cmd, cm->dir);
    /* The pieces' vocabularies (loaded for lines of pieces already, or now
     * for the shortlist alone: lines of ids stay ids, cli/input.c). */
    if (!cm->src_vocab && cli_model_load_vocabularies(cm, vmap ? "--vmap" : "--shortlist", err,
                                                      sizeof err) != 0)
        return cli_error("%s: %s", cmd, err);
    int rc = vmap ? tessera_shortlist_load_vmap(cm->model, cm->src_vocab, cm->tgt_vocab, file,
                                                &cm->shortlist, err, sizeof err)
                  : tessera_shortlist_load_lexical(cm->model, cm->src_vocab, cm->tgt_vocab, file,
                                                   o->shortlist_first, o->shortlist_best,
                                                   o->shortlist_threshold, &cm->shortlist, err,
                                                   sizeof err);
    if (rc != 0)
        return cli_error("%s: %s", cmd, err);
    t->shortlist = cm->shortlist;
    return 0;
}
