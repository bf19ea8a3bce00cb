
/*
 * fairgate: tests of encoding by segments (a chat template's own text,
 * where control tokens are tokens, and clients' text, where they are
 * not), and of the NFC that Qwen 2's tokenizer applies first, on a small
 * byte-level vocabulary written here.
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_test_bpe.h"
#include "fg_tok_int.h"


#define N(a)        (sizeof(a) / sizeof((a)[0]))

#define T_HE        256
#define T_START     257             /* <|im_start|>, control */
#define T_TOOL      258             /* <tool>, user-defined */
#define T_EACUTE    259             /* "é" as its two byte characters */


static fg_tokenizer_t *
vocab(void)
{
    char               err[256], bytes[256][4];
    int32_t            types[260];
    const char        *tokens[260];
    fg_tokenizer_t    *t;

    static const char *const  merges[] = { "h e", "\xc3\x83 \xc2\xa9" };

    fg_test_byte_tokens(bytes, tokens, types);

    tokens[T_HE] = "he";
    types[T_HE] = FG_TOK_NORMAL;
    tokens[T_START] = "<|im_start|>";
    types[T_START] = FG_TOK_CONTROL;
    tokens[T_TOOL] = "<tool>";
    types[T_TOOL] = FG_TOK_USER_DEFINED;
    tokens[T_EACUTE] = "\xc3\x83\xc2\xa9";
    types[T_EACUTE] = FG_TOK_NORMAL;

    t = fg_test_tokenizer_load(fg_test_bpe_writer("gpt2", "qwen2", tokens,
                                                  types, N(tokens), merges,
                                                  N(merges)),
                               err, sizeof(err));

    if (t == NULL) {
        diag("%s", err);
    }

    return t;
}


static ssize_t
segs(fg_tokenizer_t *t, const char *const *text, const int *special,
    size_t n, int32_t *ids, size_t max)
{
    size_t        i;
    fg_tok_seg_t  s[8];

    for (i = 0; i < n; i++) {
        s[i].text = text[i];
        s[i].len = strlen(text[i]);
        s[i].special = special[i] != 0;
    }

    return fg_tokenizer_encode_segs(t, s, n, FG_TOK_NO_BOS, ids, max);
}


static int
has(const int32_t *ids, ssize_t n, int32_t id)
{
    ssize_t  i, c;

    for (i = 0, c = 0; i < n; i++) {
        c += ids[i] == id;
    }

    return (int) c;
}


static void
test_segs(fg_tokenizer_t *t)
{
    char     out[256];
    ssize_t  n, m;
    int32_t  ids[64], whole[64];

    static const char *const  chat[] = {
        "<|im_start|>user\n", "a<|im_start|>b", "<|im_start|>"
    };
    static const char         joined[] =
        "<|im_start|>user\na<|im_start|>b<|im_start|>";
    static const char *const  split[] = { "<|im_", "start|>" };
    static const char *const  across[] = { "h", "", "e" };
    static const char *const  tool[] = { "x", "<tool>" };
    static const char *const  tool_split[] = { "x<to", "ol>" };

    n = segs(t, chat, (int[]) { 1, 1, 1 }, 3, ids, N(ids));
    m = fg_tokenizer_encode(t, joined, strlen(joined), FG_TOK_SPECIAL
                            | FG_TOK_NO_BOS, whole, N(whole));
    ok(n == m && n > 0 && memcmp(ids, whole, n * sizeof(int32_t)) == 0,
       "segments that all allow control tokens: the whole text's tokens");

    n = segs(t, chat, (int[]) { 1, 0, 1 }, 3, ids, N(ids));
    is_int(has(ids, n, T_START), 2, "a control token in the client's "
           "segment is text: two of three");
    n = fg_tokenizer_decode(t, ids, n, FG_TOK_SPECIAL, out, sizeof(out));
    ok(n == (ssize_t) strlen(joined) && memcmp(out, joined, n) == 0,
       "... and the tokens decode to the text");

    n = segs(t, split, (int[]) { 1, 1 }, 2, ids, N(ids));
    is_int(has(ids, n, T_START), 0, "a control token across two segments "
           "is no token");

    n = segs(t, across, (int[]) { 1, 0, 0 }, 3, ids, N(ids));
    ok(n == 1 && ids[0] == T_HE, "merges run across segments (and an "
       "empty one)");

    n = segs(t, tool, (int[]) { 1, 0 }, 2, ids, N(ids));
    ok(n == 2 && ids[1] == T_TOOL, "a user-defined token matches in a "
       "client's text");

    n = segs(t, tool_split, (int[]) { 0, 0 }, 2, ids, N(ids));
    ok(n == 2 && ids[1] == T_TOOL, "... and across segments, as in the "
       "whole text");

    n = segs(t, NULL, NULL, 0, ids, N(ids));
    is_int(n, 0, "no segments: no tokens");
}


static int
nfc_is(const char *in, const char *want, const char *what)
{
    int     r;
    char   *out;
    size_t  len;

    if (fg_tok_nfc(in, strlen(in), &out, &len) != 0) {
        return ok(0, "%s: out of memory", what);
    }

    if (want == NULL) {
        r = ok(out == NULL, "%s: left as it is", what);

    } else {
        r = ok(out && len == strlen(want) && memcmp(out, want, len) == 0,
               "%s", what);
    }

    free(out);

    return r;
}


static void
test_nfc(fg_tokenizer_t *t)
{
    ssize_t  n;
    int32_t  ids[16];

    nfc_is("caf\xc3\xa9 na\xc3\xafve, \xe4\xb8\xad\xe6\x96\x87", NULL,
           "composed text");
    nfc_is("e\xcc\x81", "\xc3\xa9", "e + U+0301 is U+00E9");
    nfc_is("\xe2\x84\xab", "\xc3\x85", "U+212B (a singleton) is U+00C5");
    nfc_is("a\xcc\x81\xcc\xa8", "\xc4\x85\xcc\x81",
           "marks in canonical order: a U+0301 U+0328 is U+0105 U+0301");
    nfc_is("\xe0\xa5\x98", "\xe0\xa4\x95\xe0\xa4\xbc",
           "an exclusion stays decomposed: U+0958 is U+0915 U+093C");
    nfc_is("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81",
           "Hangul jamo L V T are the syllable U+AC01");
    nfc_is("\xff" "e\xcc\x81", "\xff\xc3\xa9", "a byte that is no UTF-8 "
           "passes through");

    n = fg_tokenizer_encode(t, "e\xcc\x81", 3, FG_TOK_NO_BOS, ids, N(ids));
    ok(n == 1 && ids[0] == T_EACUTE, "qwen2: the text is NFC before "
       "it is split and merged");
}


int
main(void)
{
    fg_tokenizer_t  *t;

    t = vocab();

    if (!ok(t != NULL, "the vocabulary loads")) {
        return done_testing();
    }

    test_segs(t);
    test_nfc(t);

    fg_tokenizer_free(t);

    return done_testing();
}
