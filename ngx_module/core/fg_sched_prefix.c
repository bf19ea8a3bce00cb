
/*
 * fairgate: the policy core's locality: lpm and dlpm, dlpm's deficit, and
 * the routes that pick one of several engines for a request.
 *
 * lpm (SGLang's longest prefix match) and dlpm (the DLPM paper's
 * Algorithm 1) look at up to window waiting requests, the candidates, and
 * admit the one with the most prompt tokens cached on the engine the route
 * picks for it.  The candidates come from clients at the heap's top, walked
 * breadth first, and from each such client's FIFO, oldest first, round by
 * round: no backlogged client goes unseen while there are no more of them
 * than window.
 *
 * dlpm's deficit is refilled in rounds, lazily: a refill only advances the
 * round count, and each client's deficit takes the rounds it missed when
 * it is next charged or read.  A client's heap key is the round from which
 * its deficit is positive, a value refills do not change, so the clients
 * allowed to admit are the heap's top and a refill of any number of rounds
 * costs O(1).
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
    size_t  i;

    /* D2LPM is the paper's name for prefix routing */
    if (strcmp(name, "d2lpm") == 0) {
        *route = FG_ROUTE_PREFIX;
        return 0;
    }

    for (i = 0; i < sizeof(fg_sched_route_names) / sizeof(char *); i++) {
        if (strcmp(name, fg_sched_route_names[i]) == 0) {
            *route = (fg_route_e) i;
            return 0;
        }
    }

    return -1;
}


const char *
fg_sched_route_name(fg_route_e route)
{
    if ((unsigned) route > FG_ROUTE_ROUND_ROBIN) {
        return "unknown";
    }

    return fg_sched_route_names[route];
}


/* dlpm: a new client starts at 0, so it needs one refill to admit */
void
fg_sched_deficit_init(fg_sched_t *s, fg_client_t *c)
{
    c->deficit = 0.0;
    c->round = s->round;
    c->eligible = s->round + 1;
}


double
fg_client_deficit(fg_sched_t *s, fg_client_t *c)
{
    uint64_t  until;

    /* a refill gives only to a client at or below 0, until it is above */
    if (c->deficit > 0.0 || c->round >= s->round) {
        return c->deficit;
    }

    until = c->eligible < s->round ? c->eligible : s->round;

    return c->deficit + (double) (until - c->round) * s->conf.quantum;
}


/*
 * The refill rounds a deficit q <= 0 needs to be positive: the n with
 * q + n * Q > 0 computed as fg_client_deficit() will add them, so that the
 * deficit is positive from that round on, rounding whichever way.
 */
static uint64_t
fg_sched_rounds(double q, double quantum)
{
    double    k;
    uint64_t  n;

    k = floor(-q / quantum) + 1.0;

    /* beyond 2^50 rounds (absurd costs) the keys would lose precision */
    n = k < 0x1p50 ? (uint64_t) k : (1ULL << 50);

    while (q + (double) n * quantum <= 0.0 && n < (1ULL << 50)) {
        n++;
    }

    return n;
}


/* dlpm: cost (weighted) charged to c's deficit, or refunded if negative */
void
fg_sched_deficit_charge(fg_sched_t *s, fg_client_t *c, double cost)
{
    double  q;

    q = fg_client_deficit(s, c) - cost;

    c->deficit = q;
    c->round = s->round;

    if (q > 0.0) {
        /* a refund may make it positive before its refill round */
        if (c->eligible > s->round) {
            c->eligible = s->round;
        }

        return;
    }

    c->eligible = s->round + fg_sched_rounds(q, s->conf.quantum);
}


/*
 * dlpm's CHECKREFILL, every round it takes at once: when no backlogged
 * client has a positive deficit, as many rounds pass as the first of them
 * (the heap's top) needs.  Every backlogged client is at or below 0 and
 * needs at least as many, so each gains all of them.
 */
void
fg_sched_refill(fg_sched_t *s)
{
    fg_client_t      *c;
    fg_heap_entry_t  *top;

    top = fg_heap_top(&s->heap);
    if (top == NULL) {
        return;
    }

    c = fg_sched_client_of(top->node);

    if (c->eligible > s->round) {
        s->round = c->eligible;
    }
}


size_t
fg_sched_scratch_size(const fg_sched_conf_t *conf)
{
    /* the queue of the walk: each client visited adds two at most */
    return 3 * (size_t) conf->window * sizeof(void *)
           + (2 * (size_t) conf->window + 1) * sizeof(uint32_t);
}


void
fg_sched_scratch_init(fg_sched_t *s, void *scratch)
{
    uint32_t  w;

    w = s->conf.window;

    s->cand = scratch;
    s->seen = (fg_client_t **) (s->cand + w);
    s->cursor = (fg_link_t **) (s->seen + w);
    s->front = (uint32_t *) (s->cursor + w);
}


/*
 * Gathers the candidates into s->cand, up to window of them, and returns
 * how many: up to window backlogged clients whose key is at most limit,
 * from the heap's top breadth first (those allowed form a subtree at the
 * top, so its frontier is a queue of heap indices, each client before those
 * below it, the best first); then their waiting requests round by round,
 * each client's oldest first.
 */
static uint32_t
fg_sched_gather(fg_sched_t *s, double limit)
{
    uint32_t          i, j, k, w, nc, head, tail, child;
    fg_link_t        *l;
    fg_client_t      *c;
    fg_heap_entry_t  *e;

    e = s->heap.entries;
    w = s->conf.window;

    if (s->heap.n == 0 || e[0].key > limit) {
        return 0;
    }

    s->front[0] = 0;
    head = 0;
    tail = 1;
    nc = 0;

    while (head < tail && nc < w) {
        i = s->front[head++];
        c = fg_sched_client_of(e[i].node);
        s->seen[nc] = c;
        s->cursor[nc++] = c->waiting.next;

        for (child = 2 * i + 1; child <= 2 * i + 2; child++) {
            if (child < s->heap.n && e[child].key <= limit) {
                s->front[tail++] = child;
            }
        }
    }

    k = 0;

    while (nc > 0 && k < w) {
        for (i = 0, j = 0; i < nc && k < w; i++) {
            l = s->cursor[i];
            s->cand[k++] = fg_sched_request_of(l);

            if (l->next != &s->seen[i]->waiting) {
                s->seen[j] = s->seen[i];
                s->cursor[j++] = l->next;
            }
        }

        nc = j;
    }

    return k;
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


/* lpm, dlpm: the oldest candidate, as if all fitted and none were cached */
fg_request_t *
fg_sched_prefix_peek(fg_sched_t *s)
{
    double            limit;
    uint32_t          i, n;
    fg_client_t      *c;
    fg_request_t     *best;
    fg_heap_entry_t  *top;

    top = fg_heap_top(&s->heap);
    if (top == NULL) {
        return NULL;
    }

    limit = HUGE_VAL;

    if (fg_sched_is_dlpm(s)) {
        /* the refill the dispatch would make, not made */
        c = fg_sched_client_of(top->node);
        limit = (double) (c->eligible > s->round ? c->eligible : s->round);
    }

    n = fg_sched_gather(s, limit);
    best = s->cand[0];

    for (i = 1; i < n; i++) {
        if (s->cand[i]->seq < best->seq) {
            best = s->cand[i];
        }
    }

    return best;
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


fg_request_t *
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
