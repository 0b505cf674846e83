/* The one form every shortlist file is read into (core/shortlist/), and
 * what the readers build it with. */
#ifndef TSR_CORE_SHORTLIST_TABLE_H
#define TSR_CORE_SHORTLIST_TABLE_H

#include "core/shortlist/shortlist.h"

/* Rules map an n-gram of source ids (n >= 1) to target ids, held in one
 * pool; an open-addressing table finds them. */
typedef struct tsr_shortlist_rule {
    size_t key_at, n;        /* the n-gram: keys[key_at .. key_at + n) */
    size_t targets_at, count; /* its targets: targets[targets_at ..) */
} tsr_shortlist_rule;

struct tessera_shortlist {
    size_t source_size, target_size; /* the vocabularies read over */
    int32_t *fixed; /* always candidates */
    size_t n_fixed, cap_fixed;
    size_t first;   /* ids 0 .. first-1 are candidates too */
    int shared;     /* the source ids are candidates too */
    size_t longest; /* the longest n-gram of a rule */
    tsr_shortlist_rule *rules;
    size_t n_rules, cap_rules;
    int32_t *keys, *targets;
    size_t n_keys, cap_keys, n_targets, cap_targets;
    size_t *slots; /* [n_slots]: rule index + 1, 0 empty */
    size_t n_slots;
};

tsr_shortlist *tsr_shortlist_new(const tessera_vocabulary *src, const tessera_vocabulary *tgt);
/* Appends (NOMEM on failure): */
int tsr_shortlist_add_fixed(tsr_shortlist *s, int32_t id);
/* A rule for the n-gram key[0..n) with targets[0..count); a second rule of
 * the same n-gram replaces the first's targets (as both readers' maps do). */
int tsr_shortlist_add_rule(tsr_shortlist *s, const int32_t *key, size_t n,
                           const int32_t *targets, size_t count);

/* The next line of a file read whole (text[..end), NUL after end), from
 * *at on: 1 with *line NUL-terminated in place (its '\n' and a '\r' before
 * it dropped) and *len its bytes, 0 at the end, -1 when it holds a NUL. */
int tsr_shortlist_next_line(char **at, char *end, char **line, size_t *len);

#endif
