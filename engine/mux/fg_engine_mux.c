
/*
 * fairgate: several models in one engine, the rounds (fg_engine_mux.h
 * says what; fg_mux.h decides, this file applies its decisions to the
 * batchers and gives their steps to the lanes, fg_engine_mux_lanes.c).
 *
 * muxserve (ADBS): the prefill pick steps with joins allowed, the other
 * models decode with joins held, so that one model's new requests join
 * at a time.  temporal: one model with work at a time, in turn, the
 * whole pool to compete for.  spatial: every model with work on its own
 * lane, each in its fixed quota.
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

    /* only the arena's reclaim reads it, and it walks the queue */
    if (em->arena) {
        em->want[i] = ((uint64_t) st.decoding
                       + fg_batch_waiting_need(em->batch[i])) * m->unit;
    }
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

    return fg_engine_mux_lanes_start(em);
}


/*
 * Model i to a lane, its limit set first.  On a thread it is the lane's
 * until handed back; run at once, its state is fed back for the round's
 * next picks.
 */
static void
fg_engine_mux_give(fg_engine_mux_t *em, uint32_t lane, uint32_t i,
    int joins, uint8_t *held)
{
    fg_engine_mux_limit(em, i);
    fg_engine_mux_lane_give(em, lane, i, joins);

    if (em->threads) {
        held[i] = 1;
        em->mx.m[i].stepping = 1;

    } else {
        fg_engine_mux_sync(em, i);
    }
}


/*
 * ADBS: the prefill pick on lane 0, joins allowed; decode steps on the
 * other lanes, joins held, round-robin over the models decoding, those
 * over their quota after a shrink too (held from joining, they run down
 * and give blocks back; their fg_kv limit makes a decode short of a block
 * preempt the youngest).  On threads a decode lane takes one model a
 * round, and the next as soon as it hands it back; run at once, every
 * model decoding steps once a round.
 */
static uint32_t
fg_engine_mux_adbs(fg_engine_mux_t *em, uint8_t *held)
{
    int       p;
    uint8_t   stepped[FG_MUX_MAX_MODELS];
    uint32_t  jobs, k, i, lane;

    jobs = 0;
    memset(stepped, 0, sizeof(stepped));

    if (fg_engine_mux_lane_idle(em, 0)) {
        p = fg_mux_next_prefill(&em->mx);

        if (p >= 0) {
            fg_engine_mux_give(em, 0, (uint32_t) p, 1, held);
            stepped[p] = 1;
            jobs++;
        }
    }

    for (lane = 1; lane < em->n_lanes; lane++) {
        while (fg_engine_mux_lane_idle(em, lane)) {
            for (k = 0; k < em->mx.n; k++) {
                i = (em->rr + k) % em->mx.n;

                if (em->mx.m[i].decoding && !held[i] && !stepped[i]) {
                    break;
                }
            }

            if (k == em->mx.n) {
                return jobs;
            }

            em->rr = (i + 1) % em->mx.n;
            fg_engine_mux_give(em, lane, i, 0, held);
            stepped[i] = 1;
            jobs++;
        }
    }

    return jobs;
}


/* temporal: one model with work a round, in turn, the whole pool */
static uint32_t
fg_engine_mux_temporal(fg_engine_mux_t *em, uint8_t *held)
{
    uint32_t  k, i;

    if (!fg_engine_mux_lane_idle(em, 0)) {
        return 0;
    }

    for (k = 0; k < em->mx.n; k++) {
        i = (em->rr + k) % em->mx.n;

        if (!held[i] && fg_batch_held(em->batch[i])) {
            em->rr = (i + 1) % em->mx.n;
            fg_engine_mux_give(em, 0, i, 1, held);
            return 1;
        }
    }

    return 0;
}


/* spatial: every model with work on its own lane, in its fixed quota */
static uint32_t
fg_engine_mux_spatial(fg_engine_mux_t *em, uint8_t *held)
{
    uint32_t  i, jobs;

    jobs = 0;

    for (i = 0; i < em->mx.n; i++) {
        if (!held[i] && fg_engine_mux_lane_idle(em, i)
            && fg_batch_held(em->batch[i]))
        {
            fg_engine_mux_give(em, i, i, 1, held);
            jobs++;
        }
    }

    return jobs;
}


/*
 * A cache must not keep another model's requests out: the evictable
 * blocks of each model no lane holds go, least recently released first,
 * while the arena has less free than the other models' next steps could
 * take (a block for each sequence decoding, the blocks of all waiting).
 */
static void
fg_engine_mux_reclaim(fg_engine_mux_t *em, const uint8_t *held)
{
    uint32_t  i, room;
    uint64_t  all, others;

    if (em->arena == NULL) {
        return;
    }

    all = 0;

    for (i = 0; i < em->mx.n; i++) {
        all += em->want[i];
    }

    for (i = 0; i < em->mx.n; i++) {
        if (held[i] || fg_kv_evictable_blocks(em->kv[i]) == 0) {
            continue;
        }

        others = all - em->want[i];
        others = others < em->mx.pool ? others : em->mx.pool;
        room = fg_kv_arena_free(em->arena);

        if (room < others) {
            fg_kv_evict(em->kv[i],
                        (uint32_t) ((others - room + em->mx.m[i].unit - 1)
                                    / em->mx.m[i].unit));
        }
    }
}


uint32_t
fg_engine_mux_round(fg_engine_mux_t *em, double now)
{
    uint8_t   held[FG_MUX_MAX_MODELS];
    uint32_t  i, jobs, on_lanes;

    on_lanes = fg_engine_mux_held(em, held);

    for (i = 0; i < em->mx.n; i++) {
        em->mx.m[i].stepping = held[i];

        if (!held[i]) {
            if (em->io) {
                em->io(em->io_ctx, i, FG_MUX_IO_TAKE);
            }

            fg_engine_mux_sync(em, i);
        }
    }

    fg_engine_mux_reclaim(em, held);
    (void) fg_mux_adapt(&em->mx, now);

    switch (em->mx.mode) {

    case FG_MUX_MUXSERVE:
        jobs = fg_engine_mux_adbs(em, held);
        break;

    case FG_MUX_TEMPORAL:
        jobs = fg_engine_mux_temporal(em, held);
        break;

    default:
        jobs = fg_engine_mux_spatial(em, held);
    }

    for (i = 0; i < em->mx.n; i++) {
        if (!held[i] && em->io) {
            em->io(em->io_ctx, i, FG_MUX_IO_PUBLISH);
        }
    }

    return jobs + on_lanes;
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
