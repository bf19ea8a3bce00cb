
/*
 * fairgate: several models in one engine (MuxServe, ../shared/ALGORITHMS.md
 * "MuxServe"), the decisions alone: each model's share of one KV pool
 * (its quota) and which model's jobs run next (ADBS).  The engine and the
 * simulator keep the models' state (blocks held, queues) in fg_mux_model_t
 * and ask here; one copy for both, as fg_sched_andes.c for Andes.
 *
 * The pool is counted in head blocks: one head's K or V for block_size
 * tokens, so that models of different shapes share it.  A token block of
 * model m (block_size tokens of every layer's K and V) takes unit =
 * 2 x layers x kv_heads head blocks; a model's quota and use are head
 * blocks, whole token blocks of it.
 *
 * Three ways to share, as the baselines and the paper:
 *
 *   spatial    each model a fixed slice of the pool and of the compute
 *              by its size (unit: the paper's baseline, dedicated GPUs
 *              sized to each model whatever its popularity), its own
 *              steps
 *   temporal   the whole pool to anyone, one model's step at a time,
 *              round-robin among those with work
 *   muxserve   quotas start by rate x unit and adapt every adapt_s (8 s):
 *              a model using >= 90% of its quota with requests waiting
 *              (or whose next request exceeds its quota) takes about a
 *              tenth of its quota, at least what its next request lacks,
 *              from those using < 90%,
 *              in proportion to their spare; blocks nobody holds by quota
 *              go to the longest queue.  ADBS: a prefill job first,
 *              round-robin across models, if it fits its model's quota;
 *              then decode jobs round-robin while their models stay
 *              within quota.
 */

#ifndef _FG_MUX_H_INCLUDED_
#define _FG_MUX_H_INCLUDED_


#include <stdint.h>


#define FG_MUX_MAX_MODELS  8
#define FG_MUX_ADAPT_S     8.0      /* s between quota adaptations */
#define FG_MUX_HIGH        0.9      /* use / quota: busy above, spare below */
#define FG_MUX_TAKE        0.1      /* of its quota a busy model takes */


typedef enum {
    FG_MUX_SPATIAL = 0,
    FG_MUX_TEMPORAL,
    FG_MUX_MUXSERVE
} fg_mux_mode_e;


/* one model: the caller fills the inputs, fg_mux_*() the outputs */
typedef struct {
    /* inputs, set once */
    uint32_t         unit;          /* head blocks a token block takes */
    double           rate;          /* requests/s expected (> 0) */

    /* inputs, kept current by the caller */
    uint64_t         used;          /* head blocks it holds */
    uint64_t         peak;          /* the most it held since the last
                                       adaptation (the caller's max of
                                       used; fg_mux_adapt() resets it) */
    uint32_t         waiting;       /* requests not started */
    uint64_t         next_need;     /* head blocks its next waiting
                                       request needs to start (0: none) */
    uint32_t         decoding;      /* sequences with a token to make */
    unsigned         stepping:1;    /* its step runs now (an engine's
                                       lane): no job for it */

    /* outputs */
    uint64_t         quota;         /* head blocks it may hold */
} fg_mux_model_t;


typedef struct {
    fg_mux_mode_e    mode;
    uint64_t         pool;          /* head blocks in all */
    uint32_t         n;             /* models, 1 .. FG_MUX_MAX_MODELS */
    fg_mux_model_t   m[FG_MUX_MAX_MODELS];

    double           adapt_s;       /* FG_MUX_ADAPT_S */
    double           adapted;       /* when, the caller's clock */
    uint32_t         rr_prefill;    /* the next model to look at first */
    uint32_t         rr_decode;
} fg_mux_t;


/* NULL, or why conf is wrong (no models, a unit of 0, a rate <= 0 ...) */
const char *fg_mux_conf_error(const fg_mux_t *mx);

/*
 * Initial quotas: muxserve splits the pool by rate x unit, spatial by
 * unit alone, each whole token blocks of its model, at least one token
 * block each; temporal gives each the whole pool (they compete for it).
 */
void fg_mux_init(fg_mux_t *mx, double now);

/*
 * muxserve: adapts the quotas if adapt_s has passed since the last time
 * (returns 1), else does nothing (0); the others never adapt.
 */
int fg_mux_adapt(fg_mux_t *mx, double now);

/* whether model i may take need more head blocks: its quota and the pool */
int fg_mux_fits(const fg_mux_t *mx, uint32_t i, uint64_t need);

/*
 * ADBS's prefill pick: the next model not stepping, round-robin, whose
 * first waiting request fits (fg_mux_fits() with its next_need); -1 if
 * none.  The
 * paper's Algorithm 3 also holds decodes back while a prefill waits for
 * compute; here a prefill waits only for KV blocks, which only decodes
 * that finish give back, so decodes go on (holding them would deadlock).
 */
int fg_mux_next_prefill(fg_mux_t *mx);

/*
 * ADBS's decode jobs for this round: the models with sequences decoding
 * that are within their quota (used <= quota), in round-robin order from
 * the cursor, which moves on by one each call; writes them to order[]
 * (FG_MUX_MAX_MODELS room) and returns how many.
 */
uint32_t fg_mux_decode_order(fg_mux_t *mx, uint32_t *order);


#endif /* _FG_MUX_H_INCLUDED_ */
