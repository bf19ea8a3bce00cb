
/*
 * fairgate: libFuzzer target for the tokenizer on arbitrary text, checking
 * properties rather than only memory safety:
 *
 *   - decode(encode(text)) is the text, byte for byte (SentencePiece with
 *     the prefix space stripped, and byte-level BPE; Qwen 2's: the text's
 *     NFC, which its tokenizer encodes);
 *   - the count fits the documented bound (3 * len + 8);
 *   - the stream decoder's output is valid UTF-8 and, for valid UTF-8
 *     text, is the text;
 *   - the pre-tokenizer's words tile the text;
 *   - the text cut in two segments encodes as the whole text does.
 *
 * Tokenizers: stories260K's (FG_STORIES, else ../shared/models/) and small
 * byte-level BPE vocabularies written here for each pre-tokenizer.
 *
 *     make fuzz-tokenizer && build/fuzz/fuzz_tokenizer -max_len=512
 */


#define _GNU_SOURCE         /* memmem */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gguf_write.h"
#include "fg_tok_int.h"
#include "fg_tokenizer.h"

#include "../unit/fg_test_bpe.h"


#define FG_FUZZ_NTOK  4


int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static fg_tokenizer_t  *toks[FG_FUZZ_NTOK];
static int              n_toks;


static fg_tokenizer_t *
bpe(const char *pre)
{
    int                i;
    char               err[FG_GGUF_ERR_LEN], bytes[256][4];
    int32_t            types[256 + 7];
    fg_tokenizer_t    *t;
    const char        *tokens[256 + 7];
    fg_gguf_writer_t  *w;

    static const char *const  extra[] = {
        "he", "ll", "hell", "hello", "\xc4\xa0t", "<|endoftext|>", "<tool>"
    };
    static const char *const  merges[] = {
        "h e", "l l", "he ll", "hell o", "\xc4\xa0 t"
    };

    fg_test_byte_tokens(bytes, tokens, types);

    for (i = 0; i < 7; i++) {
        tokens[256 + i] = extra[i];
        types[256 + i] = i < 5 ? FG_TOK_NORMAL
                         : i == 5 ? FG_TOK_CONTROL : FG_TOK_USER_DEFINED;
    }

    w = fg_test_bpe_writer("gpt2", pre, tokens, types, 263, merges, 5);

    t = fg_test_tokenizer_load(w, err, sizeof(err));

    if (t == NULL) {
        fprintf(stderr, "fuzz_tokenizer: %s: %s\n", pre, err);
        abort();
    }

    return t;
}


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char         err[FG_GGUF_ERR_LEN];
    fg_gguf_t   *g;
    const char  *path;

    (void) argc;
    (void) argv;

    path = getenv("FG_STORIES") ? getenv("FG_STORIES")
                                : "../shared/models/stories260K.gguf";

    g = fg_gguf_open(path, err, sizeof(err));

    if (g) {
        toks[n_toks] = fg_tokenizer_load(g, err, sizeof(err));
        fg_gguf_close(g);
    }

    if (toks[n_toks] == NULL) {
        fprintf(stderr, "fuzz_tokenizer: %s (set FG_STORIES)\n", err);
        abort();
    }

    n_toks++;
    toks[n_toks++] = bpe("llama-bpe");
    toks[n_toks++] = bpe("qwen2");
    toks[n_toks++] = bpe("gpt2");

    return 0;
}


/* whether s is valid UTF-8 (strict: no overlongs, no surrogates) */
static int
utf8_valid(const uint8_t *s, size_t len)
{
    size_t   i, n, k;
    uint8_t  lo, hi;

    for (i = 0; i < len; i += n) {
        if (s[i] < 0x80) {
            n = 1;
            continue;
        }

        if (s[i] < 0xc2 || s[i] > 0xf4) {
            return 0;
        }

        n = s[i] < 0xe0 ? 2 : s[i] < 0xf0 ? 3 : 4;
        lo = s[i] == 0xe0 ? 0xa0 : s[i] == 0xf0 ? 0x90 : 0x80;
        hi = s[i] == 0xed ? 0x9f : s[i] == 0xf4 ? 0x8f : 0xbf;

        for (k = 1; k < n; k++) {
            if (i + k >= len || s[i + k] < lo || s[i + k] > hi) {
                return 0;
            }

            lo = 0x80;
            hi = 0xbf;
        }
    }

    return 1;
}


/* two segments of text (no control tokens matched) are the whole text */
static void
fuzz_segs(fg_tokenizer_t *t, const char *text, size_t len, int32_t *ids,
    size_t max)
{
    ssize_t        n, m;
    int32_t       *whole;
    fg_tok_seg_t   seg[2];

    seg[0].text = text;
    seg[0].len = len / 3;
    seg[0].special = 0;
    seg[1].text = text + len / 3;
    seg[1].len = len - len / 3;
    seg[1].special = 0;

    whole = malloc(max * sizeof(int32_t));

    n = fg_tokenizer_encode_segs(t, seg, 2, 0, ids, max);
    m = fg_tokenizer_encode(t, text, len, 0, whole, max);

    if (n != m || n < 0 || memcmp(ids, whole, n * sizeof(int32_t)) != 0) {
        fprintf(stderr, "segments: %zd tokens, the whole text %zd\n", n, m);
        abort();
    }

    free(whole);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int               which, flags, spm;
    char             *text, *out, *streamed;
    size_t            len, i, k, slen, *ends, max, out_size;
    int32_t          *ids;
    ssize_t           n, d, w, m;
    fg_tokenizer_t   *t;
    fg_tok_stream_t   st;

    if (size < 1) {
        return 0;
    }

    which = data[0] % n_toks;
    t = toks[which];
    spm = fg_tokenizer_model(t) == FG_TOK_MODEL_SPM;

    /* special tokens round-trip in BPE; in SentencePiece a space follows
     * each (and BOS comes first), so the text would not */
    flags = spm ? 0 : (data[0] >> 2) & FG_TOK_SPECIAL;

    len = size - 1;
    text = malloc(len + 1);
    memcpy(text, data + 1, len);
    text[len] = '\0';

    /* Qwen 2's tokenizer encodes the text's NFC: the properties hold for
     * that (NFC of NFC is itself) */
    if (fg_tokenizer_pre(t) == FG_TOK_PRE_QWEN2
        && fg_tok_nfc(text, len, &out, &slen) == 0 && out)
    {
        free(text);
        text = out;
        len = slen;
        text[len] = '\0';
    }

    max = 3 * len + 8;
    ids = malloc(max * sizeof(int32_t));

    n = fg_tokenizer_encode(t, text, len, flags, ids, max);

    if (n < 0 || (size_t) n > max) {
        fprintf(stderr, "encode: %zd tokens for %zu bytes\n", n, len);
        abort();
    }

    out_size = 4 * len + 64;
    out = malloc(out_size);

    fuzz_segs(t, text, len, ids, max);
    n = fg_tokenizer_encode(t, text, len, flags, ids, max);

    d = fg_tokenizer_decode(t, ids, n, FG_TOK_STRIP_SPACE | flags, out,
                            out_size);

    /* U+2581 in the text decodes as a space: no byte round trip then */
    if (!(spm && memmem(text, len, "\xe2\x96\x81", 3))
        && (d != (ssize_t) len || memcmp(out, text, len) != 0))
    {
        fprintf(stderr, "round trip: %zu bytes in, %zd out\n", len, d);
        abort();
    }

    /* the stream: valid UTF-8 always, the text itself when it was */
    streamed = malloc(3 * len + 3 * n + 16);
    m = FG_TOK_STREAM_OUT(fg_tokenizer_max_piece(t));
    slen = 0;

    fg_tok_stream_init(&st);

    for (i = 0; i < (size_t) n; i++) {
        w = fg_tok_stream_push(t, &st, ids[i], FG_TOK_STRIP_SPACE | flags,
                               out, m <= (ssize_t) out_size ? out_size
                                                            : (size_t) m);

        if (w < 0) {
            if (m > (ssize_t) out_size) {
                break;
            }

            abort();
        }

        memcpy(streamed + slen, out, w);
        slen += w;
    }

    slen += fg_tok_stream_flush(&st, streamed + slen, 3);

    if (i == (size_t) n) {
        if (!utf8_valid((uint8_t *) streamed, slen)) {
            fprintf(stderr, "stream: invalid UTF-8 out\n");
            abort();
        }

        if (utf8_valid((uint8_t *) text, len)
            && !(spm && memmem(text, len, "\xe2\x96\x81", 3))
            && (slen != len || memcmp(streamed, text, len) != 0))
        {
            fprintf(stderr, "stream: not the text\n");
            abort();
        }
    }

    /* the words tile the text */
    ends = malloc((len + 1) * sizeof(size_t));
    n = fg_tokenizer_split(t, text, len, ends, len + 1);

    for (i = 0, k = 0; n > 0 && i < (size_t) n; i++) {
        if (ends[i] <= k || ends[i] > len) {
            fprintf(stderr, "split: word %zu ends at %zu after %zu\n", i,
                    ends[i], k);
            abort();
        }

        k = ends[i];
    }

    if (len > 0 && k != len) {
        abort();
    }

    free(ends);
    free(streamed);
    free(out);
    free(ids);
    free(text);

    return 0;
}
