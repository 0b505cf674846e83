/* One-line error messages into a caller's buffer. */
#ifndef TSR_CORE_ERRORS_H
#define TSR_CORE_ERRORS_H

#include <stddef.h>

/* printf into err (if err_len > 0); always returns -1 so that error paths read
 * `return tsr_fail(err, err_len, "...", ...);`. Newlines in the result are
 * replaced by spaces so that every message stays one line. */
int tsr_fail(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes an existing message in err with `prefix` ("prefix: message"). */
int tsr_fail_prefix(char *err, size_t err_len, const char *prefix);

#endif
