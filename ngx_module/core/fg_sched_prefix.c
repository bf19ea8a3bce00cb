
/*
 * fairgate: the policy core's locality: lpm's and dlpm's candidates and
 * dlpm's deficit (the routes among engines and the dispatch that weighs the
 * candidates' cached prefixes: fg_sched_dispatch.c).
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
uint32_t
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
