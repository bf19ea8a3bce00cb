
/*
 * fairgate: the batcher's insides, shared by fg_batch.c (batching, the
 * prefix cache), fg_batch_seq.c (what the others do with a held
 * sequence), fg_batch_andes.c (Andes's scheduler applied to the held
 * sequences) and fg_batch_swap.c (swap preemption).  Nothing outside
 * engine/batch includes it but the tests of its insides.
 */

#ifndef _FG_BATCH_INT_H_INCLUDED_
#define _FG_BATCH_INT_H_INCLUDED_


#include <time.h>

#include "fg_batch.h"
#include "fg_sched_andes.h"
#include "fg_shm_proto.h"


typedef struct fg_seq_s  fg_seq_t;
typedef struct fg_batch_gram_s  fg_batch_gram_t;

struct fg_seq_s {
    fg_seq_t            *next;          /* in the waiting or running list */
    fg_seq_t            *prev;
    fg_seq_t            *hnext;         /* in its hash bucket */

    uint64_t             id;
    uint32_t             owner;
    uint32_t             choice;
    void                *data;

    /* the prompt, then the output: tokens[0 .. n_tokens) of cap */
    int32_t             *tokens;
    uint32_t             n_tokens;
    uint32_t             n_prompt;
    uint32_t             n_gen;
    uint32_t             max_gen;

    /* positions whose keys and values are in the cache */
    uint32_t             n_computed;
    fg_kv_seq_t          kv;

    /* the prefix cache: the chained hashes of its first n_hashes full
     * blocks (of cap_hashes), the blocks registered or found cached since
     * it joined, the prompt tokens found cached then, the times its join
     * waited for a block another computes */
    uint64_t            *hashes;
    uint32_t             n_hashes;
    uint32_t             cap_hashes;
    uint32_t             n_registered;
    uint32_t             n_cached;
    uint32_t             n_deferred;    /* joins put off (fg_batch_defer) */

    fg_sample_params_t   sp;            /* sp.bias: its own copy */
    fg_rand_t            rng;
    int32_t              stop[FG_BATCH_MAX_STOP];
    uint32_t             n_stop;

    /* the reader (Andes's QoE): when it was submitted, its
     * expectations, and when it wants its next token (having read those
     * delivered at its speed; submit + ttft for the first) */
    uint64_t             serial;        /* submission order */
    double               submit;
    double               dry;
    double               ttft;
    double               speed;
    uint32_t             preempted;     /* times, by any scheduler */

    /* swapped out: its first n_swapped blocks (n_computed positions) in
     * host memory, kv_bytes_per_block each (fg_batch_swap.c) */
    void                *swap;
    uint32_t             n_swapped;

    /* structured output (fg_batch_gram.c): its grammar and matcher, kept
     * with the sequence, so that a preemption loses none of the tokens
     * accepted; NULL: none */
    fg_batch_gram_t     *gram;
    fg_gram_match_t     *gm;

    /* an embedding (fg_batch_embed.c): the sum of its positions' final
     * hidden states so far, info.n_embd floats */
    float               *embd_sum;

    unsigned             ignore_eos:1;
    unsigned             to_context:1;  /* no max_tokens was given */
    unsigned             running:1;
    unsigned             embed:1;

    /* the prompt's log-probabilities (fg_batch_plp.c): wanted, and the
     * next position to report (those of a recomputation are not again) */
    unsigned             prompt_lp:1;
    uint32_t             plp_next;
};


typedef struct {
    fg_seq_t            *head;
    fg_seq_t            *tail;
    uint32_t             n;
} fg_seq_list_t;


struct fg_batch_s {
    fg_batch_conf_t      conf;
    int32_t             *eog;

    const fg_backend_ops_t *ops;
    fg_backend_t        *backend;
    fg_backend_info_t    info;
    fg_kv_t             *kv;
    uint32_t             block_size;

    fg_seq_list_t        waiting;
    fg_seq_list_t        running;       /* in the order they joined */

    /* the step's time, smoothed, for the scheduler's estimates */
    double               step_s;
    double               step_t0;       /* the last busy step's start */
    uint64_t             serial;
    fg_andes_cand_t     *cand_andes;    /* max_seqs of them */
    fg_andes_cand_t    **order_andes;

    /* swap preemption: whether the backend can, host bytes held */
    unsigned             swap_ok:1;
    uint64_t             swap_held;

    /* fg_batch_hold_joins(): waiting sequences stay waiting */
    unsigned             joins_held:1;

    fg_seq_t           **buckets;
    uint32_t             mask;

    /* one step */
    fg_seq_t           **step_seqs;
    fg_backend_seq_t    *step;
    float               *logits;
    uint32_t             logits_rows;   /* max_batch, or more for the
                                           prompt's log-probabilities */
    float               *hidden;        /* max_batch x n_embd, or NULL */
    fg_k_cand_t         *cand;

    /* sampling with adjustments: a row's copy, the marks the penalties
     * count with (zero between uses), the reported log-probabilities */
    float               *work;
    uint32_t            *marks;
    fg_sample_lp_t       lp;
    fg_gram_vocab_t     *gram_vocab;    /* fg_batch_gram.c, once */
    fg_batch_gram_t     *grams;         /* the held sequences' grammars */

    fg_batch_stats_t     stats;
};


static inline void
fg_list_push_tail(fg_seq_list_t *l, fg_seq_t *s)
{
    s->next = NULL;
    s->prev = l->tail;

    if (l->tail) {
        l->tail->next = s;

    } else {
        l->head = s;
    }

    l->tail = s;
    l->n++;
}


static inline void
fg_list_push_head(fg_seq_list_t *l, fg_seq_t *s)
{
    s->prev = NULL;
    s->next = l->head;

    if (l->head) {
        l->head->prev = s;

    } else {
        l->tail = s;
    }

    l->head = s;
    l->n++;
}


static inline void
fg_list_remove(fg_seq_list_t *l, fg_seq_t *s)
{
    if (s->prev) {
        s->prev->next = s->next;

    } else {
        l->head = s->next;
    }

    if (s->next) {
        s->next->prev = s->prev;

    } else {
        l->tail = s->prev;
    }

    s->next = s->prev = NULL;
    l->n--;
}


/* extends a sequence's chained block hashes to its first n blocks */
static inline void
fg_batch_hash_blocks(fg_batch_t *b, fg_seq_t *s, uint32_t n)
{
    uint64_t  prev;

    while (s->n_hashes < n) {
        prev = s->n_hashes ? s->hashes[s->n_hashes - 1] : 0;
        s->hashes[s->n_hashes] = fg_shm_block_hash(prev,
                                     s->tokens + (size_t) s->n_hashes
                                                 * b->block_size,
                                     b->block_size);
        s->n_hashes++;
    }
}


/* the batcher's clock, s */
static inline double
fg_batch_now(fg_batch_t *b)
{
    struct timespec  ts;

    if (b->conf.clock) {
        return b->conf.clock(b->conf.clock_ctx);
    }

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}


/* fg_batch_seq.c: */

/* a sequence's next token from its row of logits (not changed), its
 * log-probabilities in b->lp when it asked for them */
int32_t fg_batch_sample(fg_batch_t *b, fg_seq_t *s, const float *row);

/* fg_batch_gram.c: a sequence's grammar made from its request, freed;
 * the mask on its logits; the sampled token accepted (-1: it failed) */
int fg_batch_gram_new(fg_batch_t *b, fg_seq_t *s, const fg_batch_req_t *req,
    char *err, size_t errlen);
void fg_batch_gram_free(fg_batch_t *b, fg_seq_t *s);
void fg_batch_gram_destroy(fg_batch_t *b);
int64_t fg_batch_gram_mask(fg_seq_t *s, float *logits);
int fg_batch_gram_accept(fg_seq_t *s, int32_t token);

/* frees a running sequence's blocks; it waits again, at the head */
void fg_batch_preempt_seq(fg_batch_t *b, fg_seq_t *s);

/* the cached blocks that begin a sequence's tokens */
uint32_t fg_batch_match(fg_batch_t *b, fg_seq_t *s, uint32_t *idle);

/*
 * The prefix cache off, a request's other choices: how many full prompt
 * blocks of its running choice 0 (*sib) it joins with, 0 for none, or -1
 * to wait a step for them
 */
int fg_batch_sibling(fg_batch_t *b, fg_seq_t *s, fg_seq_t **sib);

/* fg_batch_seq.c: the step's sequences take their windows' slots */
int fg_batch_window(fg_batch_t *b, uint32_t n, char *err, size_t errlen);

/* Andes's decision, when conf.sched asks for it and under pressure
 * (fg_batch_andes.c) */
void fg_batch_andes(fg_batch_t *b);

/*
 * Swap preemption (fg_batch_swap.c).  swap_out saves a running
 * sequence's computed blocks to host memory before the preemption frees
 * them: 0, or -1 (recompute instead: no swap configured, no ops, over
 * swap_bytes, no memory, the copy failed).  swap_in gives a swapped
 * waiting sequence new blocks for its tokens, with reserve left over, and
 * loads them: FG_JOIN_OK's 0 with n_computed as it was (or 0 when the
 * load failed: it recomputes in those blocks), or -1 to wait for room.
 * swap_free drops the buffer of one cancelled or finished.
 */
int fg_batch_swap_out(fg_batch_t *b, fg_seq_t *s);
int fg_batch_swap_in(fg_batch_t *b, fg_seq_t *s, uint32_t reserve);
void fg_batch_swap_free(fg_batch_t *b, fg_seq_t *s);

/*
 * Embeddings (fg_batch_embed.c).  check: FG_BATCH_OK, or why a request
 * for one is refused, err filled.  step: the step's sequence i, an
 * embedding, adds its row of the step's hidden states (from scratch when
 * the chunk starts at position 0: a recompute after a preemption) and,
 * when its prompt is all computed, emits its pooled vector: 1 then (the
 * caller removes it), else 0.
 */
int fg_batch_embed_check(fg_batch_t *b, const fg_batch_req_t *req,
    char *err, size_t errlen);
int fg_batch_embed_step(fg_batch_t *b, uint32_t i);

/*
 * The prompt's log-probabilities (fg_batch_plp.c).  chunk: of rem tokens
 * with *budget left, the chunk s takes (at most FG_BATCH_PLP_CHUNK rows
 * of logits when it wants them all; then *budget becomes the chunk, so
 * that nothing else joins the step, as after any chunk cut short).
 * room: the logits' buffer grown for the step's n sequences' rows; 0,
 * or -1 out of memory, err filled.  step: sequence i's prompt positions'
 * events from its rows at row; returns the row after them (the last
 * one's, to sample from, when it wants logits).
 */
#define FG_BATCH_PLP_CHUNK  64

uint32_t fg_batch_plp_chunk(const fg_seq_t *s, uint32_t rem,
    uint32_t *budget);
int fg_batch_plp_room(fg_batch_t *b, uint32_t n, char *err,
    size_t errlen);
float *fg_batch_plp_step(fg_batch_t *b, uint32_t i, float *row);

/* the seconds a swapped sequence takes to load again */
double fg_batch_swap_in_s(const fg_batch_t *b, const fg_seq_t *s);


#endif /* _FG_BATCH_INT_H_INCLUDED_ */
