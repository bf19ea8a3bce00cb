
/*
 * fairgate: continuous batching.
 *
 * Sequences wait in submission order and join the running batch at any
 * step; each step runs every running sequence's next tokens through the
 * backend, samples a token for each sequence at the end of its prompt or
 * decoding, and lets finished sequences leave.  Within a step:
 *
 *   1. every running sequence that decodes gets its one token (a new KV
 *      block when it crosses a block boundary);
 *   2. running sequences still in their prompt get chunks of it, oldest
 *      first, from what remains of the step's token budget (max_tokens);
 *   3. waiting sequences join, oldest first, while the batch has room
 *      (max_batch), the budget has tokens and the KV pool has blocks for
 *      the join's whole prompt; the first that cannot join stops the
 *      others behind it, so a long prompt is never overtaken for ever.
 *
 * The engine serves in submission order: fairness between tenants is the
 * gateway's decision, made before it submits.  With conf.sched
 * FG_SCHED_ANDES, under KV pressure, Andes's QoE scheduler reorders the
 * queue and preempts first (fg_batch_andes.c, fg_sched_andes.h).
 *
 * KV exhaustion never fails a request.  A join waits until blocks free
 * up; a decode that finds the pool empty preempts the youngest running
 * sequence (its blocks freed, its tokens kept), which goes back to the
 * head of the queue and recomputes its prompt and output when it joins
 * again.  The oldest sequence is never preempted for a younger one, so
 * every request that fits the pool alone finishes.  A request that could
 * never fit even alone (prompt + max_tokens beyond the pool or the
 * context) is refused at submission with a reason.
 *
 * The prefix cache (conf.prefix_cache): every full block of a running
 * sequence whose positions are all computed, prompt or output, is
 * registered in fg_kv's cache under its chained hash (fg_shm_block_hash())
 * and outlives its sequence as long as the pool can keep it.  A sequence
 * that joins (first, or again after a preemption) takes references to the
 * cached blocks of its tokens' longest prefix of whole blocks, at most
 * (n_tokens - 1) / block_size of them (the last token is always computed,
 * for its logits, and never written into a shared block), and starts
 * computing at the first position after them: the backend sees only the
 * uncached tokens, at pos = cached.  A sequence whose next full block
 * another running sequence is computing waits (those behind it join
 * meanwhile) and adopts the block a step later, as SGLang's do.  Two
 * sequences computing the same block at once (the last of one prompt,
 * computed again for its logits): the first registered wins, the other's
 * stays private.
 *
 * Every sampled token is reported through the emit callback, the last one
 * with the reason the sequence finished.  A request's tokens are the same
 * alone, in any batch, and after a preemption: its sampler draws one
 * number per token from its own seeded generator (fg_sample_params_t, below).
 */

#ifndef _FG_BATCH_H_INCLUDED_
#define _FG_BATCH_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_backend.h"
#include "fg_grammar.h"
#include "fg_kernels.h"
#include "fg_kv.h"
#include "fg_rand.h"


/*
 * Token sampling (fg_sample.c): a request's parameters, its own random
 * generator, and the choice of a token from a row of logits.
 *
 * Each request carries a generator seeded from its seed, and every sampled
 * token draws exactly one number from it, greedy or not: the token at
 * output index i depends only on the seed, i and the logits, so a request
 * samples the same tokens alone or in any batch, and after a preemption.
 *
 * The generator is the tree's one (fg_rand.h): a seed names the same
 * sampled text on every machine.
 */

#define FG_SAMPLE_MAX_TEMPERATURE  100.0f


#define FG_SAMPLE_MAX_PENALTY      2.0f
#define FG_SAMPLE_MAX_REPETITION   100.0f
#define FG_SAMPLE_MAX_BIAS         100.0f
#define FG_SAMPLE_MAX_TOP          20


/* logit_bias: a value added to one token's logit */
typedef struct {
    int32_t     id;
    float       bias;           /* [-100, 100] */
} fg_sample_bias_t;


typedef struct {
    float       temperature;    /* <= 0: greedy */
    uint32_t    top_k;          /* 0: the whole vocabulary */
    float       top_p;          /* (0, 1]; 1: no nucleus cut */
    uint64_t    seed;

    /*
     * The logits' adjustments, applied in this order before temperature
     * and the cuts (fg_sample_adjust()): logit_bias; CTRL's repetition
     * penalty over the prompt and the output (a positive logit divided
     * by it, a negative one multiplied, as vLLM and llama.cpp apply it);
     * OpenAI's frequency and presence penalties over the output alone
     * (logit -= count * frequency + (count > 0) * presence).  Then min_p
     * keeps the tokens whose probability, after temperature, is at least
     * min_p times the best one's.
     */
    const fg_sample_bias_t *bias;   /* n_bias entries, ids distinct */
    uint32_t    n_bias;
    float       frequency;      /* [-2, 2]; 0: off */
    float       presence;       /* [-2, 2]; 0: off */
    float       repetition;     /* (0, 100]; 1 (or 0): off */
    float       min_p;          /* [0, 1]; 0: off */

    /* the log-probabilities to report (fg_sample_logprobs()): of the
     * sampled token, and of the top_logprobs best (<= FG_SAMPLE_MAX_TOP) */
    unsigned    logprobs:1;
    uint32_t    top_logprobs;
} fg_sample_params_t;


/*
 * A sampled token's log-probability and the top_logprobs best
 * alternatives (best first, the lower id first on ties): the log-softmax
 * of the model's own logits, before logit_bias, the penalties,
 * temperature and the cuts (vLLM's default, "raw" log-probabilities),
 * the normaliser summed in double.
 */
typedef struct {
    float       logprob;
    uint32_t    n_top;
    int32_t     top_id[FG_SAMPLE_MAX_TOP];
    float       top_lp[FG_SAMPLE_MAX_TOP];
} fg_sample_lp_t;


/* what the adjustments read of a sequence, and their scratch */
typedef struct {
    const int32_t  *tokens;     /* the prompt, then the output */
    uint32_t        n_tokens;
    uint32_t        n_prompt;
    uint32_t       *marks;      /* vocabulary entries, zero; left zero */
} fg_sample_seq_t;


/* greedy: temperature 0, no cut */
void fg_sample_params_init(fg_sample_params_t *p);

/* 0, or -1 with the offending parameter named in err */
int fg_sample_params_check(const fg_sample_params_t *p, char *err,
    size_t errlen);

/*
 * A token id from n logits (not changed); cand is scratch of n entries.
 * Draws one number from rng whatever the parameters.
 */
int32_t fg_sample(const fg_sample_params_t *p, fg_rand_t *rng,
    const float *logits, uint32_t n, fg_k_cand_t *cand);

/* whether p asks for any adjustment of the logits (fg_sample_adjust) */
int fg_sample_adjusts(const fg_sample_params_t *p);

/* logit_bias, the penalties for seq's tokens, and min_p, in place */
void fg_sample_adjust(const fg_sample_params_t *p, const fg_sample_seq_t *seq,
    float *logits, uint32_t n);

/*
 * The log-softmax of n logits: the token's and the best top (at most
 * FG_SAMPLE_MAX_TOP) of them into lp.
 */
void fg_sample_logprobs(const float *logits, uint32_t n, int32_t token,
    uint32_t top, fg_sample_lp_t *lp);


#define FG_BATCH_MAX_STOP  16
#define FG_BATCH_MAX_N     16

/* fg_batch_conf_t.sched */
#define FG_SCHED_FCFS      0
#define FG_SCHED_ANDES     1

/* fg_batch_conf_t.preempt */
#define FG_PREEMPT_RECOMPUTE  0
#define FG_PREEMPT_SWAP       1

/* fg_batch_conf_t.swap_bytes when 0: 4 GiB of host memory */
#define FG_BATCH_SWAP_BYTES   ((uint64_t) 4 << 30)


typedef struct fg_batch_s  fg_batch_t;


typedef enum {
    FG_FINISH_NONE = 0,
    FG_FINISH_STOP,             /* EOS or a stop token, which is the last */
    FG_FINISH_LENGTH,           /* max_tokens generated */
    FG_FINISH_CONTEXT,          /* no max_tokens: the context is full */
    FG_FINISH_CANCEL,
    FG_FINISH_ERROR             /* the backend failed a step, or the
                                   sequence's grammar allowed nothing */
} fg_finish_e;


/* why fg_batch_submit() refused a request */
typedef enum {
    FG_BATCH_OK = 0,
    FG_BATCH_EINVAL,            /* empty prompt, token out of the
                                   vocabulary, bad sampling parameters,
                                   too many stop ids */
    FG_BATCH_ECONTEXT,          /* prompt + max_tokens beyond the context */
    FG_BATCH_EKV,               /* beyond the whole KV pool, even alone */
    FG_BATCH_EFULL,             /* max_seqs held: try again later */
    FG_BATCH_EEXIST,            /* this (owner, id) is held already */
    FG_BATCH_ENOMEM
} fg_batch_err_e;


typedef struct {
    uint64_t            id;             /* the caller's, unique per owner */
    uint32_t            owner;
    const int32_t      *prompt;         /* copied */
    uint32_t            n_prompt;
    uint32_t            max_tokens;     /* 0: up to the context's end */
    fg_sample_params_t  sampling;       /* its bias entries copied, their
                                           ids in the vocabulary */
    const int32_t      *stop;           /* stop token ids, copied */
    uint32_t            n_stop;
    unsigned            ignore_eos:1;   /* the conf's eog ids do not stop */
    void               *data;           /* given back in events */

    /*
     * Choices (OpenAI's n): 0 or 1 for one, up to FG_BATCH_MAX_N.  Each
     * is a sequence of its own, its events carrying its index; choice 0
     * samples with the seed, choice c with fg_batch_choice_seed(seed, c),
     * so n choices of a seeded request are different and reproducible.
     * The prompt's full blocks are computed once, by the first choice to
     * join, and the others take references to them, from the prefix
     * cache (fg_batch_defer()) or without it from choice 0
     * (fg_batch_sibling()); the last, partial block is each one's own.
     * Cancelling (owner, id) ends them all.
     */
    uint32_t            n;

    /* the reader's expectations (Andes's QoE); 0: the conf's */
    float               ttft;           /* s to the first token */
    float               speed;          /* tokens a second */

    /*
     * An embedding: the prompt runs through the model, nothing is
     * sampled, and its one event (FG_FINISH_STOP, token -1) carries the
     * final hidden states after the output norm, mean-pooled over the
     * prompt's positions and L2-normalised.  max_tokens, sampling and
     * stop ids are ignored; the prefix cache gives it nothing (every
     * position's state is needed), though its blocks serve others.
     * Refused (FG_BATCH_EINVAL) where the backend's info has n_embd 0.
     */
    unsigned            embed:1;

    /* structured output: a GBNF grammar (engine/grammar) every output
     * token must follow, compiled at submit (a grammar that does not
     * compile: FG_BATCH_EINVAL, err says why); NULL: none.  Each of n
     * choices has a matcher of its own; an embedding takes none */
    const char         *grammar;
    uint32_t            n_grammar;

    /*
     * With sampling.logprobs, the prompt's too (OpenAI's echo): choice
     * 0's first events are one for each prompt position p of 1 ..
     * n_prompt - 1, in order, its prompt_pos p, its token the prompt's
     * at p, its lp that token's given those before it.  Every position's
     * logits are needed: no prefix cache, and refused (FG_BATCH_EINVAL)
     * where the backend's info has no all_logits.
     */
    unsigned            prompt_lp:1;
} fg_batch_req_t;


typedef struct {
    uint64_t            id;
    uint32_t            owner;
    uint32_t            choice;         /* 0 .. n - 1 */
    void               *data;
    int32_t             token;          /* -1 for none: cancel, error */
    uint32_t            finish;         /* fg_finish_e: NONE while running */
    uint32_t            n_prompt;
    uint32_t            n_generated;    /* tokens so far, this one too */
    uint32_t            n_cached;       /* prompt tokens the cache gave at
                                           its last join */
    const fg_sample_lp_t *lp;           /* the token's log-probabilities,
                                           when asked; else NULL */
    uint32_t            prompt_pos;     /* a prompt position's
                                           log-probabilities (prompt_lp):
                                           its position; else 0 */

    /* an embedding's end: n_embd floats, valid during the callback;
     * NULL for any other event */
    const float        *embedding;
    uint32_t            n_embd;
} fg_batch_event_t;


/* called from fg_batch_step() and fg_batch_cancel*(); must not call the
 * batcher back */
typedef void (*fg_batch_emit_pt)(void *ctx, const fg_batch_event_t *ev);


typedef struct {
    uint32_t            max_batch;      /* sequences per step */
    uint32_t            max_tokens;     /* tokens per step, >= max_batch */
    uint32_t            max_seqs;       /* held: running and waiting */
    unsigned            prefix_cache:1; /* reuse computed blocks */

    /* end-of-generation token ids (EOS, EOT ...) */
    const int32_t      *eog;
    uint32_t            n_eog;

    /* the model's tokenizer, whose vocabulary grammars read (built at
     * the first request with one, kept until fg_batch_destroy()); NULL:
     * requests with a grammar are refused; it outlives the batcher */
    const fg_tokenizer_t *tokenizer;

    fg_batch_emit_pt    emit;
    void               *ctx;

    /* the scheduler: FG_SCHED_FCFS (0, the order above) or FG_SCHED_ANDES
     * (fg_sched_andes.h: under KV pressure, by QoE gain) */
    uint32_t            sched;
    double              qoe_ttft;       /* s, when a request has none: 1 */
    double              qoe_speed;      /* tokens/s, when none given: 5 */
    double              andes_cap;      /* preemptions per decision, a
                                           share of those running: 0.3 */
    uint32_t            andes_max_preempt; /* preemptions of one
                                           sequence, then it stays: 1 */
    double              andes_horizon;  /* s the estimate looks ahead: 2 */

    /*
     * How a preempted sequence resumes: FG_PREEMPT_RECOMPUTE (0: its
     * blocks freed, its prompt and output prefilled again) or
     * FG_PREEMPT_SWAP (fg_batch_swap.c: its computed blocks copied to
     * host memory, at most swap_bytes of them held (0: 4 GiB), and back
     * into blocks when it joins again, without a prefill; recompute where
     * the backend has no kv_save, kv_load or the bytes are over)
     */
    uint32_t            preempt;
    uint64_t            swap_bytes;

    /* the clock, in seconds (NULL: CLOCK_MONOTONIC): tests drive it */
    double            (*clock)(void *ctx);
    void               *clock_ctx;
} fg_batch_conf_t;


typedef struct {
    uint32_t            running;
    uint32_t            waiting;
    uint32_t            kv_blocks;
    uint32_t            kv_free;
    uint32_t            kv_held;        /* blocks its sequences hold */
    uint32_t            next_need;      /* blocks the first waiting one's
                                           tokens take (0: none waits) */
    uint32_t            decoding;       /* running past their first chunk */
    uint64_t            steps;
    uint64_t            prefill_tokens; /* prompt tokens run, recomputes too */
    uint64_t            generated;      /* tokens sampled */
    uint64_t            preemptions;
    uint64_t            andes_decisions;    /* steps it reordered */
    uint64_t            andes_preemptions;  /* of preemptions, its own */
    uint64_t            swap_outs;      /* of preemptions, swapped */
    uint64_t            swap_ins;       /* swapped ones resumed */
    uint64_t            swap_held;      /* bytes in host memory now */
    uint64_t            finished;       /* ended: stop, length, context */
    uint64_t            cancelled;
    uint64_t            failed;
    uint64_t            refused;

    /* the prefix cache */
    uint64_t            cache_blocks;   /* blocks it holds, used or not */
    uint64_t            cache_hit_tokens;   /* prompt tokens reused */
    uint64_t            cache_query_tokens; /* prompt tokens looked up */
    uint64_t            cache_evictions;
} fg_batch_stats_t;


/* the batcher drives b through ops and owns the block tables of kv */
fg_batch_t *fg_batch_create(const fg_batch_conf_t *conf,
    const fg_backend_ops_t *ops, fg_backend_t *backend, fg_kv_t *kv,
    char *err, size_t errlen);

/* drops every sequence without events */
void fg_batch_destroy(fg_batch_t *b);

/* what the backend runs: vocabulary, context */
const fg_backend_info_t *fg_batch_info(const fg_batch_t *b);

/* FG_BATCH_OK, or an fg_batch_err_e with the reason in err */
int fg_batch_submit(fg_batch_t *b, const fg_batch_req_t *req, char *err,
    size_t errlen);

/* the seed of choice c of a request seeded with seed (c = 0: seed) */
uint64_t fg_batch_choice_seed(uint64_t seed, uint32_t c);

/* ends a held request, every choice of it: 0 (an event with
 * FG_FINISH_CANCEL for each when emit is set), or -1 when no such
 * request is held */
int fg_batch_cancel(fg_batch_t *b, uint32_t owner, uint64_t id, int emit);

/* ends every sequence of an owner; returns how many */
uint32_t fg_batch_cancel_owner(fg_batch_t *b, uint32_t owner, int emit);

/*
 * Runs one step: the number of sequences it ran, 0 when none is held, or
 * -1 when the backend failed (err says why): the step's sequences then end
 * with FG_FINISH_ERROR, the others go on.
 */
int fg_batch_step(fg_batch_t *b, char *err, size_t errlen);

/*
 * Several models in one engine (ADBS, fg_engine_mux.c): while held, steps
 * run the sequences already running and let none of the waiting join.
 */
void fg_batch_hold_joins(fg_batch_t *b, int hold);

/* running + waiting */
uint32_t fg_batch_held(const fg_batch_t *b);

void fg_batch_stats(const fg_batch_t *b, fg_batch_stats_t *st);

/* blocks the waiting requests' tokens take, summed up to the pool's */
uint32_t fg_batch_waiting_need(const fg_batch_t *b);

const char *fg_finish_name(uint32_t finish);


#endif /* _FG_BATCH_H_INCLUDED_ */
