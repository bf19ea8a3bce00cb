
/*
 * fairgate: GBNF: what each construct takes and refuses, the errors and
 * where they point, the matcher's masks over a byte-level vocabulary
 * (tokens across elements, characters cut between tokens, EOG where the
 * grammar is complete) and its bounds.
 */


#include <stdio.h>

#include "fg_tap.h"
#include "fg_test_gram.h"


typedef struct {
    const char  *gbnf;
    const char  *yes[6];
    const char  *no[6];
} fg_test_lang_t;


static const fg_test_lang_t  fg_test_langs[] = {
    { "root ::= \"a\" [b-d]+ \"e\"?",
      { "ab", "abce", "adddd", NULL }, { "a", "abx", "", "abee", NULL } },
    { "root ::= [^a-c\\n] .",
      { "xy", "dé", "9\n", NULL }, { "ay", "\nx", "x", NULL } },
    { "root ::= \"x\"{2,3} \"y\"{2} \"z\"{1,} \"w\"{,2}",
      { "xxyyz", "xxxyyzzzww", NULL },
      { "xyyz", "xxxxyyz", "xxyz", "xxyy", "xxyyzwww", NULL } },
    { "# a comment\nroot ::= ( \"a\" | \"b\"  # in a group\n"
      "  | \"c\" )* end\nend ::= \"!\"   # end\n",
      { "!", "abca!", NULL }, { "", "d!", "a", NULL } },
    { "root ::= \"\\x41\\u00e9\\n\\\"\" [\\x30-\\x39\\]]",
      { "A\xc3\xa9\n\"5", "Aé\n\"]", NULL }, { "Ae\n\"5", NULL } },
    { "root ::= \"é€\" | \"😀\"",
      { "é€", "😀", NULL }, { "é", "€", "\xc3", NULL } },
    { "root ::= list\nlist ::= \"[\" ( item ( \",\" item )* )? \"]\"\n"
      "item ::= list | [0-9]",
      { "[]", "[1,[2,[]],3]", NULL }, { "[", "[1,]", "[[]", NULL } },
    { "root ::= (\"ab\")* \"a\"",
      { "a", "aba", "ababa", NULL }, { "ab", "", NULL } },
};


typedef struct {
    const char  *gbnf;
    const char  *err;
} fg_test_bad_t;


static const fg_test_bad_t  fg_test_bads[] = {
    { "root ::= foo", "line 1, column 10: rule \"foo\" is not defined" },
    { "main ::= \"a\"", "no rule named \"root\"" },
    { "root ::= \"abc", "line 1, column 14: the string is not closed" },
    { "root ::= [a-", "line 1, column 13: the class is not closed" },
    { "root \"a\"", "line 1, column 6: expected \"::=\"" },
    { "root ::= \"a\"\n\nroot ::= \"b\"", "line 3, column 6: rule \"root\" "
      "is defined twice" },
    { "root ::= root \"a\" | \"b\"", "rule \"root\" is left-recursive" },
    { "root ::= x\nx ::= y? x \"a\"\ny ::= \"b\"",
      "rule \"x\" is left-recursive" },
    { "root ::= ( \"a\"* )*", "is left-recursive" },
    { "root ::= \"a\"{1001}", "line 1, column 18: a repetition over 1000" },
    { "root ::= \"a\"{3,2}", "line 1, column 18: {3,2}: the most is under "
      "the least" },
    { "root ::= * \"a\"", "line 1, column 10: \"*\" follows nothing" },
    { "root ::= \"\\q\"", "line 1, column 12: unknown escape \"\\q\"" },
    { "root ::= [z-a]", "line 1, column 14: the range ends before" },
    { "root ::= ( \"a\" ", "line 1, column 16: expected \")\"" },
    { "root ::= \"a\" )", "line 1, column 14: unexpected \")\"" },
    { "root ::= \"\xff\"", "line 1, column 11: invalid UTF-8" },
};


static void
fg_test_langs_run(const fg_gram_vocab_t *v)
{
    char        err[256];
    size_t      i, k;
    fg_gram_t  *g;

    for (i = 0; i < sizeof(fg_test_langs) / sizeof(fg_test_langs[0]); i++) {
        err[0] = '\0';
        g = fg_gram_from_gbnf(fg_test_langs[i].gbnf,
                              strlen(fg_test_langs[i].gbnf), err,
                              sizeof(err));

        if (!ok(g != NULL, "grammar %zu compiles", i)) {
            diag("%s", err);
            continue;
        }

        for (k = 0; fg_test_langs[i].yes[k]; k++) {
            ok(fg_test_gram_takes(g, v, fg_test_langs[i].yes[k]),
               "grammar %zu takes \"%s\"", i,
               fg_test_gram_show(fg_test_langs[i].yes[k]));
        }

        for (k = 0; fg_test_langs[i].no[k]; k++) {
            ok(!fg_test_gram_takes(g, v, fg_test_langs[i].no[k]),
               "grammar %zu refuses \"%s\"", i,
               fg_test_gram_show(fg_test_langs[i].no[k]));
        }

        fg_gram_free(g);
    }
}


static void
fg_test_bads_run(void)
{
    char        err[256];
    size_t      i;
    fg_gram_t  *g;

    for (i = 0; i < sizeof(fg_test_bads) / sizeof(fg_test_bads[0]); i++) {
        err[0] = '\0';
        g = fg_gram_from_gbnf(fg_test_bads[i].gbnf,
                              strlen(fg_test_bads[i].gbnf), err,
                              sizeof(err));
        ok(g == NULL, "bad grammar %zu refused", i);

        if (!ok(strstr(err, fg_test_bads[i].err) != NULL,
                "its error: %s", fg_test_bads[i].err))
        {
            diag("got: %s", err);
        }

        fg_gram_free(g);
    }
}


/* the id of a token of the synthetic vocabulary, by its bytes */
static int32_t
fg_test_tok(const char *piece)
{
    size_t  i, k;

    if (strlen(piece) == 1) {
        return (uint8_t) piece[0];
    }

    k = sizeof(fg_test_gram_pieces) / sizeof(fg_test_gram_pieces[0]);

    for (i = 0; i < k; i++) {
        if (strcmp(fg_test_gram_pieces[i], piece) == 0) {
            return 256 + i;
        }
    }

    return -1;
}


static void fg_test_shared(const fg_gram_t *g, const fg_gram_vocab_t *v);


static int
fg_test_bit(const uint32_t *bits, int32_t t)
{
    return t >= 0 && ((bits[t >> 5] >> (t & 31)) & 1);
}


static void
fg_test_masks(const fg_gram_vocab_t *v, uint32_t eog)
{
    char              err[256];
    float            *logits;
    int64_t           n;
    uint32_t         *bits, i;
    fg_gram_t        *g;
    fg_gram_match_t  *m;
    static const char gbnf[] = "root ::= \"{\\\"a\\\": \" [0-9]+ \"}\" "
                               "| \"é€\"";

    g = fg_gram_from_gbnf(gbnf, strlen(gbnf), err, sizeof(err));
    m = g ? fg_gram_match_new(g, v, 4) : NULL;
    bits = calloc((fg_gram_vocab_size(v) + 31) / 32, sizeof(uint32_t));
    logits = calloc(fg_gram_vocab_size(v), sizeof(float));

    if (!ok(m != NULL && bits != NULL, "a matcher")) {
        return;
    }

    n = fg_gram_mask(m, bits);
    is_int(n, 5, "five tokens begin it: {, {\", é, and é's first byte as "
           "the byte token and as a piece");
    ok(fg_test_bit(bits, fg_test_tok("{\""))
       && fg_test_bit(bits, fg_test_tok("\xc3"))
       && !fg_test_bit(bits, fg_test_tok("\xe2\x82"))
       && !fg_test_bit(bits, eog), "the tokens: {\" and \\xc3, no EOG");
    is_int(fg_gram_accept(m, fg_test_tok("\xe2\x82")), -1,
           "a token the mask refuses is refused");
    is_int(fg_gram_accept(m, fg_test_tok("{\"")), 0, "{\" spans two "
           "elements");
    n = fg_gram_mask(m, bits);
    ok(n == 1 && fg_test_bit(bits, 'a'), "then only a");
    ok(fg_gram_accept(m, 'a') == 0
       && fg_gram_accept(m, fg_test_tok("\": \"")) == -1
       && fg_gram_accept(m, fg_test_tok("\":")) == 0
       && fg_gram_accept(m, ' ') == 0, "a\": but not a\": \"");
    n = fg_gram_mask(m, bits);
    ok(n == 12 && fg_test_bit(bits, fg_test_tok("00"))
       && fg_test_bit(bits, fg_test_tok("12"))
       && !fg_test_bit(bits, fg_test_tok("-1")),
       "digits: ten bytes, 00, 12 (%lld)", (long long) n);
    ok(fg_gram_accept(m, fg_test_tok("12")) == 0 && !fg_gram_complete(m),
       "12, not complete");
    n = fg_gram_mask(m, bits);
    ok(fg_test_bit(bits, '}') && !fg_test_bit(bits, eog), "} and no EOG");
    ok(fg_gram_accept(m, '}') == 0 && fg_gram_complete(m), "} completes");
    n = fg_gram_mask(m, bits);
    ok(n == 1 && fg_test_bit(bits, eog), "only EOG then");

    for (i = 0; i < fg_gram_vocab_size(v); i++) {
        logits[i] = 1.0f;
    }

    fg_gram_bias(m, logits);
    ok(logits[eog] == 1.0f && isinf(logits['}']) && logits['}'] < 0,
       "as a bias: -inf but EOG");
    ok(fg_gram_accept(m, eog) == 0 && fg_gram_done(m), "EOG: done");
    fg_test_shared(g, v);
    is_int(fg_gram_mask(m, bits), 0, "nothing after EOG");
    fg_gram_match_free(m);

    /* a character cut between tokens */
    m = fg_gram_match_new(g, v, 0);
    ok(m != NULL && fg_gram_accept(m, fg_test_tok("\xc3")) == 0
       && !fg_gram_complete(m), "half of é");
    n = fg_gram_mask(m, bits);
    ok(fg_test_bit(bits, 0xa9) && !fg_test_bit(bits, fg_test_tok("\xa9x"))
       && !fg_test_bit(bits, 'a'), "its last byte, not with x after");
    ok(fg_gram_accept(m, 0xa9) == 0 && fg_gram_accept(m, 0xe2) == 0
       && fg_gram_accept(m, fg_test_tok("\x82\xac")) == 0
       && fg_gram_complete(m), "é€ in three tokens");

    fg_gram_match_free(m);
    fg_gram_free(g);
    free(bits);
    free(logits);
}


static void fg_test_ambiguous(const fg_gram_vocab_t *v);


/* a cache shared by matchers: of its own grammar only */
static void
fg_test_shared(const fg_gram_t *g, const fg_gram_vocab_t *v)
{
    char              err[256];
    fg_gram_t        *g2;
    fg_gram_cache_t  *c;
    fg_gram_match_t  *m, *m2;

    g2 = fg_gram_from_gbnf("root ::= \"x\"", 12, err, sizeof(err));
    c = fg_gram_cache_new(g, v, 2);
    m = c ? fg_gram_match_shared(g, v, c) : NULL;
    m2 = g2 && c ? fg_gram_match_shared(g2, v, c) : NULL;
    ok(m != NULL && m2 == NULL, "a shared cache serves its own grammar "
       "only");

    fg_gram_match_free(m);
    fg_gram_match_free(m2);
    fg_gram_cache_free(c);
    fg_gram_free(g2);
}


static void
fg_test_bounds(const fg_gram_vocab_t *v)
{
    char              err[256], text[8192];
    size_t            i;
    fg_gram_t        *g;
    fg_gram_match_t  *m;
    static const char nest[] = "root ::= \"(\" root \")\" | \"x\"";

    g = fg_gram_from_gbnf(nest, strlen(nest), err, sizeof(err));
    m = g ? fg_gram_match_new(g, v, 0) : NULL;
    memset(text, '(', 200);
    text[200] = 'x';
    ok(m != NULL && fg_gram_accept_bytes(m, text, 201) == 0,
       "200 groups deep");
    fg_gram_match_free(m);

    m = g ? fg_gram_match_new(g, v, 0) : NULL;
    memset(text, '(', 300);
    ok(m != NULL && fg_gram_accept_bytes(m, text, 300) == -1,
       "300 are over the depth: refused, not grown");
    fg_gram_match_free(m);
    fg_gram_free(g);

    /* 300 alternatives that all begin alike: too many stacks at once */
    snprintf(text, sizeof(text), "root ::= \"a\" \"0\"");

    for (i = 1; i < 300; i++) {
        snprintf(text + strlen(text), sizeof(text) - strlen(text),
                 " | \"a\" \"%zu\"", i);
    }

    g = fg_gram_from_gbnf(text, strlen(text), err, sizeof(err));
    ok(g != NULL && fg_gram_match_new(g, v, 0) == NULL,
       "300 stacks at the start: no matcher");
    fg_gram_free(g);

    fg_test_ambiguous(v);
}


/* an ambiguous grammar, its stacks growing with each "(": the work of a
 * step is bounded, and past it the matcher fails instead of slowing */
static void
fg_test_ambiguous(const fg_gram_vocab_t *v)
{
    int               i;
    char              err[256];
    int64_t           n;
    uint32_t          bits[64];
    fg_gram_t        *g;
    fg_gram_match_t  *m;
    static const char gbnf[] = "root ::= ( \"(\" root \")\"* )* "
                               "| [^\\-\\x1f]";

    g = fg_gram_from_gbnf(gbnf, strlen(gbnf), err, sizeof(err));
    m = g ? fg_gram_match_new(g, v, 0) : NULL;
    n = 0;

    for (i = 0; m != NULL && i < 300; i++) {
        n = fg_gram_mask(m, bits);

        if (n <= 0 || fg_gram_accept(m, '(') != 0) {
            break;
        }
    }

    ok(m != NULL && i > 5 && i < 300 && n == -1,
       "an ambiguous grammar: the matcher fails after %d steps", i);
    ok(m != NULL && fg_gram_mask(m, bits) == 0
       && fg_gram_accept(m, '(') == -1, "and allows nothing after");

    fg_gram_match_free(m);
    fg_gram_free(g);
}


int
main(void)
{
    uint32_t          eog;
    fg_gram_vocab_t  *v;

    v = fg_test_gram_vocab(&eog);

    if (!ok(v != NULL, "the synthetic vocabulary")) {
        return done_testing();
    }

    fg_test_langs_run(v);
    fg_test_bads_run();
    fg_test_masks(v, eog);
    fg_test_bounds(v);

    fg_gram_vocab_free(v);

    return done_testing();
}
