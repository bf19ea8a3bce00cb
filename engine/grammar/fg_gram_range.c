
/*
 * fairgate: an integer schema's bounds (minimum, maximum and their
 * exclusive forms) as grammar.
 *
 * The integers from lo to hi are split by their count of digits; lo..hi
 * of one length n is written digit by digit: a shared first digit, then
 * the rest; else the first digit of lo with the rest from lo's up to
 * nines, the digits between with any n - 1 digits, and the first digit of
 * hi with the rest from zeros up to hi's.  Negative bounds write "-" and
 * the magnitudes.  Integers have at most 16 digits, as the unbounded
 * integer rule has: a bound beyond them is held to one past them, where
 * a minimum below them or a maximum above them bounds nothing (zod's
 * integers come with JavaScript's safe range, +-(2^53 - 1), 16 digits),
 * and one that leaves no integer of 16 digits is refused.
 */


#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fg_gram_schema.h"


#define FG_GS_INT_MAX   9999999999999999LL  /* 16 digits */
#define FG_GS_PAST      (FG_GS_INT_MAX + 1)


static const char  fg_gs_nines[] = "9999999999999999";
static const char  fg_gs_zeros[] = "0000000000000000";


static int fg_gs_span(fg_gs_text_t *t, const char *lo, const char *hi,
    size_t n);


static int
fg_gs_all(const char *s, size_t n, char c)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (s[i] != c) {
            return 0;
        }
    }

    return 1;
}


/* the n-digit strings from lo to hi (lo <= hi) */
static int
fg_gs_span(fg_gs_text_t *t, const char *lo, const char *hi, size_t n)
{
    int   first;
    char  a, z;

    if (n == 0) {
        return 0;
    }

    if (lo[0] == hi[0]) {
        return fg_gs_printf(t, "\"%c\" ", lo[0])
               || fg_gs_span(t, lo + 1, hi + 1, n - 1);
    }

    if (n == 1) {
        return fg_gs_printf(t, "[%c-%c] ", lo[0], hi[0]);
    }

    first = 1;
    a = lo[0];
    z = fg_gs_all(hi + 1, n - 1, '9') ? hi[0] : hi[0] - 1;

    if (fg_gs_add(t, "( ") != 0) {
        return -1;
    }

    if (!fg_gs_all(lo + 1, n - 1, '0')) {
        if (fg_gs_printf(t, "\"%c\" ", a) != 0
            || fg_gs_span(t, lo + 1, fg_gs_nines, n - 1) != 0)
        {
            return -1;
        }

        a++;
        first = 0;
    }

    if (a <= z) {
        if (fg_gs_printf(t, "%s[%c-%c] [0-9]{%zu} ", first ? "" : "| ", a, z,
                         n - 1) != 0)
        {
            return -1;
        }

        first = 0;
    }

    if (z < hi[0]) {
        if (fg_gs_printf(t, "%s\"%c\" ", first ? "" : "| ", hi[0]) != 0
            || fg_gs_span(t, fg_gs_zeros, hi + 1, n - 1) != 0)
        {
            return -1;
        }
    }

    return fg_gs_add(t, ") ");
}


/* the integers from a to b, 0 <= a <= b <= FG_GS_INT_MAX */
static int
fg_gs_range(fg_gs_text_t *t, long long a, long long b)
{
    char       lo[24], hi[24];
    size_t     d, na, nb;
    long long  p, x, y;

    na = snprintf(lo, sizeof(lo), "%lld", a);
    nb = snprintf(hi, sizeof(hi), "%lld", b);

    if (fg_gs_add(t, "( ") != 0) {
        return -1;
    }

    for (d = na, p = 1; d > 1; d--) {
        p *= 10;
    }

    for (d = na; d <= nb; d++, p *= 10) {
        x = d == na ? a : p;
        y = d == nb ? b : p * 10 - 1;
        snprintf(lo, sizeof(lo), "%lld", x);
        snprintf(hi, sizeof(hi), "%lld", y);

        if ((d > na && fg_gs_add(t, "| ") != 0)
            || fg_gs_span(t, lo, hi, d) != 0)
        {
            return -1;
        }
    }

    return fg_gs_add(t, ")");
}


/* the integers from lo to hi, -FG_GS_INT_MAX <= lo <= hi <= FG_GS_INT_MAX */
static int
fg_gs_ints(fg_gs_text_t *t, long long lo, long long hi)
{
    if (lo < 0) {
        if (fg_gs_add(t, "\"-\" ") != 0
            || fg_gs_range(t, hi < 0 ? -hi : 1, -lo) != 0
            || (hi >= 0 && fg_gs_add(t, " | ") != 0))
        {
            return -1;
        }
    }

    if (hi >= 0) {
        return fg_gs_range(t, lo > 0 ? lo : 0, hi);
    }

    return 0;
}


/*
 * a bound as the integer it lets in (the least for a lower bound, the
 * most for an upper one), held within one past 16 digits: 0 when absent,
 * 1 when there, -1 when refused
 */
static int
fg_gs_bound(fg_gs_t *s, const json_t *schema, const char *key,
    const char *path, int lower, long long *b)
{
    int        exclusive;
    double     v;
    json_t    *j;
    long long  i;

    j = json_object_get(schema, key);

    if (j == NULL) {
        return 0;
    }

    if (!json_is_number(j)) {
        return fg_gs_error(s, key, path, "must be a number");
    }

    exclusive = strncmp(key, "exclusive", 9) == 0;

    if (json_is_integer(j)) {
        i = json_integer_value(j);
        i = i > FG_GS_PAST ? FG_GS_PAST : (i < -FG_GS_PAST ? -FG_GS_PAST : i);
        *b = exclusive ? (lower ? i + 1 : i - 1) : i;

    } else {
        v = json_real_value(j);
        v = v > FG_GS_PAST ? FG_GS_PAST : (v < -FG_GS_PAST ? -FG_GS_PAST : v);
        *b = lower ? (exclusive ? (long long) floor(v) + 1
                                : (long long) ceil(v))
                   : (exclusive ? (long long) ceil(v) - 1
                                : (long long) floor(v));
    }

    if (lower ? *b > FG_GS_INT_MAX : *b < -FG_GS_INT_MAX) {
        return fg_gs_error(s, key, path,
                           "leaves no integer of 16 digits or fewer");
    }

    return 1;
}


int
fg_gs_integer(fg_gs_t *s, const json_t *schema, const char *path,
    fg_gs_text_t *t)
{
    int        r[4];
    long long  b[4], lo, hi;

    if (json_object_get(schema, "multipleOf") != NULL) {
        return fg_gs_error(s, "multipleOf", path, "is not supported");
    }

    r[0] = fg_gs_bound(s, schema, "minimum", path, 1, &b[0]);
    r[1] = fg_gs_bound(s, schema, "exclusiveMinimum", path, 1, &b[1]);
    r[2] = fg_gs_bound(s, schema, "maximum", path, 0, &b[2]);
    r[3] = fg_gs_bound(s, schema, "exclusiveMaximum", path, 0, &b[3]);

    if (r[0] < 0 || r[1] < 0 || r[2] < 0 || r[3] < 0) {
        return -1;
    }

    if (!r[0] && !r[1] && !r[2] && !r[3]) {
        return fg_gs_need(s, FG_GS_INTEGER) || fg_gs_add(t, "integer");
    }

    lo = -FG_GS_INT_MAX;
    hi = FG_GS_INT_MAX;
    lo = r[0] && b[0] > lo ? b[0] : lo;
    lo = r[1] && b[1] > lo ? b[1] : lo;
    hi = r[2] && b[2] < hi ? b[2] : hi;
    hi = r[3] && b[3] < hi ? b[3] : hi;

    if (lo > hi) {
        return fg_gs_error(s, r[2] ? "maximum" : "exclusiveMaximum", path,
                           "leaves no integer above the minimum");
    }

    return fg_gs_ints(t, lo, hi);
}


/*
 * a number's bound: an integer, held within one past 16 digits as an
 * integer's; 0 when absent, 1 when there, -1 when refused
 */
static int
fg_gs_limit(fg_gs_t *s, const json_t *schema, const char *key,
    const char *path, long long *b)
{
    double     v;
    json_t    *j;
    long long  i;

    j = json_object_get(schema, key);

    if (j == NULL) {
        return 0;
    }

    if (json_is_integer(j)) {
        i = json_integer_value(j);
        *b = i > FG_GS_PAST ? FG_GS_PAST : (i < -FG_GS_PAST ? -FG_GS_PAST : i);
        return 1;
    }

    if (!json_is_real(j)) {
        return fg_gs_error(s, key, path, "must be a number");
    }

    v = json_real_value(j);
    v = v > FG_GS_PAST ? FG_GS_PAST : (v < -FG_GS_PAST ? -FG_GS_PAST : v);

    if (v != floor(v)) {
        return fg_gs_error(s, key, path, "is supported for numbers as an "
                           "integer only");
    }

    *b = (long long) v;
    return 1;
}


/* the fractions k.f (f not all zeros) of a to z, the sign first */
static int
fg_gs_fractions(fg_gs_text_t *t, int *n, const char *sign, long long a,
    long long z)
{
    if (a > z) {
        return 0;
    }

    if (((*n)++ && fg_gs_add(t, " | ") != 0)
        || fg_gs_add(t, sign) != 0
        || fg_gs_range(t, a, z) != 0
        || fg_gs_add(t, " \".\" [0-9]{0,15} [1-9]") != 0)
    {
        return -1;
    }

    return 0;
}


/*
 * A number: of no bounds, or of minimum 0 alone, the number rule
 * (fg_gs_number()); within other bounds, integers, the integers within
 * them and the fractions in the open interval (lo, hi), k.f above 0 and
 * -k.f below it; no exponent.
 */
int
fg_gs_number_range(fg_gs_t *s, const json_t *schema, const char *path,
    fg_gs_text_t *t)
{
    int        n, r[4];
    json_t    *min;
    long long  b[4], lo, hi, a, z;

    if (json_object_get(schema, "multipleOf") != NULL) {
        return fg_gs_error(s, "multipleOf", path, "is not supported");
    }

    min = json_object_get(schema, "minimum");

    if (json_object_get(schema, "maximum") == NULL
        && json_object_get(schema, "exclusiveMaximum") == NULL
        && json_object_get(schema, "exclusiveMinimum") == NULL
        && (min == NULL || (json_is_number(min)
                            && json_number_value(min) == 0)))
    {
        return fg_gs_number(s, schema, path, 0, t);
    }

    r[0] = fg_gs_limit(s, schema, "minimum", path, &b[0]);
    r[1] = fg_gs_limit(s, schema, "exclusiveMinimum", path, &b[1]);
    r[2] = fg_gs_limit(s, schema, "maximum", path, &b[2]);
    r[3] = fg_gs_limit(s, schema, "exclusiveMaximum", path, &b[3]);

    if (r[0] < 0 || r[1] < 0 || r[2] < 0 || r[3] < 0) {
        return -1;
    }

    /* the open interval */
    lo = -FG_GS_INT_MAX;
    hi = FG_GS_INT_MAX;
    lo = r[0] && b[0] > lo ? b[0] : lo;
    lo = r[1] && b[1] > lo ? b[1] : lo;
    hi = r[2] && b[2] < hi ? b[2] : hi;
    hi = r[3] && b[3] < hi ? b[3] : hi;

    /* the integers: those of the open interval, and its ends let in */
    a = r[1] && b[1] == lo ? lo + 1 : lo;
    z = r[3] && b[3] == hi ? hi - 1 : hi;
    n = a <= z;

    if (fg_gs_add(t, "( ") != 0
        || (a <= z && fg_gs_ints(t, a, z) != 0)
        || fg_gs_fractions(t, &n, "", lo > 0 ? lo : 0, hi - 1) != 0
        || fg_gs_fractions(t, &n, "\"-\" ", hi < 0 ? -hi : 0, -lo - 1) != 0)
    {
        return -1;
    }

    if (n == 0) {
        return fg_gs_error(s, r[2] ? "maximum" : "exclusiveMaximum", path,
                           "leaves no number above the minimum");
    }

    return fg_gs_add(t, " )");
}
