
/*
 * fairgate: the 256 byte tokens of a byte-level BPE vocabulary, GPT-2's
 * map of bytes to printable code points written again here, for the
 * tests and fuzzers that build such a tokenizer.
 */

#ifndef _FG_TEST_BPE_H_INCLUDED_
#define _FG_TEST_BPE_H_INCLUDED_


#include <stdint.h>


/* byte b's code point: a printable one itself, the others 256 on, in order */
static inline uint32_t
fg_test_byte_cp(int b)
{
    int  i, n;

    if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac)
        || (b >= 0xae && b <= 0xff))
    {
        return (uint32_t) b;
    }

    n = 0;

    for (i = 0; i < b; i++) {
        if (!((i >= 0x21 && i <= 0x7e) || (i >= 0xa1 && i <= 0xac)
              || (i >= 0xae && i <= 0xff)))
        {
            n++;
        }
    }

    return 256 + n;
}


/* tokens[0 .. 256): each byte's code point in UTF-8, kept in bytes; their
 * types 1, a normal token's */
static inline void
fg_test_byte_tokens(char bytes[256][4], const char **tokens, int32_t *types)
{
    int       i;
    uint32_t  cp;

    for (i = 0; i < 256; i++) {
        cp = fg_test_byte_cp(i);

        if (cp < 0x80) {
            bytes[i][0] = (char) cp;
            bytes[i][1] = '\0';

        } else {
            bytes[i][0] = (char) (0xc0 | (cp >> 6));
            bytes[i][1] = (char) (0x80 | (cp & 0x3f));
            bytes[i][2] = '\0';
        }

        tokens[i] = bytes[i];
        types[i] = 1;
    }
}


#endif /* _FG_TEST_BPE_H_INCLUDED_ */
