
/*
 * fairgate: several models in one engine behind their segments: the
 * serving loop of fg_engine_serve.c.  Each turn is one fg_engine_mux
 * round: for each model no lane holds, its segment's intake, then the
 * jobs, then its status (kv_blocks its model's quota in its token
 * blocks, kv_free what of it is free) and its tokens' wake-ups.  With
 * steps on lanes, the next turn comes when a lane hands a model back (or
 * after FG_MUX_INTAKE_MS, for new requests); with nothing to run, when
 * any segment has work.
 */


#include <stdio.h>
#include <time.h>

#include "fg_engine_mux.h"
#include "fg_engine_serve.h"


#define FG_MUX_IDLE_MS    100

/* with steps on lanes: how long new requests may wait to be taken */
#define FG_MUX_INTAKE_MS  2


static double
fg_engine_mux_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}


typedef struct {
    fg_engine_mux_t   *em;
    fg_engine_seg_t    seg[FG_MUX_MAX_MODELS];
} fg_engine_mux_segs_t;


/* a model no lane holds: its segment's intake, or its status (the status
 * first, as fg_engine_serve()) and the wake-ups for its tokens */
static void
fg_engine_mux_io(void *ctx, uint32_t i, fg_mux_io_e what)
{
    fg_batch_stats_t       st;
    fg_engine_mux_segs_t  *ss;

    ss = ctx;

    if (what == FG_MUX_IO_TAKE) {
        fg_engine_seg_take(&ss->seg[i]);
        return;
    }

    fg_batch_stats(ss->em->batch[i], &st);
    fg_engine_mux_quota(ss->em, i, &st.kv_blocks, &st.kv_free);
    fg_engine_seg_publish(&ss->seg[i], &st);
    fg_engine_seg_flush(&ss->seg[i]);
}


int
fg_engine_mux_serve(fg_engine_mux_t *em, fg_shm_engine_t **shm,
    volatile sig_atomic_t *stop)
{
    uint32_t               i, n;
    fg_engine_mux_segs_t   ss;

    ss.em = em;

    for (i = 0; i < em->mx.n; i++) {
        fg_engine_seg_init(&ss.seg[i], shm[i], em->batch[i]);
    }

    em->io = fg_engine_mux_io;
    em->io_ctx = &ss;

    while (!*stop) {
        n = fg_engine_mux_round(em, fg_engine_mux_now());

        if (n == 0) {
            fg_shm_engine_wait_any(shm, em->mx.n, FG_MUX_IDLE_MS);

        } else {
            fg_engine_mux_wait(em, FG_MUX_INTAKE_MS);
        }
    }

    /* the lanes' last steps, before the segments go */
    fg_engine_mux_stop(em);
    em->io = NULL;

    return 0;
}
