
/*
 * fairgate: several models in one engine behind their segments: the
 * serving loop of fg_engine_serve.c, each turn taking from every
 * segment, one fg_engine_mux round, every segment's status (kv_blocks its
 * model's quota in its token blocks, kv_free what of it is free) and
 * tokens; with nothing to run, a sleep until any segment has work.
 */


#include <stdio.h>
#include <time.h>

#include "fg_engine_mux.h"
#include "fg_engine_serve.h"


#define FG_MUX_IDLE_MS  100


static double
fg_engine_mux_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}


static void
fg_engine_mux_publish(fg_engine_mux_t *em, fg_engine_seg_t *seg)
{
    uint32_t          i;
    fg_batch_stats_t  st;

    for (i = 0; i < em->mx.n; i++) {
        fg_batch_stats(em->batch[i], &st);
        fg_engine_mux_quota(em, i, &st.kv_blocks, &st.kv_free);
        fg_engine_seg_publish(&seg[i], &st);
    }

    for (i = 0; i < em->mx.n; i++) {
        fg_engine_seg_flush(&seg[i]);
    }
}


int
fg_engine_mux_serve(fg_engine_mux_t *em, fg_shm_engine_t **shm,
    volatile sig_atomic_t *stop)
{
    int              rc;
    char             err[512];
    uint32_t         i;
    fg_engine_seg_t  seg[FG_MUX_MAX_MODELS];

    for (i = 0; i < em->mx.n; i++) {
        fg_engine_seg_init(&seg[i], shm[i], em->batch[i]);
    }

    while (!*stop) {
        for (i = 0; i < em->mx.n; i++) {
            fg_engine_seg_take(&seg[i]);
        }

        rc = fg_engine_mux_round(em, fg_engine_mux_now(), err, sizeof(err));

        if (rc < 0) {
            fprintf(stderr, "fairgate-engine: step failed: %s\n", err);
        }

        /* the status first, as fg_engine_serve() */
        fg_engine_mux_publish(em, seg);

        if (rc == 0 && !*stop) {
            fg_shm_engine_wait_any(shm, em->mx.n, FG_MUX_IDLE_MS);
        }
    }

    return 0;
}
