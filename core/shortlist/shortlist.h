/* Vocabulary shortlists: for each source sentence, the target ids the
 * output projection and the softmax are computed over (issue 50). Two
 * families of files, read into one form:
 *   - CTranslate2's vocabulary map (vmap.txt): lines "<n-gram>\t<targets>",
 *     the n-gram's tokens and the targets separated by spaces; the line of
 *     the empty n-gram lists targets that are always candidates;
 *   - Marian's lexical shortlist: text lines "<target> <source> <prob>"
 *     (lex.s2t), each source word's `best` most probable targets above
 *     `threshold` kept, the first `first` target ids always candidates; or
 *     the binary form Bergamot and Firefox Translations ship (lex.*.bin),
 *     whose header holds first and best, with the lists already cut.
 * Pieces are matched against the model's vocabularies; a sentence's
 * candidates are then ids alone: the fixed ones, the targets of every
 * n-gram of its source ids (every source id, for a lexical shortlist,
 * and with `shared` the source ids themselves, as Marian does when the
 * two vocabularies are one). What a search adds (eos and the other
 * specials, prefix and language tokens) is the caller's. */
#ifndef TSR_CORE_SHORTLIST_SHORTLIST_H
#define TSR_CORE_SHORTLIST_SHORTLIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/tessera.h"

/* The public type (core/tessera.h, "Vocabulary shortlists"). */
typedef struct tessera_shortlist tsr_shortlist;

/* A vocabulary map (CTranslate2's vmap.txt) over the model's source and
 * target vocabularies. A key holding a piece the source vocabulary lacks
 * can match no sentence of ids and is passed over; a target piece the
 * target vocabulary lacks, too (CTranslate2 maps it to <unk>, which every
 * search keeps). Errors name the file and the line. */
int tsr_shortlist_load_vmap(const char *path, const tessera_vocabulary *src,
                            const tessera_vocabulary *tgt, tsr_shortlist **out, char *err,
                            size_t err_len);

/* A Marian lexical shortlist, text or binary (told apart by the binary
 * form's first 8 bytes). For the text form, first, best and threshold are
 * Marian's three numbers (--shortlist FILE first best threshold;
 * TESSERA_SHORTLIST_DEFAULT_COUNT: Marian's 100); the binary form's header
 * gives first and best, which must then be TESSERA_SHORTLIST_DEFAULT_COUNT
 * and threshold 0. Unknown source pieces of a
 * text file count as the source's unknown id, unknown targets as nothing
 * (Marian takes both as <unk>). */
int tsr_shortlist_load_lexical(const char *path, const tessera_vocabulary *src,
                               const tessera_vocabulary *tgt, int32_t src_unk_id, size_t first,
                               size_t best, float threshold, int shared, tsr_shortlist **out,
                               char *err, size_t err_len);

void tsr_shortlist_free(tsr_shortlist *s); /* NULL is accepted */

/* The sizes of the vocabularies it was read over: a search checks them
 * against its model's before it uses the ids. */
size_t tsr_shortlist_source_size(const tsr_shortlist *s);
size_t tsr_shortlist_target_size(const tsr_shortlist *s);

/* Sentence src[0..len)'s candidates and the ids of also[0..n_also) (what a
 * search keeps whatever the file says), ascending and distinct, appended to
 * (*ids)[0..*n) (grown with tsr_grow as needed; *cap its room): *n grows by
 * their count. TESSERA_ERR_NOMEM when out of memory. */
int tsr_shortlist_candidates(const tsr_shortlist *s, const int32_t *src, size_t len,
                             const tessera_tokens *also, size_t n_also, int32_t **ids,
                             size_t *cap, size_t *n);

#endif
