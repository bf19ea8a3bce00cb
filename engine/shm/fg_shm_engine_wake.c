
/*
 * fairgate: wake-ups on the engine's side of the segment: the workers
 * that have new completions are woken through their sockets, and the
 * engine sleeps on its own until a worker writes.  The same pass over the
 * workers finds those that are gone (a dead process, a closed socket, a
 * ring left unread past the timeout) and frees their slots.
 */


#include <errno.h>
#include <poll.h>

#include "fg_shm_engine_int.h"


/* how often a flush looks for workers that are gone */
#define FG_SHM_CHECK_NS         100000000ULL


static void
fg_shm_engine_free_worker(fg_shm_engine_t *e, uint32_t w,
    fg_shm_lost_pt lost, void *ctx)
{
    fg_shm_worker_t  *wk;

    wk = fg_shm_worker(e->base, e->h, w);

    if (e->w[w].active) {
        lost(ctx, w);
        e->attached--;
    }

    fg_shm_local_reset(&e->w[w]);

    fg_shm_store(&wk->heartbeat_ns, fg_shm_now());
    fg_shm_store(&wk->state, FG_SHM_W_FREE);
}


/* whether a worker with unread completions has stopped reading them */
static int
fg_shm_worker_stuck(fg_shm_engine_t *e, fg_shm_worker_t *wk,
    fg_shm_local_t *l, uint64_t now)
{
    uint64_t  beat;

    if (l->over_n == 0
        && wk->tail - fg_shm_load(&wk->head) < e->h->comp_slots)
    {
        return 0;
    }

    beat = fg_shm_load(&wk->heartbeat_ns);

    return now > beat && now - beat > e->timeout_ns;
}


void
fg_shm_engine_flush(fg_shm_engine_t *e, fg_shm_lost_pt lost, void *ctx)
{
    int               check;
    uint32_t          w, state;
    uint64_t          now, beat;
    fg_shm_local_t   *l;
    fg_shm_worker_t  *wk;

    now = fg_shm_now();
    check = now - e->last_check >= FG_SHM_CHECK_NS;

    if (check) {
        e->last_check = now;
    }

    for (w = 0; w < e->h->max_workers; w++) {
        wk = fg_shm_worker(e->base, e->h, w);
        l = &e->w[w];
        state = fg_shm_load(&wk->state);

        if (state == FG_SHM_W_FREE) {
            continue;
        }

        if (state == FG_SHM_W_ATTACHING) {
            beat = fg_shm_load(&wk->heartbeat_ns);

            /* a worker that died in the middle of attaching */
            if (check && ((wk->pid && !fg_shm_pid_alive(wk->pid, wk->pidns))
                          || (now > beat && now - beat > e->timeout_ns)))
            {
                fg_shm_engine_free_worker(e, w, lost, ctx);
            }

            continue;
        }

        if (state == FG_SHM_W_DETACHING) {
            fg_shm_engine_free_worker(e, w, lost, ctx);
            continue;
        }

        l = fg_shm_engine_worker(e, w);

        if (l->over_n) {
            fg_shm_over_move(e, w, l);
        }

        if (l->wake) {
            l->wake = 0;

            /* pairs with the worker's fence between arming and looking
             * at its ring once more */
            fg_shm_fence();

            if (__atomic_exchange_n(&wk->armed, 0, __ATOMIC_SEQ_CST)
                && fg_shm_wake(e->sock, wk->sock, wk->sock_len) != 0
                && (errno == ECONNREFUSED || errno == ENOENT))
            {
                l->dead = 1;
            }
        }

        if (l->dead || l->lost
            || (check && (!fg_shm_pid_alive(wk->pid, wk->pidns)
                          || fg_shm_worker_stuck(e, wk, l, now))))
        {
            e->lost_workers++;
            fg_shm_engine_free_worker(e, w, lost, ctx);
        }
    }
}


void
fg_shm_engine_wait(fg_shm_engine_t *e, int timeout_ms)
{
    fg_shm_engine_wait_any(&e, 1, timeout_ms);
}


/* whether a segment's rings hold something the engine has not taken */
static int
fg_shm_engine_pending(fg_shm_engine_t *e)
{
    return fg_shm_load(&e->sub->tail) != e->sub_head
           || fg_shm_load(&e->can->tail) != e->can_head;
}


void
fg_shm_engine_wait_any(fg_shm_engine_t **e, uint32_t n, int timeout_ms)
{
    uint32_t       i;
    struct pollfd  pfd[FG_SHM_ENGINE_WAIT_MAX];

    n = n < FG_SHM_ENGINE_WAIT_MAX ? n : FG_SHM_ENGINE_WAIT_MAX;

    for (i = 0; i < n; i++) {
        fg_shm_store(&e[i]->st->sleeping, 1);
    }

    /* pairs with a worker's fence between publishing and reading
     * "sleeping": one of the two sees the other's write */
    fg_shm_fence();

    for (i = 0; i < n && !fg_shm_engine_pending(e[i]); i++) { /* void */ }

    if (i == n) {
        for (i = 0; i < n; i++) {
            pfd[i].fd = e[i]->sock;
            pfd[i].events = POLLIN;
            pfd[i].revents = 0;
        }

        (void) poll(pfd, n, timeout_ms);
    }

    for (i = 0; i < n; i++) {
        fg_shm_store(&e[i]->st->sleeping, 0);
        fg_shm_drain(e[i]->sock);
    }
}
