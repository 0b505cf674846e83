/* CTranslate2 attributes (core/model/ctranslate2/attributes.h). */
#include "core/model/ctranslate2/attributes.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/errors.h"

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

int tsr_ct2_scalar(tsr_ct2_file *f, const char *name, double *v, char *err, size_t err_len)
{
    tsr_ct2_variable *var = tsr_ct2_find(f, name);
    if (!var)
        return 1;
    if (var->rank != 0)
        return tsr_fail(err, err_len, "variable '%s': expected a scalar, got rank %zu", name,
                        var->rank);
    unsigned char b[4] = {0};
    TSR_TRY(tsr_ct2_read(f, var, 0, var->bytes, b, err, err_len));
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float single;
    switch (var->dtype) {
    case TSR_CT2_I8: *v = (int8_t)b[0]; break;
    case TSR_CT2_I16: *v = (int16_t)(u & 0xffff); break;
    case TSR_CT2_I32: *v = (int32_t)u; break;
    case TSR_CT2_F32: memcpy(&single, &u, 4); *v = single; break;
    case TSR_CT2_F16: *v = half_to_double((uint16_t)u); break;
    case TSR_CT2_BF16: u <<= 16; memcpy(&single, &u, 4); *v = single; break;
    }
    if (!isfinite(*v))
        return tsr_fail(err, err_len, "variable '%s': %g is not finite", name, *v);
    var->used = 1;
    return 0;
}

int tsr_ct2_attribute(tsr_ct2_file *f, const char *scope, const char *name, double fallback,
                      double *v, char *err, size_t err_len)
{
    char full[256];
    snprintf(full, sizeof full, "%s/%s", scope, name);
    int rc = tsr_ct2_scalar(f, full, v, err, err_len);
    if (rc == 1 && f->revision < 5)
        rc = tsr_ct2_scalar(f, name, v, err, err_len);
    if (rc == 1)
        *v = fallback;
    return rc < 0 ? rc : 0;
}

int tsr_ct2_root_attribute(tsr_ct2_file *f, const char *name, double fallback, double *v,
                           char *err, size_t err_len)
{
    int rc = tsr_ct2_scalar(f, name, v, err, err_len);
    if (rc == 1)
        *v = fallback;
    return rc < 0 ? rc : 0;
}

int tsr_ct2_string_attribute(tsr_ct2_file *f, const char *name, const char *fallback, char *out,
                             size_t out_len, char *err, size_t err_len)
{
    tsr_ct2_variable *var = tsr_ct2_find(f, name);
    snprintf(out, out_len, "%s", fallback);
    if (!var)
        return 0;
    if (var->dtype != TSR_CT2_I8 || var->rank != 1 || var->bytes >= out_len)
        return tsr_fail(err, err_len, "variable '%s': expected a string (int8 bytes)", name);
    TSR_TRY(tsr_ct2_read(f, var, 0, var->bytes, out, err, err_len));
    out[var->bytes] = '\0';
    var->used = 1;
    return 0;
}

size_t tsr_ct2_count_layers(const tsr_ct2_file *f, const char *scope)
{
    size_t n = 0;
    for (;; n++) {
        char name[320];
        snprintf(name, sizeof name, "%s/layer_%zu/self_attention/linear_0/weight", scope, n);
        if (n == 4096 || !tsr_ct2_find(f, name))
            return n;
    }
}
