
/*
 * fairgate: the gateway's half of the shared-memory protocol with
 * fairgate-engine (docs/engine-protocol.md).  Pure C, no nginx types: an
 * nginx worker links it (libfgshm.a) and drives it from its event loop.
 *
 * Nothing here ever blocks: a full ring, a contended ring lock, a missing
 * engine all return at once with a code the caller can turn into a 503 or
 * a retry.  One client per process (an nginx worker), made in that
 * process (init_process, after the fork: the socket and the attachment
 * are the process's own); it is not thread-safe.
 *
 * Use:
 *
 *   c = fg_shm_client_create("/fairgate", 2000, err, sizeof(err));
 *   register fg_shm_client_fd(c) for reading in the event loop;
 *   every 100 ms .. 1 s: fg_shm_client_tick(c), which also attaches:
 *       FG_SHM_EV_LOST  the engine died or stopped: every open request is
 *                       lost (end each with an error); new requests get
 *                       FG_SHM_EDOWN until
 *       FG_SHM_EV_BACK  attached (again): fg_shm_client_info() tells the
 *                       engine's generation and model
 *   dispatch: fg_shm_client_submit(c, &req) with a request id unique among
 *       this client's open requests;
 *   client gone: fg_shm_client_cancel(c, id);
 *   fd readable (and after each tick): fg_shm_client_poll(c, ev, n) until
 *       it returns fewer than n; each event is a token, and the last one of
 *       a request has finish != 0;
 *   capacity: fg_shm_client_status(c, &st) (free KV blocks, seats, load);
 *   locality: fg_shm_client_prefix_match(c, hashes, n), the cached prefix
 *       of a prompt's block hashes on this engine.
 *
 * Every submission the engine takes ends with exactly one event whose
 * finish is not FG_SHM_FINISH_NONE (a cancel's too), unless the engine is
 * lost first.
 */

#ifndef _FG_SHM_CLIENT_H_INCLUDED_
#define _FG_SHM_CLIENT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_shm_proto.h"


/* return codes */
#define FG_SHM_OK           0
#define FG_SHM_EAGAIN      -1       /* try again soon: no engine yet, or
                                       the ring's lock was busy */
#define FG_SHM_EFULL       -2       /* the ring is full: the engine is
                                       behind (503) */
#define FG_SHM_EDOWN       -3       /* not attached to an engine */
#define FG_SHM_EINVAL      -4       /* a request the protocol cannot carry */
#define FG_SHM_ERROR       -5       /* cannot attach for good: see err */

/* fg_shm_client_tick() */
#define FG_SHM_EV_NONE      0
#define FG_SHM_EV_LOST      1
#define FG_SHM_EV_BACK      2


typedef struct fg_shm_client_s  fg_shm_client_t;


typedef struct {
    uint64_t         req_id;
    const int32_t   *prompt;
    uint32_t         n_prompt;          /* 1 .. context */
    uint32_t         max_tokens;        /* 0: up to the context's end */
    float            temperature;       /* 0: greedy */
    float            top_p;             /* (0, 1]; 0 is taken as 1 */
    uint32_t         top_k;             /* 0: all */
    uint64_t         seed;
    unsigned         has_seed:1;        /* else the engine picks one */
    unsigned         ignore_eos:1;
    const int32_t   *stop;              /* stop token ids */
    uint32_t         n_stop;            /* at most FG_SHM_MAX_STOP */
    float            ttft_target;       /* s to the first token; 0: none */
    float            tokens_per_s;      /* the reader's speed; 0: none */

    /* version 4: the logits' adjustments, the log-probabilities */
    float            frequency_penalty; /* 0: off */
    float            presence_penalty;  /* 0: off */
    float            repetition_penalty; /* 0 or 1: off */
    float            min_p;             /* 0: off */
    const int32_t   *bias_id;           /* logit_bias: n_bias entries, */
    const float     *bias;              /* at most FG_SHM_MAX_BIAS */
    uint32_t         n_bias;
    uint32_t         top_logprobs;      /* with logprobs: 0 .. 20 */
    unsigned         logprobs:1;        /* events carry them */
    unsigned         prompt_lp:1;       /* with logprobs: the prompt's
                                           too (FG_SHM_SUB_PROMPT_LP) */

    /* version 5: choices (OpenAI's n), 0 or 1 for one, at most
     * FG_SHM_MAX_CHOICES; each completion says its choice */
    uint32_t         n_choices;

    /* an embedding (FG_SHM_EMBED_MEAN): no sampling; its vector comes in
     * pieces (fg_shm_vec_get()) before its completion; refused
     * (FG_SHM_EINVAL) where the engine's info.embd is 0 */
    uint32_t         embed;

    /* version 7: a GBNF grammar the output follows (NULL: none) */
    const char      *grammar;
    uint32_t         n_grammar;         /* <= FG_SHM_MAX_GRAMMAR */
} fg_shm_submit_t;


/* what the attached engine serves */
typedef struct {
    uint64_t         generation;        /* new at every engine start */
    int64_t          engine_pid;
    fg_shm_shape_t   shape;
    uint32_t         worker;            /* this client's slot */
    uint32_t         embd;              /* an embedding's floats; 0: none */
    char             model[128];
    char             backend[16];
} fg_shm_info_t;


/*
 * Makes the client and its wake-up socket; attaches nothing yet.
 * dead_after_ms: an engine whose heartbeat is older is lost (0: 2000).
 */
fg_shm_client_t *fg_shm_client_create(const char *name,
    uint32_t dead_after_ms, char *err, size_t errlen);

/* detaches (the engine cancels what was open) and frees */
void fg_shm_client_destroy(fg_shm_client_t *c);

/* the socket to watch for reading; it never changes */
int fg_shm_client_fd(const fg_shm_client_t *c);

/*
 * Attaches now: FG_SHM_OK, FG_SHM_EAGAIN (no engine, or it is starting),
 * FG_SHM_ERROR (permission, another protocol version, all worker slots
 * taken: err says which).  tick() calls it while detached.
 */
int fg_shm_client_attach(fg_shm_client_t *c, char *err, size_t errlen);

/* leaves the engine: it cancels every request of this client */
void fg_shm_client_detach(fg_shm_client_t *c);

int fg_shm_client_attached(const fg_shm_client_t *c);

/* NULL when detached */
const fg_shm_info_t *fg_shm_client_info(const fg_shm_client_t *c);

/*
 * Beats this client's heartbeat, watches the engine (heartbeat, state,
 * pid, this client's slot) and attaches when detached; returns
 * FG_SHM_EV_*.  err (may be NULL) receives why an attach failed.
 */
int fg_shm_client_tick(fg_shm_client_t *c, char *err, size_t errlen);

/* FG_SHM_OK or a code above; never waits */
int fg_shm_client_submit(fg_shm_client_t *c,
    const fg_shm_submit_t *req);

int fg_shm_client_cancel(fg_shm_client_t *c, uint64_t req_id);

/*
 * Up to max events, oldest first; drains the wake-up socket.  When it
 * returns fewer than max the client is armed: the engine's next event
 * makes the socket readable.
 */
size_t fg_shm_client_poll(fg_shm_client_t *c, fg_shm_comp_t *ev,
    size_t max);

/* a consistent snapshot of the engine's load; FG_SHM_OK, FG_SHM_EDOWN or
 * FG_SHM_EAGAIN (it kept changing under the read) */
int fg_shm_client_status(fg_shm_client_t *c, fg_shm_load_t *load);

/*
 * How many of hashes[0 .. n) the attached engine holds as a prefix: the
 * largest k with hashes[0 .. k) all in its index (fg_shm_block_hashes()
 * of the prompt, with the engine's block_size); 0 when not attached.
 * Never blocks; a hint, a step late at worst: the engine decides what it
 * reuses when the request joins its batch.
 */
uint32_t fg_shm_client_prefix_match(fg_shm_client_t *c,
    const uint64_t *hashes, uint32_t n);

/* the engine's heartbeat age in ms (UINT64_MAX when detached) */
uint64_t fg_shm_client_engine_age_ms(const fg_shm_client_t *c);

const char *fg_shm_finish_name(uint32_t finish);
const char *fg_shm_error_name(uint32_t error);


#endif /* _FG_SHM_CLIENT_H_INCLUDED_ */
