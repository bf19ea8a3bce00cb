
/*
 * fairgate: fuzz target of the grammar compilers and the matcher.  The
 * first byte chooses: even, the rest up to a NUL is GBNF text; odd, it is
 * a JSON Schema (jansson parses it first).  What follows the NUL is fed
 * to a matcher over a byte-level vocabulary in pieces, a mask taken
 * before each: a token the mask holds must be accepted, one it refuses
 * must be refused, and EOG must be allowed exactly where the grammar is
 * complete.
 */


#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fg_grammar.h"


#define FUZZ_N  258                          /* the bytes, empty, EOG */


static fg_gram_vocab_t  *fuzz_vocab;


static fg_gram_vocab_t *
fuzz_make_vocab(void)
{
    char         bytes[256];
    uint8_t      eog[FUZZ_N];
    uint32_t     i, lens[FUZZ_N];
    const char  *pieces[FUZZ_N];

    for (i = 0; i < 256; i++) {
        bytes[i] = (char) i;
        pieces[i] = &bytes[i];
        lens[i] = 1;
        eog[i] = 0;
    }

    pieces[256] = "";
    lens[256] = 0;
    eog[256] = 0;
    pieces[257] = "";
    lens[257] = 0;
    eog[257] = 1;

    return fg_gram_vocab_new(FUZZ_N, pieces, lens, eog);
}


static void
fuzz_feed(const fg_gram_t *g, const uint8_t *data, size_t size)
{
    size_t            i;
    uint32_t          bits[(FUZZ_N + 31) / 32];
    int64_t           n;
    fg_gram_match_t  *m;

    m = fg_gram_match_new(g, fuzz_vocab, 2);

    for (i = 0; m != NULL && i < size && i < 256; i++) {
        n = fg_gram_mask(m, bits);

        if (n < 0) {
            break;
        }

        if (((bits[257 >> 5] >> (257 & 31)) & 1) != (uint32_t)
            fg_gram_complete(m))
        {
            abort();
        }

        if (((bits[data[i] >> 5] >> (data[i] & 31)) & 1)
            != (fg_gram_accept(m, data[i]) == 0))
        {
            abort();
        }
    }

    if (m != NULL && fg_gram_complete(m) && fg_gram_accept(m, 257) != 0) {
        abort();
    }

    fg_gram_match_free(m);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char           err[256], *text;
    size_t         len;
    json_t        *schema;
    fg_gram_t     *g;
    const uint8_t *nul;
    json_error_t   jerr;

    if (fuzz_vocab == NULL) {
        fuzz_vocab = fuzz_make_vocab();
    }

    if (size < 1 || fuzz_vocab == NULL) {
        return 0;
    }

    nul = memchr(data + 1, 0, size - 1);
    len = nul ? (size_t) (nul - data - 1) : size - 1;
    text = malloc(len + 1);

    if (text == NULL) {
        return 0;
    }

    memcpy(text, data + 1, len);
    text[len] = '\0';
    g = NULL;

    if (data[0] & 1) {
        schema = json_loads(text, 0, &jerr);
        g = schema ? fg_gram_from_schema(schema, err, sizeof(err)) : NULL;
        json_decref(schema);

    } else {
        g = fg_gram_from_gbnf(text, len, err, sizeof(err));
    }

    if (g != NULL && nul != NULL) {
        fuzz_feed(g, nul + 1, size - (nul + 1 - data));
    }

    fg_gram_free(g);
    free(text);

    return 0;
}
