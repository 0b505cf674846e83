/* Token embeddings (core/network/embedding.h). */
#include "core/network/embedding.h"

#include <string.h>

void tsr_embed_tokens(const tessera_model *m, const tsr_kernels *ks, tsr_side side,
                      const int32_t *ids, size_t count, size_t pos0, float *out, size_t ldo)
{
    size_t d = m->d;
    if (side == TSR_TARGET && pos0 == 0 && count > 0 &&
        m->cfg.decoder_start == TESSERA_START_ZEROS) {
        /* 0 * scale + PE[0]: the position's bits exactly. */
        memcpy(out, m->dec_positions, d * sizeof *out);
        ids++, count--, pos0++, out += ldo;
    }
    if (count == 0)
        return;
    const float *pos = (side == TSR_SOURCE ? m->positions : m->dec_positions) + pos0 * d;
    const float *table = side == TSR_SOURCE && m->src_emb ? m->src_emb : m->tgt_emb;
    if (table)
        ks->embed(ids, count, table, d, m->emb_scale, pos, out, ldo);
    else
        ks->embed_packed(ks, &m->generator, ids, count, m->emb_scale, pos, out, ldo);
}
