
/*
 * fairgate: several models in one engine, each with its own backend, KV
 * pool bookkeeping (fg_kv) and batcher (fg_batch), sharing one pool of
 * head blocks as fg_mux.h decides (MuxServe's quotas and ADBS).  Here the
 * rounds: the models' state fed to fg_mux, each fg_kv limited to its
 * model's quota, and which batchers step on which lane.  Without the
 * shared-memory segments, so that tests drive it on their own clock;
 * fg_engine_mux_serve() puts the segments in front of it.
 *
 * Lanes: the jobs a GPU runs side by side.  muxserve has one for ADBS's
 * prefill pick (joins allowed) and decode_lanes (1 unless told, at most
 * one a model) for the other models' decode steps (joins held), as
 * MuxServe runs a prefill beside other models' decodes: one decode lane
 * steps them one after another, as a GPU's shared memory bandwidth has
 * them take about the sum of their times anyway; a cpu's cores can run
 * them side by side.  spatial has one lane a model, each in its slice of
 * the device; temporal one.  With threads, each lane is a thread that steps the
 * model it is given while the round's caller goes on (a model is on one
 * lane at a time, and only that lane touches its batcher until it hands
 * it back); without, a round runs its lanes' jobs one after another:
 * the prefill pick, then a decode step of every other model with
 * sequences decoding (spatial and temporal as before).
 *
 * A model may hold at most min(its quota, the pool less what the others
 * hold) head blocks, in whole token blocks of its own (its fg_kv's
 * limit).  On the cpu backend the pool is physically one arena of head
 * blocks (fg_kv_arena.c), so a model's lane that finds the others took
 * the arena's last head blocks meanwhile waits or preempts, as it does
 * at its limit; the cuda backend keeps a cache a model.  A model's
 * evictable prefix-cache blocks keep their head blocks, so each round
 * evicts those of models no lane holds while the arena has less free
 * than the other models' next steps could take: a cache keeps only
 * what nobody else needs.
 *
 * The serving loop in front of it (engine/serve/fg_engine_mux_serve.c)
 * sets io: the room calls nothing above it.
 */

#ifndef _FG_ENGINE_MUX_H_INCLUDED_
#define _FG_ENGINE_MUX_H_INCLUDED_


#include <pthread.h>
#include <stddef.h>

#include "fg_batch.h"
#include "fg_mux.h"


typedef struct fg_engine_mux_s  fg_engine_mux_t;


/* what a round does with a model that no lane holds (fg_engine_mux_serve:
 * its segment's intake, and its status and wake-ups) */
typedef enum {
    FG_MUX_IO_TAKE = 0,
    FG_MUX_IO_PUBLISH
} fg_mux_io_e;

typedef void (*fg_engine_mux_io_pt)(void *ctx, uint32_t i, fg_mux_io_e what);


typedef struct {
    fg_engine_mux_t    *em;
    pthread_t           thread;
    int                 model;          /* the model it steps, -1 none */
    int                 joins;
    unsigned            running:1;      /* its thread was started */
} fg_engine_lane_t;


struct fg_engine_mux_s {
    fg_mux_t            mx;
    fg_batch_t         *batch[FG_MUX_MAX_MODELS];
    fg_kv_t            *kv[FG_MUX_MAX_MODELS];
    uint32_t            rr;             /* temporal, decodes: the next to
                                           look at */
    uint64_t            steps[FG_MUX_MAX_MODELS];  /* each model's */
    uint64_t            want[FG_MUX_MAX_MODELS];   /* head blocks its
                                           next step could take */

    fg_engine_mux_io_pt io;             /* NULL: none */
    void               *io_ctx;
    fg_kv_arena_t      *arena;          /* the models' caches', or NULL */

    /* lanes (fg_engine_mux_lanes.c): threads, or run in the round */
    int                 threads;
    uint32_t            decode_lanes;   /* muxserve's; 0: 1 */
    uint32_t            n_lanes;
    fg_engine_lane_t    lane[FG_MUX_MAX_MODELS + 1];
    uint8_t             busy[FG_MUX_MAX_MODELS];   /* on a lane */
    uint32_t            n_busy;
    uint32_t            n_stepping;     /* lanes in a step now */
    uint64_t            beside;         /* steps begun beside another */
    uint64_t            handed;         /* models handed back, ever */
    uint64_t            seen;           /* handed at the last round */
    int                 quit;
    int                 inited;         /* mu and the conds */
    pthread_mutex_t     mu;             /* lanes, busy, steps */
    pthread_cond_t      work;           /* a lane has a job, or quit */
    pthread_cond_t      done;           /* a lane handed its model back */
};


/*
 * mode, pool (head blocks) and each model's unit and rate in em->mx, its
 * batcher and fg_kv in em->batch[] and em->kv[], n in em->mx.n, threads
 * (lanes on threads or not), decode_lanes, io, arena: checks them (NULL, or why
 * not), sets the first quotas and limits and starts the lanes' threads.
 */
const char *fg_engine_mux_init(fg_engine_mux_t *em, double now);

/* stops the lanes' threads (each finishes its step first) */
void fg_engine_mux_stop(fg_engine_mux_t *em);

/*
 * One round: the models no lane holds fed to fg_mux (after io's intake),
 * its adaptation (muxserve), then jobs for the idle lanes as the mode
 * gives, and io's publish of the models no lane holds.  Returns the jobs
 * given plus those still on lanes (0: nothing to do).
 */
uint32_t fg_engine_mux_round(fg_engine_mux_t *em, double now);

/* with threads: until a lane hands a model back, or timeout_ms */
void fg_engine_mux_wait(fg_engine_mux_t *em, int timeout_ms);

/* model i's quota in its token blocks, and what of it is free now */
void fg_engine_mux_quota(const fg_engine_mux_t *em, uint32_t i,
    uint32_t *blocks, uint32_t *free);

/* the lanes' part (fg_engine_mux_lanes.c) */
const char *fg_engine_mux_lanes_start(fg_engine_mux_t *em);
void fg_engine_mux_lane_give(fg_engine_mux_t *em, uint32_t lane, uint32_t i,
    int joins);
int fg_engine_mux_lane_idle(fg_engine_mux_t *em, uint32_t lane);
uint32_t fg_engine_mux_held(fg_engine_mux_t *em, uint8_t *held);


#endif /* _FG_ENGINE_MUX_H_INCLUDED_ */
