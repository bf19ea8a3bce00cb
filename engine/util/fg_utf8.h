
/*
 * fairgate: strict UTF-8 (RFC 3629), one copy for the tokenizer, the JSON
 * scanner and the OpenAI writers.
 *
 * Strict: no overlong forms, no surrogates (U+D800-U+DFFF), nothing above
 * U+10FFFF, no character cut short by the end of the bytes.
 */

#ifndef _FG_UTF8_H_INCLUDED_
#define _FG_UTF8_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* the bytes a lead byte says its character has (1 for a stray byte) */
static inline size_t
fg_utf8_len(uint8_t c)
{
    return c < 0xc0 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf8 ? 4 : 1;
}


/*
 * Decodes the character at s (n > 0 bytes left) into *cp and returns its
 * length, or returns 0 when the bytes there are not a valid character.
 */
static inline size_t
fg_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
    size_t    len, i;
    uint8_t   c, lo, hi;
    uint32_t  v;

    c = s[0];

    if (c < 0x80) {
        *cp = c;
        return 1;
    }

    if (c < 0xc2 || c > 0xf4) {
        return 0;
    }

    len = fg_utf8_len(c);

    if (len > n) {
        return 0;
    }

    v = c & (0x7f >> len);

    /* the second byte's range excludes overlongs and surrogates */
    lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;

    for (i = 1; i < len; i++) {
        if (s[i] < lo || s[i] > hi) {
            return 0;
        }

        v = (v << 6) | (s[i] & 0x3f);
        lo = 0x80;
        hi = 0xbf;
    }

    *cp = v;

    return len;
}


/* writes cp (at most U+10FFFF) at out, 1 to 4 bytes; returns how many */
static inline size_t
fg_utf8_encode(uint32_t cp, uint8_t *out)
{
    if (cp < 0x80) {
        out[0] = (uint8_t) cp;
        return 1;
    }

    if (cp < 0x800) {
        out[0] = (uint8_t) (0xc0 | (cp >> 6));
        out[1] = (uint8_t) (0x80 | (cp & 0x3f));
        return 2;
    }

    if (cp < 0x10000) {
        out[0] = (uint8_t) (0xe0 | (cp >> 12));
        out[1] = (uint8_t) (0x80 | ((cp >> 6) & 0x3f));
        out[2] = (uint8_t) (0x80 | (cp & 0x3f));
        return 3;
    }

    out[0] = (uint8_t) (0xf0 | (cp >> 18));
    out[1] = (uint8_t) (0x80 | ((cp >> 12) & 0x3f));
    out[2] = (uint8_t) (0x80 | ((cp >> 6) & 0x3f));
    out[3] = (uint8_t) (0x80 | (cp & 0x3f));

    return 4;
}


#endif /* _FG_UTF8_H_INCLUDED_ */
