
/*
 * fairgate: the policy core's qoe order (conf.order = FG_ORDER_QOE): which
 * of a client's waiting requests goes first, by Andes's priority for a
 * request not yet served (../shared/ALGORITHMS.md "Andes").
 *
 * The policy still picks the client (vtc's least counter, say), so a
 * client that floods gains nothing over the others; the order only
 * chooses among its own requests.  Over a horizon H from now, a request
 * whose first token is due at d (arrival + TTFT target) and is x = now -
 * d late loses, waiting, all the reading expected of it by now + H;
 * served, only what its lateness has cost already.  Its QoE gain, as a
 * share of that expected reading (Andes's QoE is a share), is
 * H^2 / (x + H)^2 when late (the least late gains most: the late ones
 * have lost their QoE already, and a fresh one can still have all of
 * it), 1 when due within the horizon and 0 when due after it.  Priority
 * is the gain per token of KV the request will hold (input and the most
 * output it may ask for), Andes's knapsack order.  Under a surge this
 * serves those who can still be served well first and leaves those
 * already late to the lull: the average QoE rises, the worst does not.
 *
 * The priority changes with time, so it is computed at each decision,
 * over the client's newest FG_SCHED_QOE_SCAN requests (the fresh ones
 * gain most; an older one is reached as the newer ones leave).  fcfs and
 * rpm have no client order of their own: every waiting client's best is
 * compared.
 */


#include "fg_sched_int.h"


#define FG_SCHED_QOE_SCAN  128


static double
fg_sched_qoe_priority(fg_sched_t *s, fg_request_t *r)
{
    double  h, x, due, gain;

    h = s->conf.qoe_horizon;
    due = r->due > 0.0 ? r->due : r->arrival;
    x = s->now - due;

    if (x <= -h) {
        gain = 0.0;

    } else if (x <= 0.0) {
        gain = 1.0;

    } else {
        gain = h * h / ((x + h) * (x + h));
    }

    return gain / ((double) r->input_tokens + r->max_output_tokens + 1.0);
}


/*
 * Ties: the one due last (the freshest), then the newest; of those due
 * after the horizon (nothing to gain yet), the one due first, the first
 * to need it.
 */
static int
fg_sched_qoe_better(fg_request_t *a, double pa, fg_request_t *b, double pb)
{
    if (pa != pb) {
        return pa > pb;
    }

    if (a->due != b->due) {
        return pa > 0.0 ? a->due > b->due : a->due < b->due;
    }

    return a->seq > b->seq;
}


/* the best request seen so far, and its priority */
typedef struct {
    fg_request_t  *r;
    double         prio;
} fg_sched_qoe_pick_t;


static inline void
fg_sched_qoe_pick(fg_sched_qoe_pick_t *best, fg_request_t *r, double p)
{
    if (best->r == NULL || fg_sched_qoe_better(r, p, best->r, best->prio)) {
        best->r = r;
        best->prio = p;
    }
}


/* c's best waiting request (c has one) and its priority */
static fg_request_t *
fg_sched_qoe_best(fg_sched_t *s, fg_client_t *c, double *prio)
{
    uint32_t             n;
    fg_link_t           *l;
    fg_request_t        *r;
    fg_sched_qoe_pick_t  best = { NULL, 0.0 };

    n = 0;

    for (l = c->waiting.prev;
         l != &c->waiting && n < FG_SCHED_QOE_SCAN;
         l = l->prev, n++)
    {
        r = fg_sched_request_of(l);
        fg_sched_qoe_pick(&best, r, fg_sched_qoe_priority(s, r));
    }

    *prio = best.prio;

    return best.r;
}


fg_request_t *
fg_sched_qoe_first(fg_sched_t *s, fg_client_t *c)
{
    double  prio;

    return fg_sched_qoe_best(s, c, &prio);
}


/* fcfs, rpm: the best of every waiting client's best */
fg_request_t *
fg_sched_qoe_peek(fg_sched_t *s)
{
    double               p;
    uint32_t             i;
    fg_client_t         *c;
    fg_request_t        *r;
    fg_sched_qoe_pick_t  best = { NULL, 0.0 };

    for (i = 0; i < s->heap.n; i++) {
        c = fg_sched_client_of(s->heap.entries[i].node);

        if (c->waiting.next == &c->waiting) {
            continue;
        }

        r = fg_sched_qoe_best(s, c, &p);
        fg_sched_qoe_pick(&best, r, p);
    }

    return best.r;
}
