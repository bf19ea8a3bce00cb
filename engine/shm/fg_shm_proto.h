
/*
 * fairgate: the engine segment's layout, shared by the engine
 * (fg_shm_engine*.c) and the gateway (fg_shm_client.c).  The protocol is
 * described in docs/engine-protocol.md; this file is its binary form.
 *
 * A named POSIX segment, created by the engine (mode 0660, the group
 * configured so that nginx workers running as another user can map it):
 *
 *     header          magic, version, generation, the model's and the
 *                     engine's limits, offsets of what follows
 *     status          heartbeat, then a seqlock-protected snapshot of the
 *                     engine's load: capacity, KV use, overload
 *     submissions     ring of fixed slots, many workers -> engine
 *     cancels         ring of small entries, many workers -> engine
 *     workers         max_workers entries, each with its completion ring
 *                     (engine -> that worker)
 *     prefix index    the block hashes the engine's prefix cache holds
 *                     (written by the engine only; see below)
 *
 * The two rings towards the engine have many producers: a producer takes
 * a robust process-shared mutex only with trylock (a worker never
 * sleeps on it), writes its slots and publishes them by moving the tail;
 * the engine consumes without the lock.  A producer that dies holding the
 * lock leaves it to the next, which makes it consistent: nothing it had
 * not published is visible.  Completion rings have one producer and one
 * consumer and no lock.
 *
 * Every field written by one process and read by another is accessed
 * with atomics (__atomic builtins, which work on plain integers in a
 * mapping shared between processes); ring indices count up for ever
 * (64 bits) and are taken modulo the ring's size, a power of two.
 */

#ifndef _FG_SHM_PROTO_H_INCLUDED_
#define _FG_SHM_PROTO_H_INCLUDED_


#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>


#define FG_SHM_MAGIC            0x4d534746u     /* "FGSM" little-endian */
#define FG_SHM_VERSION          7

#define FG_SHM_SLOT_TOKENS      224     /* prompt tokens per slot */
#define FG_SHM_MAX_STOP         16      /* stop ids per request */
#define FG_SHM_SOCK_MAX         108     /* sizeof(sun_path) */
#define FG_SHM_NAME_MAX         200

/* version 4: logit_bias entries per request, top log-probabilities per
 * token */
#define FG_SHM_MAX_BIAS         128
#define FG_SHM_MAX_TOP          20

/* version 5: choices per request (OpenAI's n) */
#define FG_SHM_MAX_CHOICES      16

/* version 7: structured output, a grammar's GBNF text per request, carried
 * in slots of its own after the prompt's (fg_shm_sub_t) */
#define FG_SHM_MAX_GRAMMAR      (64 * 1024)     /* bytes */
#define FG_SHM_SLOT_BYTES       (FG_SHM_SLOT_TOKENS * 4)


/* header.state */
#define FG_SHM_STARTING         0
#define FG_SHM_READY            1
#define FG_SHM_STOPPED          2

/* fg_shm_worker_t.state */
#define FG_SHM_W_FREE           0
#define FG_SHM_W_ATTACHING      1
#define FG_SHM_W_ACTIVE         2
#define FG_SHM_W_DETACHING      3

/* fg_shm_sub_t.flags */
#define FG_SHM_SUB_SEED         0x01    /* seed given; else the engine's */
#define FG_SHM_SUB_IGNORE_EOS   0x02
#define FG_SHM_SUB_LOGPROBS     0x04    /* version 4: events carry them */
#define FG_SHM_SUB_PROMPT_LP    0x08    /* with LOGPROBS: the prompt's too
                                           (fg_shm_lp_t.prompt) */

/* fg_shm_comp_t.finish: why a request ended; 0 while it runs */
#define FG_SHM_FINISH_NONE      0
#define FG_SHM_FINISH_STOP      1       /* EOS or a stop id: the token */
#define FG_SHM_FINISH_LENGTH    2       /* max_tokens */
#define FG_SHM_FINISH_CONTEXT   3       /* no max_tokens: context full */
#define FG_SHM_FINISH_CANCEL    4
#define FG_SHM_FINISH_ERROR     5       /* the engine failed its step */
#define FG_SHM_FINISH_REFUSED   6       /* never ran: error says why */

/* the prefix index's marks: never a block hash (fg_shm_block_hash) */
#define FG_SHM_INDEX_EMPTY      0
#define FG_SHM_INDEX_DELETED    1

/* fg_shm_comp_t.error, with FG_SHM_FINISH_REFUSED */
#define FG_SHM_ERR_NONE         0
#define FG_SHM_ERR_INVALID      1       /* empty prompt, bad token id,
                                           bad sampling, bad stop ids */
#define FG_SHM_ERR_CONTEXT      2       /* prompt + max_tokens > context */
#define FG_SHM_ERR_KV           3       /* beyond the whole KV pool */
#define FG_SHM_ERR_FULL         4       /* the engine holds all it can */
#define FG_SHM_ERR_DUPLICATE    5       /* this request id is running */
#define FG_SHM_ERR_NOMEM        6
#define FG_SHM_ERR_PROTOCOL     7       /* a malformed submission */


/* the engine's view of its load, written under the status seqlock */
typedef struct {
    uint64_t        loop_ns;            /* last turn of its loop */
    uint64_t        steps;
    uint64_t        running;
    uint64_t        waiting;
    uint64_t        max_batch;          /* seats in a step */
    uint64_t        max_seqs;           /* requests it holds at most */
    uint64_t        kv_blocks;
    uint64_t        kv_free;
    uint64_t        block_size;
    uint64_t        overload;           /* 1: requests wait inside it */
    uint64_t        workers;            /* attached */
    uint64_t        submitted;          /* requests taken from the ring */
    uint64_t        generated;          /* tokens */
    uint64_t        prefill_tokens;
    uint64_t        preemptions;
    uint64_t        finished;
    uint64_t        cancelled;
    uint64_t        refused;
    uint64_t        failed;
    uint64_t        lost_workers;       /* declared dead or stuck */

    /* the prefix cache (all 0 with --prefix-cache off) */
    uint64_t        cache_blocks;       /* blocks it holds, in use or not */
    uint64_t        cache_hit_tokens;   /* prompt tokens reused */
    uint64_t        cache_query_tokens; /* prompt tokens looked up */
    uint64_t        cache_evictions;
} fg_shm_load_t;


typedef struct {
    uint64_t        heartbeat_ns;       /* CLOCK_MONOTONIC, every 100 ms */
    uint64_t        sleeping;           /* 1: wake the engine after a write */
    uint64_t        pad0[6];
    uint64_t        seq;                /* odd while the load is written */
    uint64_t        pad1[7];
    fg_shm_load_t   load;
} fg_shm_status_t;


/*
 * What the engine serves, one copy: the engine's conf gives it
 * (fg_shm_engine_conf_t), the header publishes it, the client hands it on
 * (fg_shm_info_t).  The header's layout is that of the fields it had one
 * by one.
 */
typedef struct {
    uint32_t        vocab;
    uint32_t        context;
    int32_t         eos;                /* -1: none */
    int32_t         bos;
    uint32_t        block_size;
    uint32_t        kv_blocks;
    uint32_t        max_batch;
    uint32_t        max_seqs;
    uint32_t        step_tokens;
} fg_shm_shape_t;


typedef struct {
    uint32_t        magic;
    uint32_t        version;
    uint32_t        header_size;
    uint32_t        state;              /* FG_SHM_STARTING ... */
    uint64_t        segment_size;
    uint64_t        generation;         /* random, new at every start */
    int64_t         engine_pid;
    uint64_t        pidns;              /* its pid namespace's inode */

    fg_shm_shape_t  shape;              /* what a request may be */
    uint32_t        pad0;
    char            model[128];         /* the model file's base name */
    char            backend[16];

    /* layout */
    uint32_t        mutex_size;         /* sizeof(pthread_mutex_t) */
    uint32_t        slot_size;          /* sizeof(fg_shm_sub_t) */
    uint32_t        slot_tokens;
    uint32_t        max_stop;
    uint32_t        sub_slots;
    uint32_t        cancel_slots;
    uint32_t        comp_slots;
    uint32_t        max_workers;
    uint64_t        status_off;
    uint64_t        sub_off;
    uint64_t        cancel_off;
    uint64_t        workers_off;
    uint64_t        worker_size;        /* one worker entry and its ring */

    /* the engine's wake-up socket (abstract: starts with a NUL) */
    uint32_t        engine_sock_len;
    char            engine_sock[FG_SHM_SOCK_MAX];

    /* version 2: the prefix index */
    uint64_t        index_off;          /* fg_shm_index_t, then its tables */
    uint32_t        index_slots;        /* keys per table, a power of two */
    uint32_t        pad1;

    /* version 6: embeddings */
    uint32_t        embd;               /* an embedding's floats; 0: the
                                           engine computes none */
    uint32_t        pad2;
} fg_shm_header_t;


/* the head of a many-producer ring; its slots follow at slots_off */
typedef struct {
    pthread_mutex_t lock;               /* producers only, robust */
    char            pad0[64 - sizeof(pthread_mutex_t) % 64];
    uint64_t        tail;               /* published by producers */
    uint64_t        pad1[7];
    uint64_t        head;               /* consumed by the engine */
    uint64_t        pad2[7];
} fg_shm_mpsc_t;


/*
 * One slot of a submission.  A prompt of n_prompt tokens takes
 * ceil(n_prompt / FG_SHM_SLOT_TOKENS) consecutive slots (index 0, 1 ...),
 * published together; the parameters are read from the first.
 */
typedef struct {
    uint64_t        req_id;
    uint32_t        worker;
    uint32_t        epoch;              /* the worker's attach epoch */
    uint32_t        n_prompt;
    uint16_t        index;
    uint16_t        n_tokens;           /* in this slot */
    uint32_t        max_tokens;         /* 0: to the context's end */
    uint32_t        top_k;
    float           temperature;
    float           top_p;
    uint64_t        seed;
    uint32_t        flags;              /* FG_SHM_SUB_* */
    uint32_t        n_stop;
    int32_t         stop[FG_SHM_MAX_STOP];
    uint16_t        n_choices;          /* version 5: 0 or 1: one; at
                                           most FG_SHM_MAX_CHOICES */
    uint16_t        reserved0;          /* 0 */
    uint32_t        reserved;           /* 0 */
    int32_t         tokens[FG_SHM_SLOT_TOKENS];

    /* version 3: the reader's expectations (Andes's QoE), in every slot,
     * read from the first; 0: none given, the engine's default */
    float           ttft_target;        /* seconds to the first token */
    float           tokens_per_s;       /* the reader's speed */

    /* version 4: the logits' adjustments (fg_sample_params_t) and the
     * log-probabilities asked for, in every slot, read from the first */
    float           frequency_penalty;  /* [-2, 2]; 0: off */
    float           presence_penalty;   /* [-2, 2]; 0: off */
    float           repetition_penalty; /* (0, 100]; 0 or 1: off */
    float           min_p;              /* [0, 1]; 0: off */
    uint32_t        top_logprobs;       /* with FG_SHM_SUB_LOGPROBS */
    uint32_t        n_bias;             /* <= FG_SHM_MAX_BIAS */
    int32_t         bias_id[FG_SHM_MAX_BIAS];   /* distinct token ids */
    float           bias[FG_SHM_MAX_BIAS];      /* [-100, 100] each */

    /* version 6: FG_SHM_EMBED_MEAN, an embedding (fg_shm_vec_t); 0, a
     * generation.  In every slot, read from the first */
    uint32_t        embed;
    uint32_t        pad_embed;

    /*
     * Version 7, structured output, a block of its own: n_grammar bytes
     * of GBNF text (0: none; at most FG_SHM_MAX_GRAMMAR), in every slot.
     * The text follows the prompt's slots in slots of its own (the same
     * req_id, index counting on, n_tokens 0), FG_SHM_SLOT_BYTES of it in
     * each one's tokens area taken as bytes: fg_shm_sub_slots() says how
     * many slots a submission takes in all.
     */
    uint32_t        n_grammar;
    uint32_t        grammar_pad;        /* 0 */
} fg_shm_sub_t;


/* the slots of a submission: its prompt's (at least one), its grammar's */
static inline uint32_t
fg_shm_sub_slots(uint32_t n_prompt, uint32_t n_grammar)
{
    uint32_t  n;

    n = n_prompt ? (n_prompt + FG_SHM_SLOT_TOKENS - 1) / FG_SHM_SLOT_TOKENS
                 : 1;

    return n + (n_grammar + FG_SHM_SLOT_BYTES - 1) / FG_SHM_SLOT_BYTES;
}


typedef struct {
    uint64_t        req_id;
    uint32_t        worker;
    uint32_t        epoch;
} fg_shm_cancel_t;


/* one event of a request, engine -> its worker */
typedef struct {
    uint64_t        req_id;
    int32_t         token;              /* -1: none */
    uint8_t         finish;             /* FG_SHM_FINISH_* */
    uint8_t         error;              /* FG_SHM_ERR_*, when refused */
    uint16_t        reserved;           /* 0; FG_SHM_COMP_VEC: this is a
                                           piece of an embedding,
                                           fg_shm_vec_t (version 6);
                                           FG_SHM_COMP_LP: a piece of a
                                           token's log-probabilities,
                                           fg_shm_lp_t (version 4) */
    uint32_t        n_prompt;           /* usage */
    uint32_t        n_generated;
    uint32_t        n_cached;           /* prompt tokens taken from the
                                           prefix cache at its last join */
    uint32_t        choice;             /* version 5: the choice's index,
                                           0 .. n_choices - 1; each
                                           choice ends with its own
                                           finish, n_generated its own */
} fg_shm_comp_t;


/*
 * Version 6: embeddings.  A submission with embed FG_SHM_EMBED_MEAN runs
 * its prompt through the model without sampling (max_tokens, sampling
 * and stop ids are ignored); its answer is the final hidden states after
 * the output norm, mean-pooled over the prompt's positions and
 * L2-normalised: header.embd floats, which come in the worker's
 * completion ring as pieces of FG_SHM_VEC_FLOATS, in order, each in a
 * completion's place (the same size, kind FG_SHM_COMP_VEC where a
 * completion has reserved 0), then its one completion (finish STOP,
 * token -1, n_prompt, n_generated 0).  The ring's own flow control (the
 * engine's overflow queue) carries them as it carries tokens.
 */
#define FG_SHM_EMBED_NONE       0
#define FG_SHM_EMBED_MEAN       1

#define FG_SHM_COMP_VEC         1       /* fg_shm_vec_t.kind */
#define FG_SHM_VEC_FLOATS       4

typedef struct {
    uint64_t        req_id;
    uint32_t        offset;             /* of v[0] in the vector */
    uint8_t         finish;             /* FG_SHM_FINISH_NONE */
    uint8_t         n;                  /* floats in v: 1 .. 4 */
    uint16_t        kind;               /* FG_SHM_COMP_VEC */
    float           v[FG_SHM_VEC_FLOATS];
} fg_shm_vec_t;

_Static_assert(sizeof(fg_shm_vec_t) == sizeof(fg_shm_comp_t)
               && offsetof(fg_shm_vec_t, kind)
                  == offsetof(fg_shm_comp_t, reserved),
               "a piece of an embedding takes a completion's place");


/* a piece of an embedding, written in a completion's place */
static inline void
fg_shm_vec_put(fg_shm_comp_t *c, uint64_t req_id, uint32_t offset,
    const float *v, uint32_t n)
{
    fg_shm_vec_t  p;

    memset(&p, 0, sizeof(p));
    p.req_id = req_id;
    p.offset = offset;
    p.n = (uint8_t) n;
    p.kind = FG_SHM_COMP_VEC;
    memcpy(p.v, v, n * sizeof(float));

    memcpy(c, &p, sizeof(p));
}


/* a completion that is a piece of an embedding: 1 with *p filled, else 0 */
static inline int
fg_shm_vec_get(const fg_shm_comp_t *c, fg_shm_vec_t *p)
{
    if (c->reserved != FG_SHM_COMP_VEC) {
        return 0;
    }

    memcpy(p, c, sizeof(*p));

    return p->n >= 1 && p->n <= FG_SHM_VEC_FLOATS;
}


/*
 * Version 4: log-probabilities.  For a request with FG_SHM_SUB_LOGPROBS,
 * each generated token's completion is preceded by its log-probabilities
 * in pieces of FG_SHM_LP_PAIRS (token id, log-probability) pairs, each in
 * a completion's place (the same size, kind FG_SHM_COMP_LP where a
 * completion has reserved 0): pair 0 is the token's own, pairs 1 .. n_top
 * the top_logprobs best, best first (the lower id first on ties), all the
 * log-softmax of the model's logits before any adjustment.  The ring's
 * own flow control carries them as it carries tokens.
 *
 * With FG_SHM_SUB_PROMPT_LP as well (echo), choice 0's generated tokens
 * are preceded by the prompt's: for each prompt position 1 .. n_prompt -
 * 1, in order, the pieces of its token's log-probability given the
 * tokens before it (pair 0 the prompt's token, then its best
 * alternatives), marked prompt 1, no completion of their own.  Such a
 * request does not use the prefix cache (a cached prefix has no
 * logits).  An engine whose backend cannot compute them refuses the
 * request (FG_SHM_ERR_INVALID); an engine older than the flag ignores
 * it and sends none.
 */
#define FG_SHM_COMP_LP          2       /* fg_shm_lp_t.kind */
#define FG_SHM_LP_PAIRS         2

typedef struct {
    uint64_t        req_id;
    uint8_t         index;              /* of pair 0 among the token's */
    uint8_t         n;                  /* pairs in this piece: 1 .. 2 */
    uint8_t         n_top;              /* the token's alternatives */
    uint8_t         choice;             /* version 5: the choice's index */
    uint8_t         finish;             /* FG_SHM_FINISH_NONE */
    uint8_t         prompt;             /* 1: a prompt position's */
    uint16_t        kind;               /* FG_SHM_COMP_LP */
    int32_t         id[FG_SHM_LP_PAIRS];
    float           lp[FG_SHM_LP_PAIRS];
} fg_shm_lp_t;

_Static_assert(sizeof(fg_shm_lp_t) == sizeof(fg_shm_comp_t)
               && offsetof(fg_shm_lp_t, kind)
                  == offsetof(fg_shm_comp_t, reserved)
               && offsetof(fg_shm_lp_t, finish)
                  == offsetof(fg_shm_comp_t, finish),
               "a piece of log-probabilities takes a completion's place");


/* a completion that is a piece of log-probabilities: 1 with *p filled
 * and its counts in range, else 0 */
static inline int
fg_shm_lp_get(const fg_shm_comp_t *c, fg_shm_lp_t *p)
{
    if (c->reserved != FG_SHM_COMP_LP) {
        return 0;
    }

    memcpy(p, c, sizeof(*p));

    return p->n >= 1 && p->n <= FG_SHM_LP_PAIRS
           && p->n_top <= FG_SHM_MAX_TOP
           && p->index + p->n <= p->n_top + 1;
}


/*
 * The prefix index: which block hashes the engine's prefix cache holds,
 * for the gateway to know a waiting request's cached prefix on this
 * engine without asking it.  Written by the engine alone, read by any
 * worker without a lock.  Two open-addressing tables of index_slots
 * 64-bit keys (linear probing; FG_SHM_INDEX_EMPTY ends a probe, a removed
 * key leaves FG_SHM_INDEX_DELETED, which a probe passes), of which table
 * done & 1 is live: the engine adds and removes keys there.  When keys
 * and tombstones fill three quarters of it, the engine rebuilds: it
 * counts started up, clears the other table, copies the live keys into
 * it and counts done up, which makes that table the live one.  A reader
 * reads done, probes that table, and afterwards reads started: when it
 * moved two past done, the table it read may have been cleared under it,
 * and it reads again.  A key present all along is therefore always found;
 * one added or removed during the read may or may not be: a hint.
 */
typedef struct {
    uint64_t        started;            /* rebuilds begun */
    uint64_t        pad0[7];
    uint64_t        done;               /* rebuilds finished */
    uint64_t        keys;               /* keys in the live table */
    uint64_t        pad1[6];
} fg_shm_index_t;


/* a worker's entry; its completion ring of comp_slots entries follows */
typedef struct {
    uint32_t        state;              /* FG_SHM_W_* */
    uint32_t        epoch;              /* one more at every attach */
    int64_t         pid;
    uint64_t        pidns;
    uint64_t        heartbeat_ns;       /* the worker's, CLOCK_MONOTONIC */
    uint32_t        sock_len;
    char            sock[FG_SHM_SOCK_MAX];
    uint64_t        pad0[4];

    uint64_t        tail;               /* written by the engine */
    uint64_t        pad1[7];
    uint64_t        head;               /* written by the worker */
    uint64_t        armed;              /* 1: the worker waits for a wake */
    uint64_t        pad2[6];
} fg_shm_worker_t;


#define FG_SHM_ALIGN(x)         (((x) + 63) & ~(uint64_t) 63)

#define fg_shm_at(base, off, type)                                           \
    ((type *) (void *) ((char *) (base) + (off)))

#define fg_shm_load(p)          __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define fg_shm_store(p, v)      __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define fg_shm_fence()          __atomic_thread_fence(__ATOMIC_SEQ_CST)


static inline fg_shm_sub_t *
fg_shm_sub_slot(void *base, const fg_shm_header_t *h, uint64_t i)
{
    return fg_shm_at(base, h->sub_off + FG_SHM_ALIGN(sizeof(fg_shm_mpsc_t))
                     + (i & (h->sub_slots - 1)) * sizeof(fg_shm_sub_t),
                     fg_shm_sub_t);
}


static inline fg_shm_cancel_t *
fg_shm_cancel_slot(void *base, const fg_shm_header_t *h, uint64_t i)
{
    return fg_shm_at(base, h->cancel_off
                     + FG_SHM_ALIGN(sizeof(fg_shm_mpsc_t))
                     + (i & (h->cancel_slots - 1)) * sizeof(fg_shm_cancel_t),
                     fg_shm_cancel_t);
}


static inline fg_shm_worker_t *
fg_shm_worker(void *base, const fg_shm_header_t *h, uint32_t w)
{
    return fg_shm_at(base, h->workers_off + w * h->worker_size,
                     fg_shm_worker_t);
}


static inline fg_shm_comp_t *
fg_shm_comp_slot(fg_shm_worker_t *wk, const fg_shm_header_t *h, uint64_t i)
{
    return fg_shm_at(wk, FG_SHM_ALIGN(sizeof(fg_shm_worker_t))
                     + (i & (h->comp_slots - 1)) * sizeof(fg_shm_comp_t),
                     fg_shm_comp_t);
}


static inline fg_shm_index_t *
fg_shm_index(void *base, const fg_shm_header_t *h)
{
    return fg_shm_at(base, h->index_off, fg_shm_index_t);
}


/* table t & 1 of the index */
static inline uint64_t *
fg_shm_index_table(void *base, const fg_shm_header_t *h, uint64_t t)
{
    return fg_shm_at(base, h->index_off + FG_SHM_ALIGN(sizeof(fg_shm_index_t))
                     + (t & 1) * (uint64_t) h->index_slots * sizeof(uint64_t),
                     uint64_t);
}


/* where a key's probe starts in a table of slots (a power of two) */
static inline uint32_t
fg_shm_index_home(uint64_t key, uint32_t slots)
{
    return (uint32_t) (key ^ (key >> 32)) & (slots - 1);
}


/* whether a table holds key; a probe visits each slot at most once, so a
 * table written meanwhile never holds a reader for long */
static inline int
fg_shm_index_has(const uint64_t *table, uint32_t slots, uint64_t key)
{
    uint32_t  i, n;
    uint64_t  v;

    if (key <= FG_SHM_INDEX_DELETED) {
        return 0;
    }

    i = fg_shm_index_home(key, slots);

    for (n = 0; n < slots; n++) {
        v = __atomic_load_n(&table[i], __ATOMIC_RELAXED);

        if (v == key) {
            return 1;
        }

        if (v == FG_SHM_INDEX_EMPTY) {
            return 0;
        }

        i = (i + 1) & (slots - 1);
    }

    return 0;
}


/*
 * The chained hash of a full block of n tokens that follows the block
 * whose hash is prev (0 before the first block): XXH3 64 with prev as
 * seed over the tokens' int32 ids; never 0 or 1 (the index's empty and
 * deleted marks: such values map to 2 and 3).  The one definition of a KV
 * block's identity, which the engine and the gateway compute alike.
 */
uint64_t fg_shm_block_hash(uint64_t prev, const int32_t *tokens,
    uint32_t n);

/* the hashes of the full blocks of a prompt, at most max of them: the
 * number written, n_tokens / block_size capped at max */
uint32_t fg_shm_block_hashes(const int32_t *tokens, uint32_t n_tokens,
    uint32_t block_size, uint64_t *hashes, uint32_t max);


/* CLOCK_MONOTONIC in ns: one clock for every process of the machine */
uint64_t fg_shm_now(void);

/* the inode of this process's pid namespace, 0 when unknown */
uint64_t fg_shm_pidns(void);

/* 0 when pid is known to be gone (same namespace, ESRCH), else 1 */
int fg_shm_pid_alive(int64_t pid, uint64_t pidns);

/* a non-blocking, close-on-exec datagram socket bound to an abstract name
 * the kernel picks; name and len receive it.  -1 with errno */
int fg_shm_socket(char *name, uint32_t *len);

/* one byte to an abstract name: 0, or -1 with errno (EAGAIN: the peer's
 * queue is full, so it has a wake-up pending anyway) */
int fg_shm_wake(int fd, const char *name, uint32_t len);

/* empties the socket's queue */
void fg_shm_drain(int fd);

/* "/name": a slash, then 1 to 200 characters, none a slash */
int fg_shm_name_valid(const char *name);


#endif /* _FG_SHM_PROTO_H_INCLUDED_ */
