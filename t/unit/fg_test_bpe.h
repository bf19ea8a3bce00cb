
/*
 * fairgate: the tokenizers the tests and fuzzers build: the 256 byte
 * tokens of a byte-level BPE vocabulary (GPT-2's map of bytes to
 * printable code points, written again here), and a tokenizer loaded
 * from a GGUF writer's header in memory.
 */

#ifndef _FG_TEST_BPE_H_INCLUDED_
#define _FG_TEST_BPE_H_INCLUDED_


#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fg_gguf.h"
#include "fg_gguf_write.h"
#include "fg_tokenizer.h"


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


/* a GGUF header of a tokenizer: its model ("gpt2"), pre-tokenizer (NULL:
 * none), n tokens of these types and nm merges (0: none) */
static inline fg_gguf_writer_t *
fg_test_bpe_writer(const char *model, const char *pre,
    const char *const *tokens, const int32_t *types, uint32_t n,
    const char *const *merges, uint32_t nm)
{
    fg_gguf_writer_t  *w;

    w = fg_gguf_writer_new(3, 0);
    fg_gguf_w_str(w, "tokenizer.ggml.model", model);

    if (pre) {
        fg_gguf_w_str(w, "tokenizer.ggml.pre", pre);
    }

    fg_gguf_w_arr_str(w, "tokenizer.ggml.tokens", tokens, NULL, n);
    fg_gguf_w_arr(w, "tokenizer.ggml.token_type", FG_GGUF_INT32, types, n);

    if (nm) {
        fg_gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, NULL, nm);
    }

    return w;
}


/* the tokenizer of the header w holds, w freed; NULL and err filled when
 * it does not load */
static inline fg_tokenizer_t *
fg_test_tokenizer_load(fg_gguf_writer_t *w, char *err, size_t errlen)
{
    char            *buf;
    FILE            *f;
    size_t           size;
    fg_gguf_t       *g;
    fg_tokenizer_t  *t;

    f = open_memstream(&buf, &size);
    fg_gguf_w_write_header(w, f);
    fclose(f);
    fg_gguf_writer_free(w);

    g = fg_gguf_open_mem(buf, size, err, errlen);
    t = g ? fg_tokenizer_load(g, err, errlen) : NULL;

    fg_gguf_close(g);
    free(buf);

    return t;
}


#endif /* _FG_TEST_BPE_H_INCLUDED_ */
