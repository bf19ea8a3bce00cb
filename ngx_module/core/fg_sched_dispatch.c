
/*
 * fairgate: the policy core's dispatch: which waiting request goes next and
 * to which of the engines, by the route that picks one for a request
 * (prefix, least-load, round-robin).  The layer above the queues
 * (fg_sched.c) and the prefix policies' candidates (fg_sched_prefix.c): it
 * admits what it picks through fg_sched_admit(), and neither calls it back.
 */


#include <math.h>
#include <string.h>

#include "fg_sched_int.h"


static const char  *fg_sched_route_names[] = {
    "prefix", "least-load", "round-robin"
};


int
fg_sched_route_parse(fg_route_e *route, const char *name)
{
    int  i;

    /* D2LPM is the paper's name for prefix routing */
    if (strcmp(name, "d2lpm") == 0) {
        *route = FG_ROUTE_PREFIX;
        return 0;
    }

    i = fg_sched_name_index(fg_sched_route_names,
                            FG_SCHED_NAMES(fg_sched_route_names), name);
    if (i < 0) {
        return -1;
    }

    *route = (fg_route_e) i;

    return 0;
}


const char *
fg_sched_route_name(fg_route_e route)
{
    return fg_sched_name_of(fg_sched_route_names,
                            FG_SCHED_NAMES(fg_sched_route_names), route);
}


static inline int
fg_sched_fits(const fg_sched_engines_t *en, fg_request_t *r, uint32_t e)
{
    return en->fits == NULL || en->fits(r, e, en->data);
}


static inline uint32_t
fg_sched_match(const fg_sched_engines_t *en, fg_request_t *r, uint32_t e)
{
    uint32_t  m;

    if (en->match == NULL) {
        return 0;
    }

    m = en->match(r, e, en->data);

    return m < r->input_tokens ? m : r->input_tokens;
}


/* the engines' loads, asked once a decision */
static void
fg_sched_loads(fg_sched_t *s, const fg_sched_engines_t *en)
{
    uint32_t  e;

    for (e = 0; e < en->n_engines; e++) {
        s->loads[e] = en->load ? en->load(e, en->data) : 0.0;
    }
}


/*
 * The engine the route picks for r among those it fits, and in *cached
 * r's prompt tokens cached there; FG_SCHED_NO_ENGINE if it fits none.
 * prefix: the most cached, ties the least load, then the lowest index (an
 * engine is asked whether r fits only when it would win); least-load: the
 * least load, ties the lowest index; round-robin: the first it fits from
 * the one after the last used.
 */
static uint32_t
fg_sched_route(fg_sched_t *s, const fg_sched_engines_t *en, fg_request_t *r,
    uint32_t *cached)
{
    uint32_t  e, i, n, m, best, best_m;

    n = en->n_engines;
    best = FG_SCHED_NO_ENGINE;
    best_m = 0;

    switch (s->conf.route) {

    case FG_ROUTE_ROUND_ROBIN:
        for (i = 0; i < n; i++) {
            e = (s->rr_next + i) % n;

            if (fg_sched_fits(en, r, e)) {
                best = e;
                break;
            }
        }

        break;

    case FG_ROUTE_LEAST_LOAD:
        for (e = 0; e < n; e++) {
            if ((best == FG_SCHED_NO_ENGINE || s->loads[e] < s->loads[best])
                && fg_sched_fits(en, r, e))
            {
                best = e;
            }
        }

        break;

    default:
        for (e = 0; e < n; e++) {
            m = fg_sched_match(en, r, e);

            if (best != FG_SCHED_NO_ENGINE
                && (m < best_m
                    || (m == best_m && s->loads[e] >= s->loads[best])))
            {
                continue;
            }

            if (fg_sched_fits(en, r, e)) {
                best = e;
                best_m = m;
            }
        }

        *cached = best_m;

        return best;
    }

    *cached = best != FG_SCHED_NO_ENGINE ? fg_sched_match(en, r, best) : 0;

    return best;
}


/* admits r to engine e, as the match said */
static fg_request_t *
fg_sched_send(fg_sched_t *s, fg_request_t *r, uint32_t e, uint32_t cached)
{
    r->engine = e;
    r->cached_tokens = cached;
    s->rr_next = e + 1;

    fg_sched_admit(s, r);

    return r;
}


/*
 * lpm, dlpm: the candidate with the most cached tokens on the engine its
 * route picks, ties the oldest; those that fit no engine are skipped.
 * dlpm's candidates are the clients' with a positive deficit, after the
 * refill if none has one.
 */
static fg_request_t *
fg_sched_prefix_dispatch(fg_sched_t *s, const fg_sched_engines_t *en)
{
    double         limit;
    uint32_t       i, n, e, m, best_e, best_m;
    fg_request_t  *r, *best;

    limit = HUGE_VAL;

    if (fg_sched_is_dlpm(s)) {
        fg_sched_refill(s);
        limit = (double) s->round;
    }

    n = fg_sched_gather(s, limit);

    best = NULL;
    best_e = 0;
    best_m = 0;

    for (i = 0; i < n; i++) {
        r = s->cand[i];
        e = fg_sched_route(s, en, r, &m);

        if (e == FG_SCHED_NO_ENGINE) {
            continue;
        }

        if (best == NULL || m > best_m || (m == best_m && r->seq < best->seq))
        {
            best = r;
            best_e = e;
            best_m = m;
        }
    }

    if (best == NULL) {
        return NULL;
    }

    return fg_sched_send(s, best, best_e, best_m);
}


fg_request_t *
fg_sched_dispatch_to(fg_sched_t *s, const fg_sched_engines_t *engines)
{
    uint32_t       e, m;
    fg_request_t  *r;

    if (engines->n_engines == 0
        || engines->n_engines > FG_SCHED_MAX_ENGINES)
    {
        return NULL;
    }

    if (engines->n_engines > 1 && s->conf.route != FG_ROUTE_ROUND_ROBIN) {
        fg_sched_loads(s, engines);

    } else {
        s->loads[0] = 0.0;
    }

    if (fg_sched_by_prefix(s)) {
        return fg_sched_prefix_dispatch(s, engines);
    }

    r = fg_sched_peek(s);
    if (r == NULL) {
        return NULL;
    }

    /* blocked head: the policy's next request or nothing */
    e = fg_sched_route(s, engines, r, &m);
    if (e == FG_SCHED_NO_ENGINE) {
        return NULL;
    }

    return fg_sched_send(s, r, e, m);
}


/* fg_sched_dispatch() for lpm and dlpm: one engine, nothing cached */

typedef struct {
    fg_sched_fit_pt   fit;
    void             *data;
} fg_sched_one_t;


static int
fg_sched_fits_one(fg_request_t *r, uint32_t e, void *data)
{
    fg_sched_one_t  *one;

    (void) e;
    one = data;

    return one->fit(r, one->data);
}


static fg_request_t *
fg_sched_dispatch_one(fg_sched_t *s, fg_sched_fit_pt fit, void *data)
{
    fg_sched_one_t      one;
    fg_sched_engines_t  en;

    one.fit = fit;
    one.data = data;

    en.n_engines = 1;
    en.match = NULL;
    en.fits = fit ? fg_sched_fits_one : NULL;
    en.load = NULL;
    en.data = &one;

    return fg_sched_dispatch_to(s, &en);
}


fg_request_t *
fg_sched_dispatch(fg_sched_t *s, fg_sched_fit_pt fit, void *data)
{
    fg_request_t  *r;

    if (fg_sched_by_prefix(s)) {
        return fg_sched_dispatch_one(s, fit, data);
    }

    r = fg_sched_peek(s);
    if (r == NULL || (fit != NULL && !fit(r, data))) {
        return NULL;
    }

    fg_sched_admit(s, r);

    return r;
}
