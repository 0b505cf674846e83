/* The attributes a CTranslate2 model.bin keeps as variables: rank-0 values
 * (and, before binary version 6, strings stored as int8 vectors), each
 * marked used when read (tsr_ct2_check_all_used refuses what nothing read). */
#ifndef TSR_CORE_MODEL_CTRANSLATE2_ATTRIBUTES_H
#define TSR_CORE_MODEL_CTRANSLATE2_ATTRIBUTES_H

#include <stddef.h>

#include "core/model/ctranslate2/file.h"

/* The scalar `name` into *v (0), 1 when absent, an error when it is not a
 * scalar or not finite. */
int tsr_ct2_scalar(tsr_ct2_file *f, const char *name, double *v, char *err, size_t err_len);

/* Attribute `name` of scope ("encoder", "decoder"): "SCOPE/NAME", or before
 * spec revision 5 (when the spec kept one copy at the root) "NAME"; absent:
 * fallback. */
int tsr_ct2_attribute(tsr_ct2_file *f, const char *scope, const char *name, double fallback,
                      double *v, char *err, size_t err_len);

/* An attribute the spec kept at the root (binary versions < 6); absent:
 * fallback. */
int tsr_ct2_root_attribute(tsr_ct2_file *f, const char *name, double fallback, double *v,
                           char *err, size_t err_len);

/* A string attribute of binary versions < 6 (an int8 vector of UTF-8) into
 * out; absent: fallback. */
int tsr_ct2_string_attribute(tsr_ct2_file *f, const char *name, const char *fallback, char *out,
                             size_t out_len, char *err, size_t err_len);

/* The layers of scope: SCOPE/layer_N/self_attention/linear_0/weight for
 * N = 0, 1, ... (at most 4096). */
size_t tsr_ct2_count_layers(const tsr_ct2_file *f, const char *scope);

#endif
