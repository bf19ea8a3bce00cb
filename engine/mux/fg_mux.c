
/*
 * fairgate: MuxServe's quotas and ADBS's picks (fg_mux.h says what and
 * why).
 */


#include <stddef.h>

#include "fg_mux.h"


/* n head blocks as whole token blocks of unit u, rounded down */
static uint64_t
fg_mux_whole(uint64_t n, uint32_t u)
{
    return n / u * u;
}


const char *
fg_mux_conf_error(const fg_mux_t *mx)
{
    uint32_t  i;
    uint64_t  least;

    if (mx->n == 0 || mx->n > FG_MUX_MAX_MODELS) {
        return "1 to 8 models";
    }

    if ((unsigned) mx->mode > FG_MUX_MUXSERVE) {
        return "unknown mode";
    }

    least = 0;

    for (i = 0; i < mx->n; i++) {
        if (mx->m[i].unit == 0) {
            return "a model's token block takes no head block";
        }

        if (!(mx->m[i].rate > 0.0 && mx->m[i].rate < 1e9)) {
            return "a model's rate is not above 0";
        }

        least += mx->m[i].unit;
    }

    if (mx->pool < least) {
        return "the pool holds less than one token block of each model";
    }

    return (mx->adapt_s > 0.0) ? NULL : "the adaptation period is not "
                                        "above 0";
}


/*
 * A model's weight in the initial split: muxserve's rate x unit, the
 * paper's; spatial's unit alone, the paper's baseline of dedicated GPUs
 * for each model, as many as its size needs whatever its popularity (a
 * token's KV grows with the model).
 */
static double
fg_mux_weight(const fg_mux_t *mx, uint32_t i)
{
    return (mx->mode == FG_MUX_SPATIAL ? 1.0 : mx->m[i].rate)
           * mx->m[i].unit;
}


void
fg_mux_init(fg_mux_t *mx, double now)
{
    double    sum;
    uint32_t  i;

    sum = 0.0;

    for (i = 0; i < mx->n; i++) {
        sum += fg_mux_weight(mx, i);
    }

    for (i = 0; i < mx->n; i++) {
        if (mx->mode == FG_MUX_TEMPORAL) {
            mx->m[i].quota = mx->pool;
            continue;
        }

        mx->m[i].quota = fg_mux_whole((uint64_t) (mx->pool
                                                  * fg_mux_weight(mx, i)
                                                  / sum),
                                      mx->m[i].unit);

        if (mx->m[i].quota < mx->m[i].unit) {
            mx->m[i].quota = mx->m[i].unit;
        }
    }

    mx->adapted = now;
    mx->rr_prefill = 0;
    mx->rr_decode = 0;
}


/* what quotas leave of the pool goes to the longest queue */
static void
fg_mux_leftover(fg_mux_t *mx)
{
    uint32_t  i, best;
    uint64_t  given;

    given = 0;
    best = mx->n;

    for (i = 0; i < mx->n; i++) {
        given += mx->m[i].quota;

        if (mx->m[i].waiting
            && (best == mx->n || mx->m[i].waiting > mx->m[best].waiting))
        {
            best = i;
        }
    }

    if (best < mx->n && given < mx->pool) {
        mx->m[best].quota += fg_mux_whole(mx->pool - given,
                                          mx->m[best].unit);
    }
}


/*
 * What a model with requests waiting wants: a tenth of its quota if it
 * used 90% of it (the paper's busy), or what its next request lacks if
 * its quota is too small for it (else a model whose requests are all
 * larger than its quota would hold nothing, never look busy, and
 * starve); whole token blocks, at least one.
 */
static uint64_t
fg_mux_want(const fg_mux_model_t *m)
{
    uint64_t  w, lack;

    if (m->waiting == 0) {
        return 0;
    }

    w = 0;

    if (m->peak >= FG_MUX_HIGH * m->quota) {
        w = fg_mux_whole((uint64_t) (FG_MUX_TAKE * m->quota), m->unit);
        w = w ? w : m->unit;
    }

    if (m->next_need && m->used + m->next_need > m->quota) {
        lack = m->used + m->next_need - m->quota;
        lack = (lack + m->unit - 1) / m->unit * m->unit;
        w = lack > w ? lack : w;
    }

    return w;
}


/*
 * The spare give GIVE in proportion to their spare S, in whole token
 * blocks of each, never below one token block.  What rounding leaves
 * is taken a whole block at a time from the largest spare: a large
 * model's token block can exceed a small model's whole lack, and the
 * proportional shares alone would round to nothing for ever.  Returns
 * what was taken.
 */
static uint64_t
fg_mux_take(fg_mux_t *mx, uint64_t *s, double spare, double give)
{
    uint32_t  i, best;
    uint64_t  got, d, u;

    got = 0;

    for (i = 0; i < mx->n; i++) {
        if (s[i] == 0) {
            continue;
        }

        u = mx->m[i].unit;
        d = fg_mux_whole((uint64_t) (give * s[i] / spare), u);
        d = mx->m[i].quota - d < u ? mx->m[i].quota - u : d;

        mx->m[i].quota -= d;
        s[i] = s[i] > d ? s[i] - d : 0;
        got += d;
    }

    while ((double) got < give) {
        best = mx->n;

        for (i = 0; i < mx->n; i++) {
            u = mx->m[i].unit;

            if (s[i] >= u && mx->m[i].quota >= 2 * u
                && (best == mx->n || s[i] > s[best]))
            {
                best = i;
            }
        }

        if (best == mx->n) {
            break;
        }

        u = mx->m[best].unit;
        mx->m[best].quota -= u;
        s[best] -= u;
        got += u;
    }

    return got;
}


/*
 * The busy (fg_mux_want()) take what they want from the spare (< 90% of
 * their quota at their peak, nothing waiting that their quota lacks),
 * in proportion to their wants; what rounding leaves of it goes with the
 * leftovers, to the longest queue.
 */
static void
fg_mux_shift(fg_mux_t *mx)
{
    double    want, spare, give, got;
    uint32_t  i;
    uint64_t  s[FG_MUX_MAX_MODELS], w[FG_MUX_MAX_MODELS];

    want = 0.0;
    spare = 0.0;

    for (i = 0; i < mx->n; i++) {
        s[i] = 0;
        w[i] = fg_mux_want(&mx->m[i]);
        want += w[i];

        if (w[i] == 0 && mx->m[i].peak < FG_MUX_HIGH * mx->m[i].quota) {
            s[i] = fg_mux_whole(mx->m[i].quota - mx->m[i].peak,
                                mx->m[i].unit);
            spare += s[i];
        }
    }

    if (want == 0.0 || spare == 0.0) {
        return;
    }

    give = want < spare ? want : spare;
    got = (double) fg_mux_take(mx, s, spare, give);

    for (i = 0; i < mx->n; i++) {
        mx->m[i].quota += fg_mux_whole((uint64_t) (got * w[i] / want),
                                       mx->m[i].unit);
    }
}


int
fg_mux_adapt(fg_mux_t *mx, double now)
{
    uint32_t  i;

    if (mx->mode != FG_MUX_MUXSERVE || now - mx->adapted < mx->adapt_s) {
        return 0;
    }

    fg_mux_shift(mx);
    fg_mux_leftover(mx);

    for (i = 0; i < mx->n; i++) {
        mx->m[i].peak = mx->m[i].used;
    }

    mx->adapted = now;

    return 1;
}


int
fg_mux_fits(const fg_mux_t *mx, uint32_t i, uint64_t need)
{
    uint32_t  k;
    uint64_t  used;

    used = 0;

    for (k = 0; k < mx->n; k++) {
        used += mx->m[k].used;
    }

    return mx->m[i].used + need <= mx->m[i].quota
           && used + need <= mx->pool;
}


int
fg_mux_next_prefill(fg_mux_t *mx)
{
    uint32_t  k, i;

    for (k = 0; k < mx->n; k++) {
        i = (mx->rr_prefill + k) % mx->n;

        if (mx->m[i].waiting && mx->m[i].next_need
            && !mx->m[i].stepping
            && fg_mux_fits(mx, i, mx->m[i].next_need))
        {
            mx->rr_prefill = (i + 1) % mx->n;
            return (int) i;
        }
    }

    return -1;
}


uint32_t
fg_mux_decode_order(fg_mux_t *mx, uint32_t *order)
{
    uint32_t  k, i, n;

    n = 0;

    for (k = 0; k < mx->n; k++) {
        i = (mx->rr_decode + k) % mx->n;

        if (mx->m[i].decoding && mx->m[i].used <= mx->m[i].quota) {
            order[n++] = i;
        }
    }

    mx->rr_decode = (mx->rr_decode + 1) % mx->n;

    return n;
}
