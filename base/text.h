/* A bounded text appender: descriptions built line by line into a caller's
 * buffer, cut (never overrun) when the buffer is full. */
#ifndef TSR_BASE_TEXT_H
#define TSR_BASE_TEXT_H

#include <stddef.h>

typedef struct tsr_text {
    char *buf;
    size_t len, used;
} tsr_text;

/* printf at the end of t->buf; always NUL-terminated (when len > 0). */
void tsr_text_add(tsr_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
