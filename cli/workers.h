/* The workers of translate and score: N threads of the command, each with a
 * runtime of its own (worker i of N, K threads each: --workers, --threads),
 * computing batches of input lines while the main thread reads the next ones
 * and prints the finished ones, always in input order. A sentence's output
 * does not depend on the batch or the runtime it is computed in, so the
 * output is byte-identical to one worker's, bad lines and errors included:
 * the lines before them are printed first. */
#ifndef TSR_CLI_WORKERS_H
#define TSR_CLI_WORKERS_H

#include <stddef.h>

#include "cli/cli.h"

/* One command's work on a batch of up to `cap` lines, whose state (a slot)
 * the pool keeps, several at once. */
typedef struct cli_work {
    size_t slot_bytes;
    /* Prepares a zeroed slot for up to cap lines; 0, or -1 when out of memory. */
    int (*slot_init)(void *ctx, void *slot, size_t cap);
    void (*slot_free)(void *ctx, void *slot, size_t cap);
    /* Parses line `index` of a batch into the slot, its source tokens (what
     * --batch-tokens counts: ids, pieces, or the tokens of text) into
     * *tokens; -1 with a message (no line number) in err. On the main
     * thread. A line parsed again (the first of the next batch, when it did
     * not fit this one's tokens) is parsed into the next slot: parsing has no
     * other effect. */
    int (*parse)(void *ctx, void *slot, const char *line, size_t len, size_t index,
                 size_t *tokens, char *err, size_t err_len);
    /* Computes the slot's n lines on rt, the first of them input line
     * first_line (from 0); 0, or -1 with a message in err. On a worker's
     * thread: it reads only its slot and ctx. */
    int (*compute)(void *ctx, void *slot, size_t n, size_t first_line, tessera_runtime *rt,
                   char *err, size_t err_len);
    /* Prints the slot's results and releases them; 0, or 1 after printing an
     * error. On the main thread, batch after batch in input order. */
    int (*print)(void *ctx, void *slot, size_t n);
} cli_work;

/* Reads standard input in batches of up to cap lines and, when max_tokens >
 * 0, up to max_tokens source tokens (as parsed: ids, pieces, or the tokens
 * of text; a line that would pass the limit starts the next batch, a longer
 * one is a batch alone), computed on runtimes[0 .. workers) and printed in
 * order; returns the exit status. */
int cli_run_workers(const cli_work *w, void *ctx, size_t cap, size_t max_tokens,
                    tessera_runtime *const *runtimes, int workers);

#endif
