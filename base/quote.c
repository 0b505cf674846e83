#include "base/quote.h"

#include <stdio.h>
#include <string.h>

const char *tsr_quote(char *out, size_t out_len, const char *text, char quote)
{
    /* Room is kept for "..." and the NUL from the start, so a text that
     * turns out too long is cut where the last whole piece ended. */
    size_t room = out_len - 4, used = 0;
    const unsigned char *p = (const unsigned char *)text;
    for (; *p; p++) {
        int plain = *p >= 0x20 && *p < 0x7f && *p != '\\' && *p != (unsigned char)quote;
        size_t need = plain ? 1 : 4;
        if (used + need > room)
            break;
        if (plain)
            out[used] = (char)*p;
        else
            snprintf(out + used, 5, "\\x%02x", *p);
        used += need;
    }
    if (*p) {
        memcpy(out + used, "...", 3);
        used += 3;
    }
    out[used] = '\0';
    return out;
}
