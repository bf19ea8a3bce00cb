
/*
 * fairgate: what the parts of the engine's side of the segment share: the
 * segment itself (fg_shm_engine.c), its rings (fg_shm_engine_ring.c), the
 * wake-ups (fg_shm_engine_wake.c) and the prefix index
 * (fg_shm_engine_index.c).  The
 * engine's record of each worker is brought up to date inline: every
 * completion looks at it.
 */

#ifndef _FG_SHM_ENGINE_INT_H_INCLUDED_
#define _FG_SHM_ENGINE_INT_H_INCLUDED_


#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fg_shm_engine.h"


/* what the engine keeps of a worker beside its entry */
typedef struct {
    uint32_t          epoch;            /* the attach it knows; 0: none */
    unsigned          active:1;
    unsigned          wake:1;
    unsigned          dead:1;           /* its socket is gone */
    unsigned          lost:1;           /* its overflow grew too long */

    /* completions its full ring could not take, in order */
    fg_shm_comp_t    *over;
    uint32_t          over_head;
    uint32_t          over_n;
    uint32_t          over_cap;
} fg_shm_local_t;


struct fg_shm_engine_s {
    char              name[FG_SHM_NAME_MAX + 2];
    void             *base;
    size_t            size;
    fg_shm_header_t  *h;
    fg_shm_status_t  *st;
    fg_shm_mpsc_t    *sub;
    fg_shm_mpsc_t    *can;
    fg_shm_local_t   *w;
    int               sock;

    uint64_t          sub_head;
    uint64_t          can_head;
    int32_t          *prompt;
    char             *grammar;       /* FG_SHM_MAX_GRAMMAR bytes */
    uint64_t          timeout_ns;
    uint64_t          last_check;
    uint64_t          lost_workers;
    uint32_t          attached;

    /* the prefix index: keys in the live table, and keys and tombstones */
    uint32_t          index_keys;
    uint32_t          index_used;

    fg_shm_cancel_t   pend[FG_SHM_PENDING];
    uint32_t          n_pend;
    uint32_t          next_pend;

    pthread_t         hb;
    pthread_mutex_t   hb_lock;
    pthread_cond_t    hb_cond;
    int               hb_stop;
    unsigned          hb_running:1;
    unsigned          created:1;
};


static inline void
fg_shm_local_reset(fg_shm_local_t *l)
{
    free(l->over);
    memset(l, 0, sizeof(fg_shm_local_t));
}


/*
 * The engine's record of a worker, brought up to date with its entry: an
 * entry that is active under a new epoch is a new attachment.  NULL when
 * the worker is not attached.
 */
static inline fg_shm_local_t *
fg_shm_engine_worker(fg_shm_engine_t *e, uint32_t w)
{
    uint32_t          state, epoch;
    fg_shm_local_t   *l;
    fg_shm_worker_t  *wk;

    if (w >= e->h->max_workers) {
        return NULL;
    }

    wk = fg_shm_worker(e->base, e->h, w);
    l = &e->w[w];

    state = fg_shm_load(&wk->state);

    if (state != FG_SHM_W_ACTIVE) {
        return l->active ? l : NULL;
    }

    epoch = fg_shm_load(&wk->epoch);

    if (!l->active || l->epoch != epoch) {
        fg_shm_local_reset(l);
        l->epoch = epoch;
        l->active = 1;
        e->attached++;
    }

    return l;
}


/* moves a worker's overflowed completions into its ring while it has room */
void fg_shm_over_move(fg_shm_engine_t *e, uint32_t w, fg_shm_local_t *l);


#endif /* _FG_SHM_ENGINE_INT_H_INCLUDED_ */
