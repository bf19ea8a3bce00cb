
/*
 * fairgate: the engine's serving loops, engine/serve's contract: the
 * shared-memory protocol's engine half (fg_shm_engine) in front of the
 * batcher (fg_batch), or of several models' rounds (fg_engine_mux).
 *
 * Each turn: take submissions while the batcher has room (the rest wait in
 * the ring, which the gateway sees fill), take cancels, run one step,
 * deliver its tokens to the workers' rings and wake them, watch the
 * workers, publish the status; with nothing to run, sleep on the wake-up
 * socket for up to 100 ms.
 */

#ifndef _FG_ENGINE_SERVE_H_INCLUDED_
#define _FG_ENGINE_SERVE_H_INCLUDED_


#include <signal.h>
#include <stddef.h>

#include "fg_batch.h"
#include "fg_engine_mux.h"
#include "fg_shm_engine.h"


/* one segment in front of one batcher: what the loop keeps of it */
typedef struct {
    fg_shm_engine_t    *shm;
    fg_batch_t         *batch;
    fg_rand_t           seeds;          /* for requests that bring none */
    uint64_t            submitted;
    uint32_t            max_seqs;
} fg_engine_seg_t;


/* the batcher's emit callback: fg_batch_conf_t.emit, with ctx the shm
 * engine; events of owner w go to worker w */
void fg_engine_serve_emit(void *ctx, const fg_batch_event_t *ev);

/* the parts of a turn, for fg_engine_mux_serve() too: */
void fg_engine_seg_init(fg_engine_seg_t *s, fg_shm_engine_t *shm,
    fg_batch_t *batch);

/* submissions while the batcher has room, then every cancel */
void fg_engine_seg_take(fg_engine_seg_t *s);

/* the status, from the batcher's stats (kv_blocks and kv_free as given) */
void fg_engine_seg_publish(fg_engine_seg_t *s, const fg_batch_stats_t *st);

/* tokens to the workers' rings, the workers woken and watched */
void fg_engine_seg_flush(fg_engine_seg_t *s);

/*
 * Serves until *stop is set (a signal handler sets it); returns 0.  Step
 * failures end their sequences with an error, are written to stderr, and
 * serving goes on.
 */
int fg_engine_serve(fg_shm_engine_t *shm, fg_batch_t *batch,
    volatile sig_atomic_t *stop);

/*
 * Serves every model's segment (shm[i] in front of em->batch[i]) until
 * *stop is set; returns 0.  As fg_engine_serve(), for several models
 * (fg_engine_mux_serve.c).
 */
int fg_engine_mux_serve(fg_engine_mux_t *em, fg_shm_engine_t **shm,
    volatile sig_atomic_t *stop);


#endif /* _FG_ENGINE_SERVE_H_INCLUDED_ */
