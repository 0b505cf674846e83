/* The command's input lines (cli/line_reader.h). */
#include "cli/line_reader.h"

#include <errno.h>
#include <stdlib.h>

int cli_read_failed(FILE *in, int err)
{
    return ferror(in) || !feof(in) || err == ENOMEM || err == EOVERFLOW;
}

int cli_read_line(cli_line_reader *r, char **line, size_t *len)
{
    if (r->held) {
        *line = r->buf;
        *len = r->held - 1;
        r->held = 0;
        return 1;
    }
    errno = 0;
    ssize_t n = getline(&r->buf, &r->cap, r->in);
    if (n < 0) {
        int err = errno;
        if (!cli_read_failed(r->in, err))
            return 0;
        r->error = err ? err : EIO;
        return -1;
    }
    r->line_no++;
    if (n > 0 && r->buf[n - 1] == '\n')
        r->buf[--n] = '\0';
    if (n > 0 && r->buf[n - 1] == '\r')
        r->buf[--n] = '\0';
    *line = r->buf;
    *len = (size_t)n;
    return 1;
}

void cli_unread_line(cli_line_reader *r, size_t len) { r->held = len + 1; }

void cli_line_reader_free(cli_line_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}
