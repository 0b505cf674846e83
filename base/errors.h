/* One-line error messages into a caller's buffer, with the status codes of
 * tessera.h: what went wrong is said by the message, which kind of failure by
 * the code (bad input, out of memory, internal). */
#ifndef TSR_BASE_ERRORS_H
#define TSR_BASE_ERRORS_H

#include <stddef.h>

#include "core/tessera.h"

/* printf into err (if err_len > 0); returns TESSERA_ERR_INPUT (-1) so that
 * error paths read `return tsr_fail(err, err_len, "...", ...);`. Newlines in
 * the result are replaced by spaces so that every message stays one line. */
int tsr_fail(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same, returning TESSERA_ERR_NOMEM: an allocation failed. */
int tsr_fail_oom(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same, returning TESSERA_ERR_INTERNAL: the system refused something
 * that should work (a thread, a lock), or a state that should not exist. */
int tsr_fail_internal(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Evaluates `call`, an int status, and returns it from the enclosing
 * function when it is not 0: the propagation of a failure keeps its kind. */
#define TSR_TRY(call)                                                                              \
    do {                                                                                           \
        int tsr_try_status_ = (call);                                                              \
        if (tsr_try_status_ != 0)                                                                  \
            return tsr_try_status_;                                                                \
    } while (0)

/* TESSERA_ERR_CANCELLED with the message "cancelled" when cancel (may be
 * NULL) returns nonzero for arg; else 0. */
int tsr_cancel_check(tessera_cancel_fn cancel, void *arg, char *err, size_t err_len);

/* Prefixes an existing message in err with `prefix` ("prefix: message") and
 * returns `code`, the status of the failure being reported. */
int tsr_fail_prefix(int code, char *err, size_t err_len, const char *prefix);

#endif
