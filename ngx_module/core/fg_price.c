
/*
 * fairgate: prices and costs in integers (fg_price.h).
 *
 * A cost is tokens x price / 10^6, each product up to 2^32 x 10^15: more
 * than 64 bits hold.  So each price is split into its whole billionths a
 * token (price / 10^6) and the rest (price % 10^6): the products of the
 * first are whole billionths, those of the second are summed over the
 * three kinds of tokens and divided once, which rounds once.
 */

#include "fg_price.h"


#define FG_PRICE_PER  1000000ULL    /* a price is per million tokens */


int
fg_price_parse(const unsigned char *p, size_t len, uint64_t *nano)
{
    size_t                digits;
    uint64_t              whole, frac, scale;
    const unsigned char  *last;

    last = p + len;
    whole = 0;
    digits = 0;

    for ( /* void */ ; p < last && *p >= '0' && *p <= '9'; p++) {
        /* FG_PRICE_MAX's units have 7 digits: more is over it */
        if (++digits > 7) {
            return -1;
        }

        whole = whole * 10 + (*p - '0');
    }

    if (digits == 0) {
        return -1;
    }

    frac = 0;
    scale = FG_PRICE_NANO;

    if (p < last && *p == '.') {
        p++;

        if (p == last) {
            return -1;
        }

        for ( /* void */ ; p < last && *p >= '0' && *p <= '9'; p++) {
            scale /= 10;

            if (scale == 0) {
                return -1;          /* finer than a billionth */
            }

            frac += (uint64_t) (*p - '0') * scale;
        }
    }

    if (p != last) {
        return -1;
    }

    whole = whole * FG_PRICE_NANO + frac;

    if (whole > FG_PRICE_MAX) {
        return -1;
    }

    *nano = whole;

    return 0;
}


uint64_t
fg_price_cost(const fg_price_t *price, uint32_t in, uint32_t cached,
    uint32_t out)
{
    uint64_t  fresh, cost, rest;

    if (cached > in) {
        cached = in;
    }

    fresh = (uint64_t) in - cached;

    /* each term under 2^32 x 10^9, their sum under 2^64 */
    cost = fresh * (price->input / FG_PRICE_PER)
           + cached * (price->cached / FG_PRICE_PER)
           + out * (price->output / FG_PRICE_PER);

    /* each term under 2^32 x 10^6 */
    rest = fresh * (price->input % FG_PRICE_PER)
           + cached * (price->cached % FG_PRICE_PER)
           + out * (price->output % FG_PRICE_PER);

    return cost + (rest + FG_PRICE_PER / 2) / FG_PRICE_PER;
}


size_t
fg_price_format(char *buf, uint64_t nano)
{
    char      tmp[FG_PRICE_LEN];
    size_t    n, i, len;
    uint64_t  whole, frac;

    whole = nano / FG_PRICE_NANO;
    frac = nano % FG_PRICE_NANO;

    n = 0;

    do {
        tmp[n++] = (char) ('0' + whole % 10);
        whole /= 10;
    } while (whole);

    for (len = 0; n; len++) {
        buf[len] = tmp[--n];
    }

    if (frac == 0) {
        return len;
    }

    buf[len++] = '.';

    /* nine digits, the trailing zeros left out */

    for (i = 0; i < 9; i++) {
        tmp[8 - i] = (char) ('0' + frac % 10);
        frac /= 10;
    }

    for (n = 9; tmp[n - 1] == '0'; n--) { /* void */ }

    for (i = 0; i < n; i++) {
        buf[len++] = tmp[i];
    }

    return len;
}
