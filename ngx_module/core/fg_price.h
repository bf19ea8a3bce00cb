
/*
 * fairgate: a model's prices and what a request's tokens cost at them.
 *
 * Pure C, no nginx types.  A price is kept in billionths of the
 * operator's currency unit per million tokens, an integer: a cost is
 * computed in integers too, in billionths of the unit, rounded once, so
 * that costs add up exactly (a sum of a month's requests is the sum of
 * their logged costs, with no drift of floating point).
 */

#ifndef _FG_PRICE_H_INCLUDED_
#define _FG_PRICE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* the billionths of a unit */
#define FG_PRICE_NANO  1000000000ULL

/* the highest price: a million units per million tokens */
#define FG_PRICE_MAX   (1000000ULL * FG_PRICE_NANO)

/* the longest decimal fg_price_format() writes, without a NUL */
#define FG_PRICE_LEN   30


/* per million tokens, in billionths of the unit */
typedef struct {
    uint64_t  input;
    uint64_t  cached;    /* input tokens found in a prompt cache */
    uint64_t  output;
} fg_price_t;


/*
 * A price as written: a decimal number of units, digits with at most 9
 * after a point ("2.50", "0.075", "3"), at most FG_PRICE_MAX; 0 and its
 * billionths in *nano, or -1.
 */
int fg_price_parse(const unsigned char *p, size_t len, uint64_t *nano);

/*
 * What tokens cost at a price, in billionths of the unit, rounded half up:
 * (in - cached) input tokens, cached ones at the cached price (at most
 * in), and out output tokens; exact, and no overflow for any counts.
 */
uint64_t fg_price_cost(const fg_price_t *price, uint32_t in,
    uint32_t cached, uint32_t out);

/* billionths as a decimal of units ("0.000123", "2.5", "0"): its length */
size_t fg_price_format(char *buf, uint64_t nano);


#endif /* _FG_PRICE_H_INCLUDED_ */
