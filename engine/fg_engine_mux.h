
/*
 * fairgate: several models in one engine, each with its own backend, KV
 * pool bookkeeping (fg_kv) and batcher (fg_batch), sharing one pool of
 * head blocks as fg_mux.h decides (MuxServe's quotas and ADBS).  Here the
 * rounds: the models' state fed to fg_mux, each fg_kv limited to its
 * model's quota, and which batchers step, joins allowed or not.  Without
 * the shared-memory segments, so that tests drive it on their own clock;
 * fg_engine_mux_serve() puts the segments in front of it.
 *
 * Physically each model's backend holds its own KV arena, of what the
 * whole pool holds in that model's token blocks; the pool is shared by
 * accounting: a model may hold at most min(its quota, the pool less what
 * the others hold) head blocks, in whole token blocks of its own.
 */

#ifndef _FG_ENGINE_MUX_H_INCLUDED_
#define _FG_ENGINE_MUX_H_INCLUDED_


#include <signal.h>
#include <stddef.h>

#include "fg_batch.h"
#include "fg_mux.h"
#include "fg_shm_engine.h"


typedef struct {
    fg_mux_t            mx;
    fg_batch_t         *batch[FG_MUX_MAX_MODELS];
    fg_kv_t            *kv[FG_MUX_MAX_MODELS];
    uint32_t            rr;             /* temporal: the next to look at */
    uint64_t            rounds;
    uint64_t            steps[FG_MUX_MAX_MODELS];  /* each model's */
} fg_engine_mux_t;


/*
 * mode, pool (head blocks) and each model's unit and rate in em->mx, its
 * batcher and fg_kv in em->batch[] and em->kv[], n in em->mx.n: checks
 * them (NULL, or why not) and sets the first quotas and limits.
 */
const char *fg_engine_mux_init(fg_engine_mux_t *em, double now);

/*
 * One round: the models' state to fg_mux, its adaptation (muxserve),
 * then the steps the mode gives.  Returns the sequences run by all the
 * steps (0: nothing to do), or -1 when a step failed (err says which
 * model and why; the others went on).
 */
int fg_engine_mux_round(fg_engine_mux_t *em, double now, char *err,
    size_t errlen);

/* model i's quota in its token blocks, and what of it is free now */
void fg_engine_mux_quota(const fg_engine_mux_t *em, uint32_t i,
    uint32_t *blocks, uint32_t *free);

/*
 * Serves every model's segment (shm[i] in front of em->batch[i]) until
 * *stop is set; returns 0.  As fg_engine_serve(), for several models.
 */
int fg_engine_mux_serve(fg_engine_mux_t *em, fg_shm_engine_t **shm,
    volatile sig_atomic_t *stop);


#endif /* _FG_ENGINE_MUX_H_INCLUDED_ */
