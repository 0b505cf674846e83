#include "base/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

__attribute__((format(printf, 4, 0))) static int vfail(int code, char *err, size_t err_len,
                                                       const char *fmt, va_list ap)
{
    if (err && err_len > 0) {
        vsnprintf(err, err_len, fmt, ap);
        one_line(err);
    }
    return code;
}

int tsr_fail(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(TESSERA_ERR_INPUT, err, err_len, fmt, ap);
    va_end(ap);
    return rc;
}

int tsr_fail_oom(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(TESSERA_ERR_NOMEM, err, err_len, fmt, ap);
    va_end(ap);
    return rc;
}

int tsr_fail_internal(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(TESSERA_ERR_INTERNAL, err, err_len, fmt, ap);
    va_end(ap);
    return rc;
}

int tsr_fail_prefix(int code, char *err, size_t err_len, const char *prefix)
{
    if (err && err_len > 0) {
        size_t plen = strlen(prefix) + 2;
        size_t mlen = strnlen(err, err_len - 1);
        if (plen >= err_len) {
            tsr_fail(err, err_len, "%s", prefix);
            return code;
        }
        if (mlen + plen >= err_len)
            mlen = err_len - plen - 1;
        memmove(err + plen, err, mlen);
        memcpy(err, prefix, plen - 2);
        memcpy(err + plen - 2, ": ", 2);
        err[plen + mlen] = '\0';
    }
    return code;
}

const char *tessera_status_name(int status)
{
    switch (status) {
    case TESSERA_OK: return "ok";
    case TESSERA_ERR_INPUT: return "bad input";
    case TESSERA_ERR_NOMEM: return "out of memory";
    case TESSERA_ERR_INTERNAL: return "internal error";
    case TESSERA_ERR_CANCELLED: return "cancelled";
    default: return "unknown status";
    }
}

int tsr_cancel_check(tessera_cancel_fn cancel, void *arg, char *err, size_t err_len)
{
    if (!cancel || !cancel(arg))
        return 0;
    if (err && err_len > 0)
        snprintf(err, err_len, "cancelled");
    return TESSERA_ERR_CANCELLED;
}
