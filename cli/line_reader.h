/* The command's input, a line at a time: what translate, score and encode
 * read from standard input (and the line fuzz target from its input), cut
 * at '\n' with one trailing '\r' dropped. A read that fails is an error,
 * never the end of the input: getline reports a line too long for memory
 * (ENOMEM) without setting the stream's error flag, and taking that for the
 * end would drop every later line without a word. */
#ifndef TSR_CLI_LINE_READER_H
#define TSR_CLI_LINE_READER_H

#include <stdio.h>
#include <sys/types.h>

typedef struct cli_line_reader {
    FILE *in;
    size_t line_no; /* lines read so far: the number of the last one */
    char *buf;
    size_t cap;
    size_t held; /* nonzero: buf holds line line_no again, for the next read (length held - 1) */
    int error;   /* after a read error: its errno (EIO when the C library gave none) */
} cli_line_reader;

/* Reads the next line into *line (NUL-terminated, valid until the next
 * read) and *len. Returns 1 with a line, 0 at the end of the input, -1 on a
 * read error (r->error; the line that failed is line_no + 1). */
int cli_read_line(cli_line_reader *r, char **line, size_t *len);

/* Whether getline's -1 on `in` (errno `err`, cleared before the call) was a
 * failure rather than the end of the input: the stream's error flag (EIO
 * and the like), or no end-of-file flag (a failed allocation: ENOMEM, or
 * EOVERFLOW past SSIZE_MAX), or an ENOMEM on the call that also met the end
 * (the last line, without its '\n'). */
int cli_read_failed(FILE *in, int err);

/* Gives the line just read back: the next read returns it again. */
void cli_unread_line(cli_line_reader *r, size_t len);

void cli_line_reader_free(cli_line_reader *r);

#endif
