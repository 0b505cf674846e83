/* UTF-8 validation (text/tokenizer.h): the tokenizers take valid text only,
 * so that what cannot be read is an error naming it, not a U+FFFD. */
#include "text/tokenizer.h"

size_t tsr_utf8_invalid_at(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c >= 0x01 && c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
        if (c >= 0xc2 && c <= 0xdf)
            n = 2;
        else if (c >= 0xe0 && c <= 0xef) {
            n = 3;
            if (c == 0xe0)
                lo = 0xa0; /* overlong below U+0800 */
            else if (c == 0xed)
                hi = 0x9f; /* surrogates U+D800..DFFF */
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 4;
            if (c == 0xf0)
                lo = 0x90; /* overlong below U+10000 */
            else if (c == 0xf4)
                hi = 0x8f; /* past U+10FFFF */
        } else {
            return i; /* NUL, a continuation byte, 0xc0, 0xc1, 0xf5.. */
        }
        if (len - i < n || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k < n; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                return i;
        i += n;
    }
    return len;
}
