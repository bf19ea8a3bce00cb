
/*
 * fairgate: Unicode's canonical composition (NFC), which Qwen 2 and 3's
 * tokenizers apply to the text before pre-tokenizing it: decompose every
 * character canonically, put combining marks in their canonical order,
 * then compose each starter with the marks that may join it.  The tables
 * are generated (fg_unicode_nfc.h, fg_unicode_nfd.h); Hangul syllables go
 * by formula.  Most texts hold no character that NFC could change and are
 * left as they are after one pass.  A byte that is not UTF-8 passes
 * through, a starter that composes with nothing.
 */


#include <stdlib.h>


#include "fg_tok_int.h"
#include "fg_unicode_nfc.h"
#include "fg_unicode_nfd.h"


#define FG_NFC_S_BASE   0xac00
#define FG_NFC_L_BASE   0x1100
#define FG_NFC_V_BASE   0x1161
#define FG_NFC_T_BASE   0x11a7
#define FG_NFC_L_COUNT  19
#define FG_NFC_V_COUNT  21
#define FG_NFC_T_COUNT  28
#define FG_NFC_N_COUNT  (FG_NFC_V_COUNT * FG_NFC_T_COUNT)
#define FG_NFC_S_COUNT  (FG_NFC_L_COUNT * FG_NFC_N_COUNT)

/* a byte that is not UTF-8, kept as it is */
#define FG_NFC_RAW      0x80000000u


#define FG_NFC_N(a)     (sizeof(a) / sizeof((a)[0]))


/* how fg_nfc_find() compares a row: its first column, its first two,
 * or the range they give */
#define FG_NFC_KEY      0
#define FG_NFC_PAIR     1
#define FG_NFC_RANGE    2


/* the row of a sorted table that holds (a, b) as how says, or -1 */
static ssize_t
fg_nfc_find(const uint32_t *t, size_t rows, size_t cols, uint32_t a,
    uint32_t b, int how)
{
    size_t           lo, hi, mid;
    uint32_t         lo_a, hi_a;
    const uint32_t  *r;

    lo = 0;
    hi = rows;

    while (lo < hi) {
        mid = (lo + hi) / 2;
        r = t + mid * cols;
        lo_a = r[0];
        hi_a = how == FG_NFC_RANGE ? r[1] : r[0];

        if (a < lo_a || (how == FG_NFC_PAIR && a == lo_a && b < r[1])) {
            hi = mid;

        } else if (a > hi_a || (how == FG_NFC_PAIR && b > r[1])) {
            lo = mid + 1;

        } else {
            return (ssize_t) mid;
        }
    }

    return -1;
}


static uint32_t
fg_nfc_ccc(uint32_t cp)
{
    ssize_t  i;

    i = fg_nfc_find(&fg_nfc_ccc_table[0][0],
                    FG_NFC_N(fg_nfc_ccc_table), 3, cp, 0, FG_NFC_RANGE);

    return i < 0 ? 0 : fg_nfc_ccc_table[i][2];
}


/* cp's full canonical decomposition into out: the number written */
static size_t
fg_nfc_decompose(uint32_t cp, uint32_t *out)
{
    size_t    n;
    ssize_t   i;
    uint32_t  s;

    if (cp >= FG_NFC_S_BASE && cp < FG_NFC_S_BASE + FG_NFC_S_COUNT) {
        s = cp - FG_NFC_S_BASE;
        out[0] = FG_NFC_L_BASE + s / FG_NFC_N_COUNT;
        out[1] = FG_NFC_V_BASE + (s % FG_NFC_N_COUNT) / FG_NFC_T_COUNT;

        if (s % FG_NFC_T_COUNT == 0) {
            return 2;
        }

        out[2] = FG_NFC_T_BASE + s % FG_NFC_T_COUNT;
        return 3;
    }

    i = (cp & FG_NFC_RAW) ? -1
        : fg_nfc_find(&fg_nfc_dec[0][0], FG_NFC_N(fg_nfc_dec), 3, cp, 0,
                      FG_NFC_KEY);

    if (i < 0) {
        out[0] = cp;
        return 1;
    }

    n = fg_nfc_decompose(fg_nfc_dec[i][1], out);

    if (fg_nfc_dec[i][2]) {
        n += fg_nfc_decompose(fg_nfc_dec[i][2], out + n);
    }

    return n;
}


/* the primary composite of a and b, or 0 */
static uint32_t
fg_nfc_compose(uint32_t a, uint32_t b)
{
    ssize_t  i;

    if (a >= FG_NFC_L_BASE && a < FG_NFC_L_BASE + FG_NFC_L_COUNT
        && b >= FG_NFC_V_BASE && b < FG_NFC_V_BASE + FG_NFC_V_COUNT)
    {
        return FG_NFC_S_BASE + ((a - FG_NFC_L_BASE) * FG_NFC_V_COUNT
                                + b - FG_NFC_V_BASE) * FG_NFC_T_COUNT;
    }

    if (a >= FG_NFC_S_BASE && a < FG_NFC_S_BASE + FG_NFC_S_COUNT
        && (a - FG_NFC_S_BASE) % FG_NFC_T_COUNT == 0
        && b > FG_NFC_T_BASE && b < FG_NFC_T_BASE + FG_NFC_T_COUNT)
    {
        return a + b - FG_NFC_T_BASE;
    }

    if ((a | b) & FG_NFC_RAW) {
        return 0;
    }

    i = fg_nfc_find(&fg_nfc_comp[0][0], FG_NFC_N(fg_nfc_comp), 3, a, b,
                    FG_NFC_PAIR);

    return i < 0 ? 0 : fg_nfc_comp[i][2];
}


/* whether NFC could change the text: one of its characters may */
static int
fg_nfc_needed(const char *s, size_t len)
{
    size_t    i;
    uint32_t  cp;

    for (i = 0; i < len; /* void */ ) {
        if ((uint8_t) s[i] < 0xcc) {
            i++;
            continue;
        }

        i += fg_tok_cp((const uint8_t *) s + i, len - i, &cp);

        if (fg_nfc_find(&fg_nfc_unstable[0][0], FG_NFC_N(fg_nfc_unstable),
                        2, cp, 0, FG_NFC_RANGE) >= 0)
        {
            return 1;
        }
    }

    return 0;
}


/* canonical order: a stable sort of each run of combining marks */
static void
fg_nfc_order(uint32_t *cp, size_t n)
{
    size_t    i, j;
    uint32_t  c, cc;

    for (i = 1; i < n; i++) {
        c = cp[i];
        cc = fg_nfc_ccc(c);

        if (cc == 0) {
            continue;
        }

        for (j = i; j > 0 && fg_nfc_ccc(cp[j - 1]) > cc; j--) {
            cp[j] = cp[j - 1];
        }

        cp[j] = c;
    }
}


/* canonical composition in place: the number of code points left */
static size_t
fg_nfc_compose_all(uint32_t *cp, size_t n)
{
    size_t    i, o;
    ssize_t   starter;
    uint32_t  c, cc, last, p;

    starter = -1;
    last = 0;
    o = 0;

    for (i = 0; i < n; i++) {
        c = cp[i];
        cc = fg_nfc_ccc(c);

        /* blocked: a mark between of the same class or higher, or a
         * starter (which last is 0 for) */
        if (starter >= 0
            && ((ssize_t) o - 1 == starter || last < cc))
        {
            p = fg_nfc_compose(cp[starter], c);

            if (p) {
                cp[starter] = p;
                continue;
            }
        }

        if (cc == 0) {
            starter = (ssize_t) o;
        }

        cp[o++] = c;
        last = cc;
    }

    return o;
}


int
fg_tok_nfc(const char *s, size_t len, char **out, size_t *out_len)
{
    char      *d;
    size_t     i, n, k, clen;
    uint32_t  *cp, c;

    *out = NULL;

    if (!fg_nfc_needed(s, len)) {
        return 0;
    }

    /* a code point decomposes into 4 at most, and takes 4 bytes at most */
    cp = malloc((4 * len + 4) * sizeof(uint32_t));
    d = malloc(16 * len + 16);

    if (cp == NULL || d == NULL) {
        free(cp);
        free(d);
        return -1;
    }

    n = 0;

    for (i = 0; i < len; i += clen) {
        clen = fg_tok_cp((const uint8_t *) s + i, len - i, &c);
        c = c == FG_TOK_BAD_CP ? FG_NFC_RAW | (uint8_t) s[i] : c;
        n += fg_nfc_decompose(c, cp + n);
    }

    fg_nfc_order(cp, n);
    n = fg_nfc_compose_all(cp, n);

    for (i = 0, k = 0; i < n; i++) {
        if (cp[i] & FG_NFC_RAW) {
            d[k++] = (char) (cp[i] & 0xff);

        } else {
            k += fg_utf8_encode(cp[i], (uint8_t *) d + k);
        }
    }

    free(cp);

    *out = d;
    *out_len = k;

    return 0;
}
