
/*
 * fairgate: Andes's QoE scheduler's decision (fg_sched_andes.h says how
 * it estimates, values and packs).
 */


#include <stdlib.h>

#include "fg_sched_andes.h"


#define FG_ANDES_RUNNING  1.5       /* the authors' weight on staying */
#define FG_ANDES_FIRST    1e300     /* a pinned candidate's value */


/* the delay area from dry to end while no token comes: v t^2 / 2 */
static double
fg_andes_stall(double v, double from, double to)
{
    double  t;

    t = to - from;

    return t > 0.0 ? v * t * t / 2.0 : 0.0;
}


/* the share of the reading expected by the horizon's end: Andes's QoE is
 * a share of it, so the delay avoided counts by it (a late one that has
 * lost most of its QoE gains little more) */
static double
fg_andes_whole(const fg_andes_conf_t *cf, const fg_andes_cand_t *c)
{
    return fg_andes_stall(c->speed, c->first, cf->now + cf->horizon);
}


double
fg_andes_gain(const fg_andes_conf_t *cf, const fg_andes_cand_t *c)
{
    double  end, dry, first, wait, serve, rate, lag, whole;

    end = cf->now + cf->horizon;
    dry = c->dry > cf->now ? c->dry : cf->now;
    whole = fg_andes_whole(cf, c);

    if (dry >= end || whole <= 0.0) {
        return 0.0;                 /* far ahead of its reader */
    }

    wait = fg_andes_stall(c->speed, dry, end);

    /* served: it stalls until its first token, the delay it built then
     * lasts to the end, and a step slower than the reader adds more */
    first = c->ready > dry ? c->ready : dry;

    if (first >= end) {
        return 0.0;
    }

    serve = fg_andes_stall(c->speed, dry, first)
            + c->speed * (first - dry) * (end - first);

    rate = cf->step_s > 0.0 ? 1.0 / cf->step_s : c->speed;
    lag = c->speed > rate ? c->speed - rate : 0.0;
    serve += fg_andes_stall(lag, first, end);

    return wait > serve ? (wait - serve) / whole : 0.0;
}


/* the running readers' QoE lost per second of recompute: those who would
 * run dry within the horizon lose it at their speed until its end, each
 * as a share of its expected reading */
static double
fg_andes_edge(const fg_andes_conf_t *cf, const fg_andes_cand_t *c,
    uint32_t n)
{
    double    edge, end, dry, whole;
    uint32_t  i;

    edge = 0.0;
    end = cf->now + cf->horizon;

    for (i = 0; i < n; i++) {
        dry = c[i].dry > cf->now ? c[i].dry : cf->now;
        whole = fg_andes_whole(cf, &c[i]);

        if (c[i].running && dry < end && whole > 0.0) {
            edge += c[i].speed * (end - dry) / whole;
        }
    }

    return edge;
}


static int
fg_andes_cmp(const void *one, const void *two)
{
    const fg_andes_cand_t  *a, *b;

    a = *(fg_andes_cand_t *const *) one;
    b = *(fg_andes_cand_t *const *) two;

    if (a->prio != b->prio) {
        return a->prio > b->prio ? -1 : 1;
    }

    if (a->running != b->running) {
        return a->running ? -1 : 1;
    }

    /* equal value (often none: all far ahead of their readers): the
     * furthest ahead last, the first a preemption takes */
    if (a->dry != b->dry) {
        return a->dry < b->dry ? -1 : 1;
    }

    return a->order < b->order ? -1 : a->order > b->order;
}


static void
fg_andes_value(const fg_andes_conf_t *cf, fg_andes_cand_t *c, double edge)
{
    double  gain;

    gain = fg_andes_gain(cf, c);

    if (c->pinned) {
        /* preempted as often as it may be: it stays */
        c->value = FG_ANDES_FIRST;

    } else if (c->running) {
        c->value = gain * FG_ANDES_RUNNING;

    } else {
        c->value = gain - c->recompute * edge;
    }

    c->prio = c->blocks && !c->pinned ? c->value / c->blocks : c->value;
}


/* the running losers, the lowest priority first, up to the cap */
static uint32_t
fg_andes_preempt(const fg_andes_conf_t *cf, fg_andes_cand_t **order,
    uint32_t n, uint32_t running)
{
    uint32_t  i, cap, k;

    cap = (uint32_t) (cf->cap * running);
    cap = cap ? cap : 1;
    k = 0;

    for (i = n; i-- > 0 && k < cap; /* void */) {
        if (order[i]->running && !order[i]->keep) {
            order[i]->preempt = 1;
            k++;
        }
    }

    /* those beyond the cap stay: they hold their blocks still */
    for (i = 0; i < n; i++) {
        if (order[i]->running && !order[i]->preempt) {
            order[i]->keep = 1;
        }
    }

    return k;
}


uint32_t
fg_andes_decide(const fg_andes_conf_t *cf, fg_andes_cand_t *c, uint32_t n,
    fg_andes_cand_t **order)
{
    double    edge;
    uint32_t  i, used, seats, running, won;

    edge = fg_andes_edge(cf, c, n);
    running = 0;

    for (i = 0; i < n; i++) {
        fg_andes_value(cf, &c[i], edge);
        c[i].keep = 0;
        c[i].preempt = 0;
        order[i] = &c[i];
        running += c[i].running;
    }

    qsort(order, n, sizeof(fg_andes_cand_t *), fg_andes_cmp);

    /* the greedy knapsack: a waiting one with nothing to gain, or whose
     * recompute costs more than it gains, is not brought in */
    used = 0;
    seats = 0;
    won = 0;

    for (i = 0; i < n; i++) {
        if (!order[i]->running && order[i]->pinned) {
            /* first in line as room frees, but preempts nobody */
            order[i]->keep = 1;
            continue;
        }

        if (!order[i]->running && order[i]->value <= 0.0) {
            continue;
        }

        if (used + order[i]->blocks <= cf->pool && seats < cf->seats) {
            order[i]->keep = 1;
            used += order[i]->blocks;
            seats++;
            won += !order[i]->running;
        }
    }

    if (won == 0) {
        for (i = 0; i < n; i++) {
            c[i].keep = c[i].running;
        }

        return 0;
    }

    return fg_andes_preempt(cf, order, n, running);
}
