/* Text read from a model file, made safe to quote in a one-line message. A
 * tensor name or a config value is the file's to choose: copied as is into
 * an error, it could end the line, send a terminal's escape sequences, or
 * close its quote early and forge what a log line says after it. */
#ifndef TSR_BASE_QUOTE_H
#define TSR_BASE_QUOTE_H

#include <stddef.h>

/* A buffer for one quoted name: TSR_QUOTE_MAX bytes of it, "..." and the
 * NUL. Long enough for the names tessera looks up (under 70 bytes below
 * 1000 layers: "transformer.decoder.layers.999.multihead_attn.out_proj.weight_scale")
 * and those of common checkpoints, so that only a name no model has is cut. */
#define TSR_QUOTE_MAX 80
#define TSR_QUOTE_LEN (TSR_QUOTE_MAX + 4)

/* Writes text into out (out_len bytes, at least 4) as a message may show it
 * between two `quote` characters (0: text that is not between quotes):
 * printable ASCII as is, except the backslash and `quote`; every other byte
 * (control bytes, DEL, each byte of UTF-8, valid or not) as \xNN, as the
 * command quotes its input lines. When that takes more than out_len - 4
 * bytes, the bytes that fit are followed by "...", never cutting an \xNN.
 * Returns out. */
const char *tsr_quote(char *out, size_t out_len, const char *text, char quote);

#endif
