#include "base/text.h"

#include <stdarg.h>
#include <stdio.h>

void tsr_text_add(tsr_text *t, const char *fmt, ...)
{
    if (t->used + 1 >= t->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(t->buf + t->used, t->len - t->used, fmt, ap);
    va_end(ap);
    if (w > 0)
        t->used = t->used + (size_t)w < t->len ? t->used + (size_t)w : t->len - 1;
}
