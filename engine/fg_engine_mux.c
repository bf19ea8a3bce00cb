
/*
 * fairgate: several models in one engine, the rounds (fg_engine_mux.h
 * says what; fg_mux.h decides, this file applies its decisions to the
 * batchers).
 *
 * muxserve (ADBS): the prefill pick steps with joins allowed, then the
 * decode order's models step with joins held, so that a round admits one
 * model's new requests.  A model over its quota after a shrink is not in
 * the decode order; it still steps, joins held, so that its sequences
 * finish and give blocks back (its fg_kv limit makes a decode that needs
 * a block preempt its youngest, the batcher's way when blocks run short).
 * temporal: one model with work a round, in turn, the whole pool to
 * compete for.  spatial: every model with work a round, in turn, each in
 * its fixed quota.
 */


#include <stdio.h>
#include <string.h>

#include "fg_engine_mux.h"


/* model i's fg_mux inputs from its batcher */
static void
fg_engine_mux_sync(fg_engine_mux_t *em, uint32_t i)
{
    fg_mux_model_t    *m;
    fg_batch_stats_t   st;

    fg_batch_stats(em->batch[i], &st);

    m = &em->mx.m[i];
    m->used = (uint64_t) st.kv_held * m->unit;
    m->peak = m->used > m->peak ? m->used : m->peak;
    m->waiting = st.waiting;
    m->next_need = (uint64_t) st.next_need * m->unit;
    m->decoding = st.decoding;
}


/* what model i may hold now: its quota, within what the others leave */
static void
fg_engine_mux_limit(fg_engine_mux_t *em, uint32_t i)
{
    uint32_t  k;
    uint64_t  others, room;

    others = 0;

    for (k = 0; k < em->mx.n; k++) {
        others += k == i ? 0 : em->mx.m[k].used;
    }

    room = em->mx.pool > others ? em->mx.pool - others : 0;
    room = room < em->mx.m[i].quota ? room : em->mx.m[i].quota;

    fg_kv_set_limit(em->kv[i], (uint32_t) (room / em->mx.m[i].unit));
}


const char *
fg_engine_mux_init(fg_engine_mux_t *em, double now)
{
    uint32_t     i;
    const char  *e;

    if (em->mx.adapt_s == 0.0) {
        em->mx.adapt_s = FG_MUX_ADAPT_S;
    }

    e = fg_mux_conf_error(&em->mx);

    if (e != NULL) {
        return e;
    }

    for (i = 0; i < em->mx.n; i++) {
        if (em->batch[i] == NULL || em->kv[i] == NULL) {
            return "a model without its batcher or KV pool";
        }
    }

    fg_mux_init(&em->mx, now);

    for (i = 0; i < em->mx.n; i++) {
        fg_engine_mux_sync(em, i);
    }

    for (i = 0; i < em->mx.n; i++) {
        fg_engine_mux_limit(em, i);
    }

    em->rr = 0;

    return NULL;
}


/* one step of model i, its joins allowed or held; adds to *ran */
static void
fg_engine_mux_step(fg_engine_mux_t *em, uint32_t i, int joins, int *ran,
    char *err, size_t errlen)
{
    int   rc;
    char  e[256];

    fg_engine_mux_limit(em, i);
    fg_batch_hold_joins(em->batch[i], !joins);

    rc = fg_batch_step(em->batch[i], e, sizeof(e));

    fg_batch_hold_joins(em->batch[i], 0);
    fg_engine_mux_sync(em, i);
    em->steps[i] += rc != 0;

    if (rc < 0) {
        snprintf(err, errlen, "model %u: %s", i, e);
        *ran = -1;

    } else if (*ran >= 0) {
        *ran += rc;
    }
}


static void
fg_engine_mux_adbs(fg_engine_mux_t *em, int *ran, char *err, size_t errlen)
{
    int       p;
    uint32_t  order[FG_MUX_MAX_MODELS], n, k, i, in[FG_MUX_MAX_MODELS];

    p = fg_mux_next_prefill(&em->mx);

    if (p >= 0) {
        fg_engine_mux_step(em, (uint32_t) p, 1, ran, err, errlen);
    }

    n = fg_mux_decode_order(&em->mx, order);
    memset(in, 0, sizeof(in));

    for (k = 0; k < n; k++) {
        in[order[k]] = 1;

        if ((int) order[k] != p) {
            fg_engine_mux_step(em, order[k], 0, ran, err, errlen);
        }
    }

    /* over quota after a shrink: it runs down, taking nothing */
    for (i = 0; i < em->mx.n; i++) {
        if (!in[i] && (int) i != p && em->mx.m[i].decoding) {
            fg_engine_mux_step(em, i, 0, ran, err, errlen);
        }
    }
}


int
fg_engine_mux_round(fg_engine_mux_t *em, double now, char *err,
    size_t errlen)
{
    int       ran;
    uint32_t  i, k;

    ran = 0;

    for (i = 0; i < em->mx.n; i++) {
        fg_engine_mux_sync(em, i);
    }

    (void) fg_mux_adapt(&em->mx, now);
    em->rounds++;

    switch (em->mx.mode) {

    case FG_MUX_MUXSERVE:
        fg_engine_mux_adbs(em, &ran, err, errlen);
        break;

    case FG_MUX_TEMPORAL:
        for (k = 0; k < em->mx.n; k++) {
            i = (em->rr + k) % em->mx.n;

            if (fg_batch_held(em->batch[i])) {
                em->rr = (i + 1) % em->mx.n;
                fg_engine_mux_step(em, i, 1, &ran, err, errlen);
                break;
            }
        }

        break;

    default:
        for (i = 0; i < em->mx.n; i++) {
            if (fg_batch_held(em->batch[i])) {
                fg_engine_mux_step(em, i, 1, &ran, err, errlen);
            }
        }
    }

    return ran;
}


void
fg_engine_mux_quota(const fg_engine_mux_t *em, uint32_t i, uint32_t *blocks,
    uint32_t *free)
{
    uint64_t  q, held;

    q = em->mx.m[i].quota / em->mx.m[i].unit;
    held = fg_kv_held_blocks(em->kv[i]);

    *blocks = (uint32_t) q;
    *free = held < q ? (uint32_t) (q - held) : 0;
}
