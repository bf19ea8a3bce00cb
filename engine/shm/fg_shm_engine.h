
/*
 * fairgate: the engine's half of the shared-memory protocol
 * (docs/engine-protocol.md): it creates the segment and its wake-up
 * socket, takes submissions and cancels from the rings, writes each
 * worker's completions, publishes its status, and watches the workers.
 *
 * Never blocked by a worker: a completion ring that is full keeps its
 * entries in an overflow queue of the engine's own; a worker whose process
 * is gone, or that is alive but has neither read its ring nor beaten its
 * heartbeat for worker_timeout_ms while entries wait for it, is declared
 * lost: its requests are cancelled (through the caller's callback) and its
 * slot freed.
 *
 * Single-threaded but for a heartbeat thread that stamps the status every
 * 100 ms, so that a long step (a big prefill on a CPU) does not look like
 * a dead engine.
 */

#ifndef _FG_SHM_ENGINE_H_INCLUDED_
#define _FG_SHM_ENGINE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_shm_proto.h"


#define FG_SHM_PENDING  1024


typedef struct fg_shm_engine_s  fg_shm_engine_t;


typedef struct {
    const char      *name;              /* "/fairgate" */
    const char      *group;             /* the segment's group, or NULL */

    uint32_t         max_workers;       /* 0: 64 */
    uint32_t         sub_slots;         /* 0: 1024; powers of two */
    uint32_t         cancel_slots;      /* 0: 1024 */
    uint32_t         comp_slots;        /* 0: 4096 */
    uint32_t         worker_timeout_ms; /* 0: 5000 */

    /* published in the header for the gateway */
    fg_shm_shape_t   shape;
    const char      *model;
    const char      *backend;
    uint32_t         embd;              /* an embedding's floats; 0: none */
} fg_shm_engine_conf_t;


/* a request taken from the submission ring */
typedef struct {
    uint32_t         worker;
    uint64_t         req_id;
    const int32_t   *prompt;
    uint32_t         n_prompt;
    uint32_t         max_tokens;
    uint32_t         top_k;
    float            temperature;
    float            top_p;
    uint64_t         seed;
    uint32_t         flags;             /* FG_SHM_SUB_* */
    const int32_t   *stop;
    uint32_t         n_stop;
    float            ttft_target;       /* s; 0: none given */
    float            tokens_per_s;      /* 0: none given */

    /* version 4 (fg_shm_sub_t): the logits' adjustments, logprobs */
    float            frequency_penalty;
    float            presence_penalty;
    float            repetition_penalty;
    float            min_p;
    uint32_t         top_logprobs;
    const int32_t   *bias_id;
    const float     *bias;
    uint32_t         n_bias;

    /* version 5: choices, 1 .. FG_SHM_MAX_CHOICES */
    uint32_t         n_choices;

    /* version 6 */
    uint32_t         embed;             /* FG_SHM_EMBED_*: an embedding */

    /* version 7: a GBNF grammar (NULL: none), n_grammar bytes */
    const char      *grammar;
    uint32_t         n_grammar;
} fg_shm_request_t;


/*
 * Takes one request: returns 0 when accepted, FG_SHM_ERR_* to refuse it
 * (the engine sends the refusal), or -1 to leave it in the ring for later
 * (the engine is full).
 */
typedef int (*fg_shm_take_pt)(void *ctx, const fg_shm_request_t *req);

/*
 * A cancel for (worker, req_id): 0 when the request was held (its last
 * completion is the caller's to send), -1 when not.  A cancel can pass
 * its own submission, which may still wait in the ring: the engine keeps
 * the last FG_SHM_PENDING unknown cancels and refuses a submission that
 * one of them names, with FG_SHM_FINISH_CANCEL.
 */
typedef int (*fg_shm_cancel_pt)(void *ctx, uint32_t worker,
    uint64_t req_id);

/* a worker is gone: forget every request it had */
typedef void (*fg_shm_lost_pt)(void *ctx, uint32_t worker);


/*
 * Creates and maps the segment (a stale one left by a dead engine is
 * replaced; a live engine's is not) and the wake-up socket.  NULL with a
 * message in err.
 */
fg_shm_engine_t *fg_shm_engine_create(const fg_shm_engine_conf_t *conf,
    char *err, size_t errlen);

/* marks the segment stopped, wakes every worker, unlinks the name */
void fg_shm_engine_destroy(fg_shm_engine_t *e);

/* the wake-up socket: readable when a worker has written something */
int fg_shm_engine_fd(const fg_shm_engine_t *e);
uint64_t fg_shm_engine_generation(const fg_shm_engine_t *e);

/* the segment's header, as published */
const fg_shm_header_t *fg_shm_engine_header(const fg_shm_engine_t *e);

/*
 * Takes up to max requests (in ring order) and then every cancel; returns
 * how many requests it took.
 */
uint32_t fg_shm_engine_take(fg_shm_engine_t *e, uint32_t max,
    fg_shm_take_pt take, fg_shm_cancel_pt cancel, void *ctx);

/* queues one completion for a worker (dropped if it is not attached) */
void fg_shm_engine_complete(fg_shm_engine_t *e, uint32_t worker,
    const fg_shm_comp_t *c);

/* queues an embedding's n floats for a worker, in pieces (fg_shm_vec_t),
 * before its completion */
void fg_shm_engine_vector(fg_shm_engine_t *e, uint32_t worker,
    uint64_t req_id, const float *v, uint32_t n);

/*
 * A token's log-probabilities, before its completion (version 4): pairs
 * of ids and log-probabilities, the token's own first, then its n - 1
 * best alternatives (n <= FG_SHM_MAX_TOP + 1), in pieces (fg_shm_lp_t);
 * prompt 1: a prompt position's, with no completion after them
 */
void fg_shm_engine_logprobs(fg_shm_engine_t *e, uint32_t worker,
    uint64_t req_id, uint32_t choice, unsigned prompt, const int32_t *ids,
    const float *lps, uint32_t n);

/*
 * Moves overflowed completions into their rings, wakes the workers that
 * have new ones, and every 100 ms checks that workers are alive (lost()
 * for those that are not).
 */
void fg_shm_engine_flush(fg_shm_engine_t *e, fg_shm_lost_pt lost,
    void *ctx);

/*
 * The prefix index (fg_shm_engine_index.c): a block hash the prefix cache
 * took in (held 1) or let go (0); the fg_kv_index_pt of fg_kv.h, with ctx
 * the engine.  Never fails: the index has room for every KV block.
 */
void fg_shm_engine_index(void *ctx, uint64_t hash, int held);

/* publishes the load (status seqlock) */
void fg_shm_engine_publish(fg_shm_engine_t *e, fg_shm_load_t *load);

/*
 * Waits up to timeout_ms for a wake-up, unless something is in the rings
 * already (a worker only wakes an engine that said it sleeps).
 */
void fg_shm_engine_wait(fg_shm_engine_t *e, int timeout_ms);

/* the same for several segments (one engine, several models): wakes when
 * any of them has something */
#define FG_SHM_ENGINE_WAIT_MAX  8

void fg_shm_engine_wait_any(fg_shm_engine_t **e, uint32_t n,
    int timeout_ms);


#endif /* _FG_SHM_ENGINE_H_INCLUDED_ */
