
/*
 * fairgate: the lanes of fg_engine_mux (fg_engine_mux.h).  A job is one
 * step of one model.  A lane on a thread runs it while the round's
 * caller goes on; the model is the lane's from the give until it hands
 * it back (busy[i] cleared under mu), and only then may a round touch
 * its batcher, its fg_kv or its segment again.  Without threads a lane
 * runs its job within the give.
 */


#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fg_engine_mux.h"


static void
fg_engine_mux_run(fg_engine_mux_t *em, uint32_t i, int joins)
{
    int   rc;
    char  err[256];

    fg_batch_hold_joins(em->batch[i], !joins);
    rc = fg_batch_step(em->batch[i], err, sizeof(err));
    fg_batch_hold_joins(em->batch[i], 0);

    if (rc < 0) {
        fprintf(stderr, "fairgate-engine: step failed: model %u: %s\n", i,
                err);
    }

    pthread_mutex_lock(&em->mu);
    em->steps[i] += rc != 0;
    pthread_mutex_unlock(&em->mu);
}


static void *
fg_engine_mux_lane(void *data)
{
    int                joins;
    uint32_t           i;
    fg_engine_mux_t   *em;
    fg_engine_lane_t  *l;

    l = data;
    em = l->em;

    pthread_mutex_lock(&em->mu);

    for ( ;; ) {
        while (l->model < 0 && !em->quit) {
            pthread_cond_wait(&em->work, &em->mu);
        }

        /* a job given before the quit is run first */
        if (l->model < 0) {
            break;
        }

        i = (uint32_t) l->model;
        joins = l->joins;
        em->beside += em->n_stepping > 0;
        em->n_stepping++;
        pthread_mutex_unlock(&em->mu);

        fg_engine_mux_run(em, i, joins);

        pthread_mutex_lock(&em->mu);
        em->n_stepping--;
        l->model = -1;
        em->busy[i] = 0;
        em->n_busy--;
        em->handed++;
        pthread_cond_signal(&em->done);
    }

    pthread_mutex_unlock(&em->mu);

    return NULL;
}


const char *
fg_engine_mux_lanes_start(fg_engine_mux_t *em)
{
    sigset_t     all, old;
    uint32_t     k;
    const char  *e;

    k = em->decode_lanes == 0 ? 1
        : em->decode_lanes < em->mx.n ? em->decode_lanes : em->mx.n;

    em->n_lanes = em->mx.mode == FG_MUX_SPATIAL ? em->mx.n
                  : em->mx.mode == FG_MUX_MUXSERVE ? 1 + k : 1;

    pthread_mutex_init(&em->mu, NULL);
    pthread_cond_init(&em->work, NULL);
    pthread_cond_init(&em->done, NULL);
    em->inited = 1;

    for (k = 0; k < em->n_lanes; k++) {
        em->lane[k].em = em;
        em->lane[k].model = -1;
    }

    /* the lanes block every signal, so that SIGTERM wakes the round's
     * thread from its wait at once */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    e = NULL;

    for (k = 0; em->threads && k < em->n_lanes; k++) {
        if (pthread_create(&em->lane[k].thread, NULL, fg_engine_mux_lane,
                           &em->lane[k])
            != 0)
        {
            e = "could not start a lane's thread";
            break;
        }

        em->lane[k].running = 1;
    }

    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (e != NULL) {
        fg_engine_mux_stop(em);
    }

    return e;
}


void
fg_engine_mux_stop(fg_engine_mux_t *em)
{
    uint32_t  k;

    if (!em->inited) {
        return;
    }

    pthread_mutex_lock(&em->mu);
    em->quit = 1;
    pthread_cond_broadcast(&em->work);
    pthread_mutex_unlock(&em->mu);

    for (k = 0; k < em->n_lanes; k++) {
        if (em->lane[k].running) {
            pthread_join(em->lane[k].thread, NULL);
            em->lane[k].running = 0;
        }
    }

    pthread_cond_destroy(&em->done);
    pthread_cond_destroy(&em->work);
    pthread_mutex_destroy(&em->mu);
    em->inited = 0;
}


void
fg_engine_mux_lane_give(fg_engine_mux_t *em, uint32_t lane, uint32_t i,
    int joins)
{
    fg_engine_lane_t  *l;

    if (!em->threads) {
        fg_engine_mux_run(em, i, joins);
        return;
    }

    l = &em->lane[lane];

    pthread_mutex_lock(&em->mu);
    l->model = (int) i;
    l->joins = joins;
    em->busy[i] = 1;
    em->n_busy++;
    pthread_cond_broadcast(&em->work);
    pthread_mutex_unlock(&em->mu);
}


int
fg_engine_mux_lane_idle(fg_engine_mux_t *em, uint32_t lane)
{
    int  idle;

    if (!em->threads) {
        return 1;
    }

    pthread_mutex_lock(&em->mu);
    idle = em->lane[lane].model < 0;
    pthread_mutex_unlock(&em->mu);

    return idle;
}


/* the round's view: which models are on lanes, and the hand-backs seen */
uint32_t
fg_engine_mux_held(fg_engine_mux_t *em, uint8_t *held)
{
    uint32_t  n;

    pthread_mutex_lock(&em->mu);
    memcpy(held, em->busy, sizeof(em->busy));
    em->seen = em->handed;
    n = em->n_busy;
    pthread_mutex_unlock(&em->mu);

    return n;
}


void
fg_engine_mux_wait(fg_engine_mux_t *em, int timeout_ms)
{
    struct timespec  ts;

    if (!em->threads) {
        return;
    }

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long) timeout_ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;

    pthread_mutex_lock(&em->mu);

    while (em->handed == em->seen && em->n_busy > 0) {
        if (pthread_cond_timedwait(&em->done, &em->mu, &ts) != 0) {
            break;
        }
    }

    pthread_mutex_unlock(&em->mu);
}
