/* utf8.c — the sanitiser and the plain-text check of utf8.h. */
#include "core/utf8.h"

#include <stdio.h>
#include <string.h>

/* Length of the valid, XML-allowed UTF-8 character at s (1..4), or 0 when s[0] must be
 * escaped. */
static size_t char_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80) return c >= 0x20 || c == '\t' || c == '\n' || c == '\r' ? 1 : 0;
    size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    unsigned cp = n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0; /* truncated (a NUL ends it too) */
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)) return 0;
    if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
    return n;
}

int ug_utf8_sanitize(const char *in, char *out, size_t outlen)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0;
    int changed = 0;
    while (*s) {
        size_t n = char_len(s);
        size_t need = n ? n : 4;
        if (o + need >= outlen) return (out[o] = 0), 1;
        if (n)
            memcpy(out + o, s, n);
        else
            snprintf(out + o, 5, "\\x%02x", *s), changed = 1;
        o += need;
        s += n ? n : 1;
    }
    out[o] = 0;
    return changed;
}

const char *ug_utf8_plain_problem(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
        if (*p < 0x20 || *p == 0x7f) return "holds a control character";
        size_t n = char_len(p);
        if (!n) return "is not valid UTF-8";
        if (n == 2 && p[0] == 0xC2 && p[1] < 0xA0) return "holds a control character"; /* C1 */
        p += n;
    }
    return NULL;
}
