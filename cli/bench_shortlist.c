/* tessera bench --shortlist N: a synthetic vocabulary shortlist for the
 * model, about N candidates per sentence of --src-len tokens, read through
 * the public call as a real one is (tessera_shortlist_load_vmap), from files
 * written into a temporary directory and removed at once. Half of the
 * candidates are fixed (CTranslate2's maps list the frequent words on their
 * empty n-gram's line), the rest the targets of each source id, scattered
 * over the vocabulary as a real map's are. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"

/* A vocabulary of `size` pieces "p0".. into dir/name. */
static int write_vocabulary(const char *dir, const char *name, int size, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (int i = 0; i < size; i++)
        fprintf(f, "p%d\n", i);
    return fclose(f);
}

/* Target j of source id s: a multiplicative hash, spread over the vocabulary. */
static int target_of(int s, int j, int vocab)
{
    return (int)(((uint64_t)(unsigned)s * 2654435761u + (uint64_t)(unsigned)j * 40503u) %
                 (uint64_t)vocab);
}

static int write_vmap(const tessera_config *c, int per_sentence, int src_len, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int fixed = per_sentence / 2, each = (per_sentence - fixed) / (src_len > 0 ? src_len : 1);
    each = each < 1 ? 1 : each;
    fputc('\t', f);
    for (int i = 0; i < fixed; i++)
        fprintf(f, i ? " p%d" : "p%d", (int)((long)i * c->tgt_vocab_size / fixed));
    fputc('\n', f);
    for (int s = 0; s < c->src_vocab_size; s++) {
        fprintf(f, "p%d\t", s);
        for (int j = 0; j < each; j++)
            fprintf(f, j ? " p%d" : "p%d", target_of(s, j, c->tgt_vocab_size));
        fputc('\n', f);
    }
    return fclose(f);
}

int cli_bench_shortlist(const tessera_model *m, int per_sentence, int src_len,
                        tessera_shortlist **out)
{
    const tessera_config *c = tessera_model_config(m);
    char dir[] = "/tmp/tessera-bench-shortlist-XXXXXX", src[64], tgt[64], vmap[64], err[512];
    *out = NULL;
    if (!mkdtemp(dir))
        return cli_error("bench: --shortlist: cannot make a temporary directory");
    snprintf(vmap, sizeof vmap, "%s/vmap.txt", dir);
    tessera_vocabulary *v[2] = {NULL, NULL};
    int rc = write_vocabulary(dir, "src.txt", c->src_vocab_size, src, sizeof src) != 0 ||
             write_vocabulary(dir, "tgt.txt", c->tgt_vocab_size, tgt, sizeof tgt) != 0 ||
             write_vmap(c, per_sentence, src_len, vmap) != 0
                 ? cli_error("bench: --shortlist: cannot write the files in %s", dir)
                 : 0;
    if (rc == 0 &&
        (tessera_vocabulary_load(src, (size_t)c->src_vocab_size, &v[0], err, sizeof err) != 0 ||
         tessera_vocabulary_load(tgt, (size_t)c->tgt_vocab_size, &v[1], err, sizeof err) != 0 ||
         tessera_shortlist_load_vmap(m, v[0], v[1], vmap, out, err, sizeof err) != 0))
        rc = cli_error("bench: --shortlist: %s", err);
    tessera_vocabulary_free(v[0]);
    tessera_vocabulary_free(v[1]);
    unlink(src);
    unlink(tgt);
    unlink(vmap);
    rmdir(dir);
    return rc;
}
