#include "core/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

int tsr_fail(char *err, size_t err_len, const char *fmt, ...)
{
    if (err && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
        one_line(err);
    }
    return -1;
}

int tsr_fail_prefix(char *err, size_t err_len, const char *prefix)
{
    if (err && err_len > 0) {
        size_t plen = strlen(prefix) + 2;
        size_t mlen = strnlen(err, err_len - 1);
        if (plen >= err_len)
            return tsr_fail(err, err_len, "%s", prefix);
        if (mlen + plen >= err_len)
            mlen = err_len - plen - 1;
        memmove(err + plen, err, mlen);
        memcpy(err, prefix, plen - 2);
        memcpy(err + plen - 2, ": ", 2);
        err[plen + mlen] = '\0';
    }
    return -1;
}
