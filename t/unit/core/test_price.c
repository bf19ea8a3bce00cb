
/*
 * fairgate: tests of prices and costs in integers (fg_price.c): prices as
 * written, costs exact to the billionth and rounded once, no overflow at
 * the largest counts and prices, and costs written back as decimals.
 */


#include <string.h>

#include "fg_tap.h"
#include "fg_price.h"


static int
parse(const char *s, uint64_t *nano)
{
    return fg_price_parse((const unsigned char *) s, strlen(s), nano);
}


static const char *
format(uint64_t nano)
{
    size_t       n;
    static char  buf[FG_PRICE_LEN + 1];

    n = fg_price_format(buf, nano);
    buf[n] = '\0';

    return buf;
}


int
main(void)
{
    size_t       i;
    uint64_t     nano, sum;
    fg_price_t   p;

    static const char  *bad[] = {
        "", ".", "1.", ".5", "-1", "+1", "1e3", "1,5", "0x10", " 1", "1 ",
        "1.0000000001", "1000001", "10000000", "1.2.3", "nan", "inf"
    };

    ok(parse("2.50", &nano) == 0 && nano == 2500000000ULL, "2.50");
    ok(parse("0.075", &nano) == 0 && nano == 75000000ULL, "0.075");
    ok(parse("3", &nano) == 0 && nano == 3 * FG_PRICE_NANO, "3");
    ok(parse("0", &nano) == 0 && nano == 0, "0");
    ok(parse("0.000000001", &nano) == 0 && nano == 1, "a billionth");
    ok(parse("1000000", &nano) == 0 && nano == FG_PRICE_MAX, "the highest");
    ok(parse("007.10", &nano) == 0 && nano == 7100000000ULL,
       "leading zeros");

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        nano = 12345;
        ok(parse(bad[i], &nano) == -1 && nano == 12345,
           "\"%s\" refused", bad[i]);
    }

    /* $2.50 in, $1.25 cached, $10 out a million tokens */
    p.input = 2500000000ULL;
    p.cached = 1250000000ULL;
    p.output = 10 * FG_PRICE_NANO;

    is_int(fg_price_cost(&p, 1000, 0, 500), 2500 * 1000 + 10000 * 500,
           "1000 in, 500 out: 0.0075");
    is_int(fg_price_cost(&p, 1000, 400, 0), 2500 * 600 + 1250 * 400,
           "400 of 1000 cached, at the cached price");
    is_int(fg_price_cost(&p, 10, 50, 0), 1250 * 10,
           "more cached than input: all input cached");
    is_int(fg_price_cost(&p, 0, 0, 0), 0, "nothing costs nothing");

    /* fractions of a billionth a token: summed, then rounded once */
    p.input = 75000000ULL;                 /* 75 a token */
    p.cached = 37500000ULL;                /* 37.5 */
    p.output = 300000ULL;                  /* 0.3 */

    is_int(fg_price_cost(&p, 1, 1, 0), 38, "37.5 rounds half up");
    is_int(fg_price_cost(&p, 2, 1, 1), 113,
           "37.5 + 0.3 + 75 = 112.8: rounded once, to 113");
    is_int(fg_price_cost(&p, 0, 0, 3), 1, "3 x 0.3 = 0.9: 1");
    is_int(fg_price_cost(&p, 0, 0, 1), 0, "0.3: 0");

    /* the largest counts at the highest prices: exact, no overflow */
    p.input = FG_PRICE_MAX;
    p.cached = FG_PRICE_MAX - 1;
    p.output = FG_PRICE_MAX;

    is_int(fg_price_cost(&p, UINT32_MAX, 0, 0),
           (uint64_t) UINT32_MAX * FG_PRICE_NANO, "2^32-1 in at the most");
    sum = fg_price_cost(&p, UINT32_MAX, UINT32_MAX / 2, UINT32_MAX);
    ok(sum == (uint64_t) UINT32_MAX * FG_PRICE_NANO * 2
              - ((uint64_t) UINT32_MAX / 2 + 500000) / 1000000,
       "2^32-1 in, half cached, 2^32-1 out: exact (%llu)",
       (unsigned long long) sum);

    /* decimals */
    is_str(format(0), "0", "0");
    is_str(format(123000), "0.000123", "0.000123");
    is_str(format(2500000000ULL), "2.5", "2.5");
    is_str(format(7 * FG_PRICE_NANO), "7", "7");
    is_str(format(1), "0.000000001", "a billionth");
    is_str(format(UINT64_MAX), "18446744073.709551615", "the largest");

    /* what is written parses back to the same */
    for (nano = 1; nano < FG_PRICE_MAX; nano = nano * 7 + 3) {
        if (parse(format(nano), &sum) != 0 || sum != nano) {
            break;
        }
    }

    ok(nano >= FG_PRICE_MAX, "formats parse back (%llu)",
       (unsigned long long) nano);

    return done_testing();
}
