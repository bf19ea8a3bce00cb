
/*
 * fairgate: the pre-tokenizers of byte-level BPE, which split a text into
 * the words that merges stay within: GPT-2's, Llama 3's and Qwen 2's
 * regular expressions, written out by hand as the matchers they amount to.
 * Every alternative is a run of one character class with an optional first
 * character, so no regex engine (and no PCRE dependency for the gateway)
 * is needed.  The letter and number classes come from fg_unicode.h.
 *
 * GPT-2:    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
 *           |\s+(?!\S)|\s+
 * Llama 3:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+
 *           |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * Qwen 2:   the same with \p{N} alone instead of \p{N}{1,3}
 *
 * Alternatives are tried in order and the first that matches wins, as in
 * the regex engines these come from.  Each matcher returns the length, in
 * code points, of the word at i; cp and cat hold the text's code points and
 * their classes.
 */


#include <stdlib.h>


#include "fg_tok_int.h"
#include "fg_unicode.h"


/* character classes of the pre-tokenizers */
#define FG_CAT_OTHER      0
#define FG_CAT_LETTER     1
#define FG_CAT_NUMBER     2
#define FG_CAT_SPACE      3


/* \p{L}, \p{N}, \s (White_Space) or something else */
static uint8_t
fg_uni_cat(uint32_t cp)
{
    size_t  lo, hi, mid;

    if (cp < 0x80) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
            return FG_CAT_LETTER;
        }

        if (cp >= '0' && cp <= '9') {
            return FG_CAT_NUMBER;
        }

        return (cp >= 9 && cp <= 13) || cp == ' ' ? FG_CAT_SPACE
                                                  : FG_CAT_OTHER;
    }

    /* Unicode's White_Space property beyond ASCII */
    if (cp == 0x85 || cp == 0xa0 || cp == 0x1680
        || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029
        || cp == 0x202f || cp == 0x205f || cp == 0x3000)
    {
        return FG_CAT_SPACE;
    }

    lo = 0;
    hi = sizeof(fg_unicode_ranges) / sizeof(fg_unicode_ranges[0]);

    while (lo < hi) {
        mid = (lo + hi) / 2;

        if (cp < fg_unicode_ranges[mid][0]) {
            hi = mid;

        } else if (cp > fg_unicode_ranges[mid][1]) {
            lo = mid + 1;

        } else {
            return (uint8_t) fg_unicode_ranges[mid][2];
        }
    }

    return FG_CAT_OTHER;
}


static inline uint32_t
fg_tok_lower(uint32_t c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}


static size_t
fg_tok_contraction(const uint32_t *cp, size_t i, size_t n, int icase)
{
    uint32_t  c1, c2;

    if (cp[i] != '\'' || i + 1 >= n) {
        return 0;
    }

    c1 = icase ? fg_tok_lower(cp[i + 1]) : cp[i + 1];

    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        return 2;
    }

    if (i + 2 >= n) {
        return 0;
    }

    c2 = icase ? fg_tok_lower(cp[i + 2]) : cp[i + 2];

    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e')
        || (c1 == 'l' && c2 == 'l'))
    {
        return 3;
    }

    return 0;
}


/* \s+(?!\S)|\s+ at a white-space run [i, e) */
static inline size_t
fg_tok_spaces(size_t i, size_t e, size_t n)
{
    /* leave the last space to the word after it */
    return e < n && e - i >= 2 ? e - i - 1 : e - i;
}


static size_t
fg_tok_pre_gpt2(const uint32_t *cp, const uint8_t *cat, size_t i, size_t n)
{
    size_t   j, k;
    uint8_t  c;

    k = fg_tok_contraction(cp, i, n, 0);
    if (k) {
        return k;
    }

    /* ' ?' then a run of letters, of numbers, or of other characters */
    j = cp[i] == ' ' && i + 1 < n && cat[i + 1] != FG_CAT_SPACE ? i + 1 : i;
    c = cat[j];

    if (c != FG_CAT_SPACE) {
        for (k = j + 1; k < n && cat[k] == c; k++) { /* void */ }
        return k - i;
    }

    for (k = i; k < n && cat[k] == FG_CAT_SPACE; k++) { /* void */ }

    return fg_tok_spaces(i, k, n);
}


static size_t
fg_tok_pre_llama3(const uint32_t *cp, const uint8_t *cat, size_t i,
    size_t n, size_t max_digits)
{
    size_t  j, k;

    k = fg_tok_contraction(cp, i, n, 1);
    if (k) {
        return k;
    }

    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    j = i;

    if (cat[j] != FG_CAT_LETTER && cat[j] != FG_CAT_NUMBER && cp[j] != '\r'
        && cp[j] != '\n' && j + 1 < n && cat[j + 1] == FG_CAT_LETTER)
    {
        j++;
    }

    if (cat[j] == FG_CAT_LETTER) {
        for (k = j + 1; k < n && cat[k] == FG_CAT_LETTER; k++) { /* void */ }
        return k - i;
    }

    /* \p{N}{1,3} */
    if (cat[i] == FG_CAT_NUMBER) {
        for (k = i + 1; k < n && k < i + max_digits && cat[k] == FG_CAT_NUMBER;
             k++)
        {
            /* void */
        }

        return k - i;
    }

    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    j = cp[i] == ' ' && i + 1 < n && cat[i + 1] == FG_CAT_OTHER ? i + 1 : i;

    if (cat[j] == FG_CAT_OTHER) {
        for (k = j + 1; k < n && cat[k] == FG_CAT_OTHER; k++) { /* void */ }
        for ( /* void */ ; k < n && (cp[k] == '\r' || cp[k] == '\n'); k++) {
            /* void */
        }

        return k - i;
    }

    /* white space: \s*[\r\n]+ ends at the run's last line break */
    for (k = i; k < n && cat[k] == FG_CAT_SPACE; k++) { /* void */ }

    for (j = k; j > i; j--) {
        if (cp[j - 1] == '\r' || cp[j - 1] == '\n') {
            return j - i;
        }
    }

    return fg_tok_spaces(i, k, n);
}


/* the text's code points and their classes; pos: their byte offsets */
size_t
fg_tok_classify(const char *s, size_t len, uint32_t *cp, uint8_t *cat,
    size_t *pos)
{
    size_t  i, n, clen;

    n = 0;

    /* a bad byte is a code point of its own, in no class */
    for (i = 0; i < len; i += clen) {
        clen = fg_tok_cp((const uint8_t *) s + i, len - i, &cp[n]);
        cat[n] = cp[n] == FG_TOK_BAD_CP ? FG_CAT_OTHER : fg_uni_cat(cp[n]);
        pos[n++] = i;
    }

    pos[n] = len;

    return n;
}


/* the length, in code points, of the word at i by t's rules */
size_t
fg_tok_word(const fg_tokenizer_t *t, const uint32_t *cp, const uint8_t *cat,
    size_t i, size_t n)
{
    return t->pre == FG_TOK_PRE_GPT2 ? fg_tok_pre_gpt2(cp, cat, i, n)
           : fg_tok_pre_llama3(cp, cat, i, n,
                               t->pre == FG_TOK_PRE_QWEN2 ? 1 : 3);
}


ssize_t
fg_tokenizer_split(const fg_tokenizer_t *t, const char *text, size_t len,
    size_t *ends, size_t max)
{
    size_t    i, n, w, k, *pos;
    uint8_t  *cat;
    uint32_t *cp;

    if (len == 0) {
        return 0;
    }

    if (t->model != FG_TOK_MODEL_BPE) {
        if (max > 0) {
            ends[0] = len;
        }

        return 1;
    }

    cp = malloc(len * sizeof(uint32_t));
    cat = malloc(len);
    pos = malloc((len + 1) * sizeof(size_t));

    if (cp == NULL || cat == NULL || pos == NULL) {
        free(cp);
        free(cat);
        free(pos);
        return -1;
    }

    n = fg_tok_classify(text, len, cp, cat, pos);
    k = 0;

    for (i = 0; i < n; i += w) {
        w = fg_tok_word(t, cp, cat, i, n);

        if (k < max) {
            ends[k] = pos[i + w];
        }

        k++;
    }

    free(cp);
    free(cat);
    free(pos);

    return (ssize_t) k;
}
