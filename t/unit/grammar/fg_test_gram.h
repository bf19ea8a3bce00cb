
/*
 * fairgate: what the grammar's tests share: a synthetic byte-level
 * vocabulary, and whether a grammar takes a text whole.
 */

#ifndef _FG_TEST_GRAM_H_INCLUDED_
#define _FG_TEST_GRAM_H_INCLUDED_


#include <stdlib.h>
#include <string.h>

#include "fg_grammar.h"


/*
 * The 256 bytes, pieces that span JSON's tokens, whole multi-byte
 * characters and pieces of them (a character's lead byte with its next,
 * its last bytes with ASCII after), a token of no bytes, and EOG last.
 */
static const char  *fg_test_gram_pieces[] = {
    "{\"", "\":", "\",", "\"}", " \"", ",\"", "\": \"", "true", "false",
    "null", "00", "12", "-1", ".5", "e+", "\n  ", "  ", "},", "}]", "[{",
    "\\n", "\\u00", "ab", "abc", "name", "date", "2024-", "-01", "T12:",
    "é", "€", "😀", "\xc3", "\xe2\x82", "\x82\xac", "\xac\"", "\xa9x",
    "\xf0\x9f", "\x98\x80", "\x80\"}", "@example.com", "Z\"",
};


static inline fg_gram_vocab_t *
fg_test_gram_vocab(uint32_t *eog_id)
{
    char              bytes[256];
    uint8_t          *eog;
    uint32_t          n, i, k, *lens;
    const char      **pieces;
    fg_gram_vocab_t  *v;

    k = sizeof(fg_test_gram_pieces) / sizeof(fg_test_gram_pieces[0]);
    n = 256 + k + 2;
    pieces = calloc(n, sizeof(char *));
    lens = calloc(n, sizeof(uint32_t));
    eog = calloc(n, 1);

    for (i = 0; i < 256; i++) {
        bytes[i] = (char) i;
        pieces[i] = &bytes[i];
        lens[i] = 1;
    }

    for (i = 0; i < k; i++) {
        pieces[256 + i] = fg_test_gram_pieces[i];
        lens[256 + i] = strlen(fg_test_gram_pieces[i]);
    }

    pieces[n - 2] = "";
    pieces[n - 1] = "";
    eog[n - 1] = 1;
    *eog_id = n - 1;

    v = fg_gram_vocab_new(n, pieces, lens, eog);

    free(pieces);
    free(lens);
    free(eog);

    return v;
}


/* whether the grammar takes the text whole: fed in bytes, then complete */
static inline int
fg_test_gram_takes(const fg_gram_t *g, const fg_gram_vocab_t *v,
    const char *text)
{
    int               rc;
    fg_gram_match_t  *m;

    m = fg_gram_match_new(g, v, 0);

    if (m == NULL) {
        return 0;
    }

    rc = fg_gram_accept_bytes(m, text, strlen(text)) == 0
         && fg_gram_complete(m);

    fg_gram_match_free(m);

    return rc;
}


/* a text on one line, for a test's name: newlines and quotes escaped */
static inline const char *
fg_test_gram_show(const char *text)
{
    size_t       n;
    static char  buf[256];

    for (n = 0; *text && n < sizeof(buf) - 3; text++) {
        if (*text == '\n' || *text == '"' || *text == '\\') {
            buf[n++] = '\\';
            buf[n++] = *text == '\n' ? 'n' : *text;

        } else {
            buf[n++] = *text;
        }
    }

    buf[n] = '\0';

    return buf;
}


#endif /* _FG_TEST_GRAM_H_INCLUDED_ */
