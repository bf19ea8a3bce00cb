
/*
 * fairgate: continuous batching, and the prefix cache's use of fg_kv:
 * the lookup when a sequence joins, the registration of its blocks as
 * they fill.
 */


#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_batch_int.h"
#include "fg_mem.h"


static void fg_batch_register(fg_batch_t *b, fg_seq_t *s);


/* fg_batch_join's answers */
#define FG_JOIN_OK      0
#define FG_JOIN_WAIT    -1      /* no room yet: those behind wait too */
#define FG_JOIN_DEFER   1       /* a block it needs is being computed */


static const char  *fg_finish_names[] = {
    "none", "stop", "length", "context", "cancel", "error"
};


const char *
fg_finish_name(uint32_t finish)
{
    return finish <= FG_FINISH_ERROR ? fg_finish_names[finish] : "unknown";
}


static uint32_t
fg_batch_hash(const fg_batch_t *b, uint32_t owner, uint64_t id,
    uint32_t choice)
{
    uint64_t  h;

    h = (id ^ ((uint64_t) owner << 40) ^ ((uint64_t) choice << 34))
        * 0x9e3779b97f4a7c15ULL;

    return (uint32_t) (h >> 32) & b->mask;
}


static fg_seq_t **
fg_batch_lookup(fg_batch_t *b, uint32_t owner, uint64_t id, uint32_t choice)
{
    fg_seq_t  **p;

    for (p = &b->buckets[fg_batch_hash(b, owner, id, choice)];
         *p;
         p = &(*p)->hnext)
    {
        if ((*p)->id == id && (*p)->owner == owner
            && (*p)->choice == choice)
        {
            break;
        }
    }

    return p;
}


/* the conf's expectations and the scheduler's settings, 0 for defaults */
static void
fg_batch_defaults(fg_batch_conf_t *c)
{
    c->qoe_ttft = c->qoe_ttft > 0.0 ? c->qoe_ttft : FG_ANDES_TTFT;
    c->qoe_speed = c->qoe_speed > 0.0 ? c->qoe_speed : FG_ANDES_SPEED;
    c->andes_cap = c->andes_cap > 0.0 ? c->andes_cap : FG_ANDES_CAP;
    c->andes_max_preempt = c->andes_max_preempt ? c->andes_max_preempt
                                                : FG_ANDES_MAX_PREEMPT;
    c->andes_horizon = c->andes_horizon > 0.0 ? c->andes_horizon
                                              : FG_ANDES_HORIZON;
}


fg_batch_t *
fg_batch_create(const fg_batch_conf_t *conf, const fg_backend_ops_t *ops,
    fg_backend_t *backend, fg_kv_t *kv, char *err, size_t errlen)
{
    uint32_t     n;
    fg_batch_t  *b;

    if (conf->max_batch == 0 || conf->max_tokens < conf->max_batch
        || conf->max_seqs < conf->max_batch || conf->max_seqs > (1u << 30)
        || conf->n_eog > 1024)
    {
        snprintf(err, errlen, "batch of %u sequences, %u tokens per step, "
                 "%u held: a step needs at least one sequence, a token for "
                 "each, and room to hold them", conf->max_batch,
                 conf->max_tokens, conf->max_seqs);
        return NULL;
    }

    b = calloc(1, sizeof(fg_batch_t));

    if (b == NULL) {
        goto nomem;
    }

    b->conf = *conf;
    fg_batch_defaults(&b->conf);
    b->ops = ops;
    b->backend = backend;
    b->kv = kv;
    b->block_size = fg_kv_block_size(kv);
    b->swap_ok = ops->kv_save != NULL && ops->kv_load != NULL;

    ops->info(backend, &b->info);

    if (b->info.vocab == 0 || b->info.context == 0) {
        snprintf(err, errlen, "backend %s reports a vocabulary of %u and a "
                 "context of %u", ops->name, b->info.vocab, b->info.context);
        free(b);
        return NULL;
    }

    /* sliding layers in slots of their own: the pool assigns them */
    if (b->info.kv_window && ops->kv_window) {
        if (fg_kv_set_window(kv, b->info.kv_window,
                             b->info.kv_window_slots, err, errlen)
            != 0)
        {
            free(b);
            return NULL;
        }

        ops->kv_window(backend, fg_kv_slots(kv));
    }

    for (n = 1; n < 2 * conf->max_seqs; n *= 2) { /* void */ }

    b->mask = n - 1;
    b->buckets = calloc(n, sizeof(fg_seq_t *));
    b->eog = malloc((conf->n_eog + 1) * sizeof(int32_t));
    b->step_seqs = calloc(conf->max_batch, sizeof(fg_seq_t *));
    b->step = calloc(conf->max_batch, sizeof(fg_backend_seq_t));
    b->logits = malloc((size_t) conf->max_batch * b->info.vocab
                       * sizeof(float));
    b->logits_rows = conf->max_batch;
    b->cand = malloc(b->info.vocab * sizeof(fg_k_cand_t));
    b->hidden = b->info.n_embd ? malloc((size_t) conf->max_batch
                                        * b->info.n_embd * sizeof(float))
                               : NULL;
    b->work = malloc(b->info.vocab * sizeof(float));
    b->marks = calloc(b->info.vocab, sizeof(uint32_t));
    if (conf->sched == FG_SCHED_ANDES) {
        b->cand_andes = calloc(conf->max_seqs, sizeof(fg_andes_cand_t));
        b->order_andes = calloc(conf->max_seqs, sizeof(fg_andes_cand_t *));
    }

    if (b->buckets == NULL || b->eog == NULL || b->step_seqs == NULL
        || b->step == NULL || b->logits == NULL || b->cand == NULL
        || (b->info.n_embd && b->hidden == NULL)
        || b->work == NULL || b->marks == NULL
        || (conf->sched == FG_SCHED_ANDES
            && (b->cand_andes == NULL || b->order_andes == NULL)))
    {
        fg_batch_destroy(b);
        goto nomem;
    }

    if (conf->n_eog) {
        memcpy(b->eog, conf->eog, conf->n_eog * sizeof(int32_t));
    }

    b->conf.eog = b->eog;

    return b;

nomem:

    snprintf(err, errlen, "no memory for a batch of %u sequences",
             conf->max_batch);

    return NULL;
}


static void
fg_seq_free(fg_batch_t *b, fg_seq_t *s)
{
    fg_kv_seq_free(b->kv, &s->kv);
    fg_batch_swap_free(b, s);
    fg_batch_gram_free(b, s);
    free(s->embd_sum);
    free(s->hashes);
    free(s->tokens);
    free((void *) s->sp.bias);
    free(s);
}


void
fg_batch_destroy(fg_batch_t *b)
{
    fg_seq_t  *s, *next;

    if (b == NULL) {
        return;
    }

    for (s = b->waiting.head; s; s = next) {
        next = s->next;
        fg_seq_free(b, s);
    }

    for (s = b->running.head; s; s = next) {
        next = s->next;
        fg_seq_free(b, s);
    }

    fg_batch_gram_destroy(b);

    fg_free_all(b->buckets, b->eog, b->step_seqs, b->step, b->logits, b->cand,
                b->hidden, b->work, b->marks, b->cand_andes, b->order_andes,
                b);
}


const fg_backend_info_t *
fg_batch_info(const fg_batch_t *b)
{
    return &b->info;
}


static int
fg_batch_refuse(fg_batch_t *b, int rc, char *err, size_t errlen,
    const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(err, errlen, fmt, args);
    va_end(args);

    b->stats.refused++;

    return rc;
}


/*
 * What a request may ask, checked against the model and the pool:
 * FG_BATCH_OK with the most tokens it may generate, or a refusal.
 */
static int
fg_batch_check(fg_batch_t *b, const fg_batch_req_t *req, uint32_t *max_gen,
    char *err, size_t errlen)
{
    char      serr[128];
    uint32_t  i, need;
    uint64_t  total;

    if (req->n_prompt == 0) {
        return fg_batch_refuse(b, FG_BATCH_EINVAL, err, errlen,
                               "the prompt is empty");
    }

    for (i = 0; i < req->n_prompt; i++) {
        if (req->prompt[i] < 0 || (uint32_t) req->prompt[i] >= b->info.vocab)
        {
            return fg_batch_refuse(b, FG_BATCH_EINVAL, err, errlen,
                                   "prompt token %u is %d, outside the "
                                   "vocabulary of %u", i, req->prompt[i],
                                   b->info.vocab);
        }
    }

    if (req->prompt_lp && !b->info.all_logits) {
        return fg_batch_refuse(b, FG_BATCH_EINVAL, err, errlen, "backend %s "
                               "gives no logits of a prompt's positions",
                               b->ops->name);
    }

    if (req->embed) {
        *max_gen = 0;
        return fg_batch_embed_check(b, req, err, errlen);
    }

    if (req->n_stop > FG_BATCH_MAX_STOP) {
        return fg_batch_refuse(b, FG_BATCH_EINVAL, err, errlen,
                               "%u stop ids (at most %u)", req->n_stop,
                               FG_BATCH_MAX_STOP);
    }

    for (i = 0; i < req->n_stop; i++) {
        if (req->stop[i] < 0 || (uint32_t) req->stop[i] >= b->info.vocab) {
            return fg_batch_refuse(b, FG_BATCH_EINVAL, err, errlen,
                                   "stop id %d is outside the vocabulary "
                                   "of %u", req->stop[i], b->info.vocab);
        }
    }

    if (!(req->ttft >= 0.0f && req->ttft <= FLT_MAX)
        || !(req->speed >= 0.0f && req->speed <= FLT_MAX))
    {
        return fg_batch_refuse(b, FG_BATCH_EINVAL, err, errlen,
                               "expectations of %g s and %g tokens/s: "
                               "expected finite and not negative",
                               (double) req->ttft, (double) req->speed);
    }

    if (fg_sample_params_check(&req->sampling, serr, sizeof(serr)) != 0) {
        return fg_batch_refuse(b, FG_BATCH_EINVAL, err, errlen, "%s", serr);
    }

    for (i = 0; i < req->sampling.n_bias; i++) {
        if (req->sampling.bias[i].id < 0
            || (uint32_t) req->sampling.bias[i].id >= b->info.vocab)
        {
            return fg_batch_refuse(b, FG_BATCH_EINVAL, err, errlen,
                                   "logit bias token %d is outside the "
                                   "vocabulary of %u",
                                   req->sampling.bias[i].id, b->info.vocab);
        }
    }

    total = (uint64_t) req->n_prompt + (req->max_tokens ? req->max_tokens : 1);

    if (total > b->info.context) {
        return fg_batch_refuse(b, FG_BATCH_ECONTEXT, err, errlen,
                               "a prompt of %u tokens and up to %u more "
                               "exceed the context of %u", req->n_prompt,
                               req->max_tokens ? req->max_tokens : 1,
                               b->info.context);
    }

    *max_gen = req->max_tokens ? req->max_tokens
                               : b->info.context - req->n_prompt;

    /* the last token is sampled, never run: the cache holds the others */
    need = fg_kv_blocks_for(b->kv, (uint64_t) req->n_prompt + *max_gen - 1);

    if (need > fg_kv_n_blocks(b->kv)) {
        return fg_batch_refuse(b, FG_BATCH_EKV, err, errlen,
                               "a prompt of %u tokens and up to %u more "
                               "need %u KV blocks; the pool has %u",
                               req->n_prompt, *max_gen, need,
                               fg_kv_n_blocks(b->kv));
    }

    return FG_BATCH_OK;
}


/* a waiting sequence for a request, with room for the hashes of
 * n_hashes blocks (and an embedding's n_embd sums); NULL when out of
 * memory */
static fg_seq_t *
fg_seq_new(const fg_batch_req_t *req, uint32_t max_gen, uint32_t n_hashes,
    uint32_t n_embd)
{
    fg_seq_t          *s;
    fg_sample_bias_t  *bias;

    s = calloc(1, sizeof(fg_seq_t));

    if (s == NULL) {
        return NULL;
    }

    s->tokens = malloc(((size_t) req->n_prompt + max_gen) * sizeof(int32_t));
    s->hashes = n_hashes ? malloc(n_hashes * sizeof(uint64_t)) : NULL;
    s->embd_sum = req->embed ? calloc(n_embd, sizeof(float)) : NULL;
    s->sp = req->sampling;
    s->sp.bias = NULL;
    bias = NULL;

    if (req->sampling.n_bias) {
        bias = malloc(req->sampling.n_bias * sizeof(fg_sample_bias_t));
        s->sp.bias = bias;
    }

    if (s->tokens == NULL || (n_hashes && s->hashes == NULL)
        || (req->sampling.n_bias && s->sp.bias == NULL)
        || (req->embed && s->embd_sum == NULL))
    {
        free(s->tokens);
        free(s->hashes);
        free(s->embd_sum);
        free((void *) s->sp.bias);
        free(s);
        return NULL;
    }

    s->cap_hashes = n_hashes;

    if (bias) {
        memcpy(bias, req->sampling.bias,
               req->sampling.n_bias * sizeof(fg_sample_bias_t));
    }

    memcpy(s->tokens, req->prompt, req->n_prompt * sizeof(int32_t));

    s->id = req->id;
    s->owner = req->owner;
    s->data = req->data;
    s->n_tokens = req->n_prompt;
    s->n_prompt = req->n_prompt;
    s->max_gen = max_gen;
    s->n_stop = req->n_stop;
    s->ignore_eos = req->ignore_eos;
    s->to_context = req->max_tokens == 0;
    s->embed = req->embed;

    if (req->n_stop) {
        memcpy(s->stop, req->stop, req->n_stop * sizeof(int32_t));
    }

    fg_rand_seed(&s->rng, req->sampling.seed);
    fg_kv_seq_init(&s->kv);

    return s;
}


static void fg_batch_remove(fg_batch_t *b, fg_seq_t *s);


/*
 * Choice c of a checked request, waiting, with a matcher of its own where
 * the request has a grammar (the choices share its compilation): a refusal
 * with err when out of memory or the grammar does not compile
 */
static int
fg_batch_add_choice(fg_batch_t *b, const fg_batch_req_t *req,
    uint32_t max_gen, uint32_t c, char *err, size_t errlen)
{
    int        rc;
    uint32_t   n_hashes;
    fg_seq_t  *s, **p;

    /* the full blocks it can ever have */
    n_hashes = b->conf.prefix_cache
               ? (uint32_t) (((uint64_t) req->n_prompt + max_gen)
                             / b->block_size)
               : 0;

    s = fg_seq_new(req, max_gen, n_hashes, b->info.n_embd);

    if (s == NULL) {
        snprintf(err, errlen, "no memory for a request of %u tokens",
                 req->n_prompt);
        return FG_BATCH_ENOMEM;
    }

    rc = fg_batch_gram_new(b, s, req, err, errlen);

    if (rc != FG_BATCH_OK) {
        fg_seq_free(b, s);
        return rc;
    }

    s->choice = c;
    s->prompt_lp = req->prompt_lp && req->sampling.logprobs && c == 0;
    s->plp_next = 1;
    fg_rand_seed(&s->rng, fg_batch_choice_seed(req->sampling.seed, c));
    s->serial = b->serial++;
    s->submit = fg_batch_now(b);
    s->ttft = req->ttft > 0.0f ? req->ttft : b->conf.qoe_ttft;
    s->speed = req->speed > 0.0f ? req->speed : b->conf.qoe_speed;
    s->dry = s->submit + s->ttft;

    p = fg_batch_lookup(b, req->owner, req->id, c);
    *p = s;
    fg_list_push_tail(&b->waiting, s);

    return FG_BATCH_OK;
}


int
fg_batch_submit(fg_batch_t *b, const fg_batch_req_t *req, char *err,
    size_t errlen)
{
    int        rc;
    uint32_t   max_gen, n, c;

    max_gen = 0;
    rc = fg_batch_check(b, req, &max_gen, err, errlen);

    if (rc != FG_BATCH_OK) {
        return rc;
    }

    n = req->n ? req->n : 1;

    if (n > FG_BATCH_MAX_N || n > b->conf.max_seqs) {
        return fg_batch_refuse(b, FG_BATCH_EINVAL, err, errlen,
                               "%u choices: at most %u", n,
                               FG_BATCH_MAX_N < b->conf.max_seqs
                               ? FG_BATCH_MAX_N : b->conf.max_seqs);
    }

    if (b->waiting.n + b->running.n + n > b->conf.max_seqs) {
        return fg_batch_refuse(b, FG_BATCH_EFULL, err, errlen,
                               "the engine holds %u sequences already",
                               b->conf.max_seqs);
    }

    if (*fg_batch_lookup(b, req->owner, req->id, 0) != NULL) {
        return fg_batch_refuse(b, FG_BATCH_EEXIST, err, errlen,
                               "request %llu of owner %u is held already",
                               (unsigned long long) req->id, req->owner);
    }

    for (c = 0; c < n; c++) {
        rc = fg_batch_add_choice(b, req, max_gen, c, err, errlen);

        if (rc != FG_BATCH_OK) {
            /* the choices taken so far go, without events */
            while (c--) {
                fg_batch_remove(b, *fg_batch_lookup(b, req->owner, req->id,
                                                    c));
            }

            b->stats.refused++;
            return rc;
        }
    }

    return FG_BATCH_OK;
}


static void
fg_batch_emit(fg_batch_t *b, fg_seq_t *s, int32_t token, uint32_t finish)
{
    fg_batch_event_t  ev;

    if (b->conf.emit == NULL) {
        return;
    }

    ev.id = s->id;
    ev.owner = s->owner;
    ev.choice = s->choice;
    ev.data = s->data;
    ev.token = token;
    ev.finish = finish;
    ev.n_prompt = s->n_prompt;
    ev.n_generated = s->n_gen;
    ev.n_cached = s->n_cached;
    ev.embedding = NULL;
    ev.n_embd = 0;
    ev.lp = (token >= 0 && s->sp.logprobs) ? &b->lp : NULL;
    ev.prompt_pos = 0;

    b->conf.emit(b->conf.ctx, &ev);
}


/* takes a sequence out of its list and the table and frees it */
static void
fg_batch_remove(fg_batch_t *b, fg_seq_t *s)
{
    fg_seq_t  **p;

    fg_list_remove(s->running ? &b->running : &b->waiting, s);

    p = fg_batch_lookup(b, s->owner, s->id, s->choice);
    *p = s->hnext;

    fg_seq_free(b, s);
}


static void
fg_batch_cancel_seq(fg_batch_t *b, fg_seq_t *s, int emit)
{
    if (emit) {
        fg_batch_emit(b, s, -1, FG_FINISH_CANCEL);
    }

    b->stats.cancelled++;
    fg_batch_remove(b, s);
}


int
fg_batch_cancel(fg_batch_t *b, uint32_t owner, uint64_t id, int emit)
{
    int        rc;
    uint32_t   c;
    fg_seq_t  *s;

    rc = -1;

    for (c = 0; c < FG_BATCH_MAX_N; c++) {
        s = *fg_batch_lookup(b, owner, id, c);

        if (s != NULL) {
            fg_batch_cancel_seq(b, s, emit);
            rc = 0;
        }
    }

    return rc;
}


uint32_t
fg_batch_cancel_owner(fg_batch_t *b, uint32_t owner, int emit)
{
    uint32_t        n, i;
    fg_seq_t       *s, *next;
    fg_seq_list_t  *lists[2];

    lists[0] = &b->waiting;
    lists[1] = &b->running;
    n = 0;

    for (i = 0; i < 2; i++) {
        for (s = lists[i]->head; s; s = next) {
            next = s->next;

            if (s->owner == owner) {
                fg_batch_cancel_seq(b, s, emit);
                n++;
            }
        }
    }

    return n;
}


/* preempts the youngest running sequence */
static fg_seq_t *
fg_batch_preempt(fg_batch_t *b)
{
    fg_seq_t  *s;

    s = b->running.tail;
    fg_batch_preempt_seq(b, s);

    return s;
}


static void
fg_batch_add(fg_batch_t *b, uint32_t n, fg_seq_t *s, uint32_t chunk,
    unsigned first)
{
    fg_backend_seq_t  *bs;

    bs = &b->step[n];
    bs->tokens = s->tokens + s->n_computed;
    bs->n_tokens = chunk;
    bs->pos = s->n_computed;
    bs->block_table = s->kv.blocks;
    bs->n_blocks = s->kv.n_blocks;
    bs->want_logits = !s->embed && s->n_computed + chunk == s->n_tokens;
    bs->want_hidden = s->embed;
    bs->want_all = s->prompt_lp && s->n_computed < s->n_prompt;
    bs->first = first;

    b->step_seqs[n] = s;
}


/*
 * Whether a running sequence has yet to compute block m of s: a full
 * block of its prompt beyond those it registered, of s's hash.  Equal
 * chained hashes are the same tokens after the same prefix, so at the
 * same index: one comparison a running sequence, whose prompt is hashed
 * once (its registration needs the hashes anyway).
 */
static int
fg_batch_pending(fg_batch_t *b, fg_seq_t *s, uint32_t m)
{
    fg_seq_t  *r;

    for (r = b->running.head; r; r = r->next) {
        if (m < r->n_registered || m >= r->n_prompt / b->block_size) {
            continue;
        }

        fg_batch_hash_blocks(b, r, m + 1);

        if (r->hashes[m] == s->hashes[m]) {
            return 1;
        }
    }

    return 0;
}


/*
 * Whether a sequence that could join waits instead, as SGLang's do, for
 * the block after its cached prefix (m blocks), which a running sequence
 * is computing: it adopts it a step later rather than compute it twice.
 * Only a full block it could adopt counts, below (n_tokens - 1) / block.
 *
 * It ends: a join is tried only when every running prompt is in the step
 * whole (a chunk cut short takes the rest of the budget), so the block is
 * computed and registered by this step, and each deferral adds a block
 * or more to the prefix found at the next join.  The computer cancelled,
 * preempted or failed is no longer pending.  Deferrals are bounded by the
 * blocks it could adopt all the same: no eviction or later change of the
 * schedule can hold it back for ever.
 *
 * The cost, for each waiting sequence tried: a comparison a running
 * sequence, and its prefix's lookup again at each of its deferrals.
 */
static int
fg_batch_defer(fg_batch_t *b, fg_seq_t *s, uint32_t m)
{
    uint32_t  max;

    /* an embedding adopts nothing (fg_batch_match) */
    if (!b->conf.prefix_cache || s->embed || s->prompt_lp) {
        return 0;
    }

    max = (s->n_tokens - 1) / b->block_size;

    if (m >= max || s->n_deferred >= max || !fg_batch_pending(b, s, m)) {
        return 0;
    }

    s->n_deferred++;

    return 1;
}


/*
 * A waiting sequence takes its blocks to join, when the pool has them
 * (reserve left over): its cached prefix's, then new ones for the rest of
 * its tokens.  FG_JOIN_OK; FG_JOIN_DEFER, or FG_JOIN_WAIT, with the
 * sequence unchanged.
 */
static int
fg_batch_join(fg_batch_t *b, fg_seq_t *s, uint32_t reserve)
{
    int        shared;
    uint32_t   m, i, idle, need;
    fg_seq_t  *sib;

    /* swapped out: its own blocks loaded back, registered again */
    if (s->swap) {
        if (fg_batch_swap_in(b, s, reserve) != 0) {
            return FG_JOIN_WAIT;
        }

        if (b->conf.prefix_cache) {
            fg_batch_register(b, s);
        }

        return FG_JOIN_OK;
    }

    m = fg_batch_match(b, s, &idle);
    shared = fg_batch_sibling(b, s, &sib);
    need = fg_kv_blocks_for(b->kv, s->n_tokens) - m
           - (shared > 0 ? (uint32_t) shared : 0);

    if ((uint64_t) need + reserve + idle > fg_kv_free_blocks(b->kv)) {
        return FG_JOIN_WAIT;
    }

    if (shared < 0 || fg_batch_defer(b, s, m)) {
        return FG_JOIN_DEFER;
    }

    /* the cache off: its choice 0's prompt blocks */
    if (shared > 0) {
        if (fg_kv_seq_share(b->kv, &s->kv, &sib->kv, (uint32_t) shared)
            != 0)
        {
            return FG_JOIN_WAIT;
        }

        m = (uint32_t) shared;
    }

    for (i = (shared > 0) ? m : 0; i < m; i++) {
        if (fg_kv_seq_adopt(b->kv, &s->kv,
                            fg_kv_cache_find(b->kv, s->hashes[i]))
            != 0)
        {
            break;
        }
    }

    /* the window before its first new token: kept, or found short */
    if (i < m || fg_kv_grow(b->kv, &s->kv, s->n_tokens - s->kv.n_pos) != 0
        || fg_kv_seq_window(b->kv, &s->kv, m * b->block_size, 0,
                            m * b->block_size)
           != 0)
    {
        /* no memory for the table: give back what it took, try later */
        fg_kv_seq_free(b->kv, &s->kv);
        return FG_JOIN_WAIT;
    }

    s->n_computed = m * b->block_size;
    s->n_registered = m;
    s->n_cached = s->n_computed < s->n_prompt ? s->n_computed : s->n_prompt;

    if (b->conf.prefix_cache) {
        b->stats.cache_query_tokens += s->n_prompt;
        b->stats.cache_hit_tokens += s->n_cached;
    }

    return FG_JOIN_OK;
}


/* registers the sequence's blocks that its step filled and computed */
static void
fg_batch_register(fg_batch_t *b, fg_seq_t *s)
{
    uint32_t  full, i;

    full = s->n_computed / b->block_size;

    if (full <= s->n_registered) {
        return;
    }

    fg_batch_hash_blocks(b, s, full);

    /* a hash another block holds: this one stays private */
    for (i = s->n_registered; i < full; i++) {
        (void) fg_kv_cache_insert(b->kv, s->kv.blocks[i], s->hashes[i]);
    }

    s->n_registered = full;
}


/*
 * A sequence joins the running ones: at the tail (the youngest, which a
 * decode short of blocks preempts first); under andes in submission
 * order, so that such a preemption never takes an older request than
 * the one in want, whatever order andes let them in: the oldest then
 * runs to its end.
 */
static void
fg_batch_run(fg_batch_t *b, fg_seq_t *s)
{
    fg_seq_t  *r;

    s->running = 1;

    for (r = b->running.tail;
         b->conf.sched == FG_SCHED_ANDES && r && r->serial > s->serial;
         r = r->prev)
    { /* void */ }

    if (r == b->running.tail) {
        fg_list_push_tail(&b->running, s);
        return;
    }

    if (r == NULL) {
        fg_list_push_head(&b->running, s);
        return;
    }

    s->prev = r;
    s->next = r->next;
    r->next->prev = s;
    r->next = s;
    b->running.n++;
}


/*
 * 3. joins, in order, after the step's n sequences, while the budget
 * lasts: when the pool has blocks for the whole prompt; with others
 * running, a reserve of 1% of what the batcher may hold (as vLLM keeps
 * of its pool) is left for their decodes, so that a join does not cause
 * preemptions at once.  Of the limit, not of the arena: a model of
 * several in one engine may hold less than 1% of its arena, and would
 * then join only into an empty batch.  The first
 * that cannot join stops those behind it; one deferred keeps its place
 * and lets them try.  Returns the step's sequences.
 */
static uint32_t
fg_batch_admit(fg_batch_t *b, uint32_t n, uint32_t budget)
{
    int        rc;
    uint32_t   rem, chunk, reserve;
    fg_seq_t  *s, *next;

    if (b->joins_held) {
        return n;
    }

    for (s = b->waiting.head;
         s && budget && b->running.n < b->conf.max_batch;
         s = next)
    {
        next = s->next;
        reserve = b->running.n ? fg_kv_limit(b->kv) / 100 : 0;
        rc = fg_batch_join(b, s, reserve);

        if (rc == FG_JOIN_DEFER) {
            continue;
        }

        if (rc != FG_JOIN_OK) {
            break;
        }

        fg_list_remove(&b->waiting, s);
        fg_batch_run(b, s);

        rem = s->n_tokens - s->n_computed;
        chunk = fg_batch_plp_chunk(s, rem, &budget);
        fg_batch_add(b, n++, s, chunk, 1);
        budget -= chunk;
    }

    return n;
}


/* chooses the step's sequences and chunks; returns how many */
static uint32_t
fg_batch_schedule(fg_batch_t *b)
{
    uint32_t   n, budget, chunk, rem;
    fg_seq_t  *s, *next, *victim;

    n = 0;
    budget = b->conf.max_tokens;

    fg_batch_andes(b);

    /* 1. decodes, oldest first; preemption takes the youngest */
    for (s = b->running.head; s; s = next) {
        next = s->next;

        if (s->n_tokens - s->n_computed != 1 || s->n_computed == 0) {
            continue;
        }

        victim = NULL;

        while (s->kv.n_pos < s->n_tokens && victim != s) {
            if (fg_kv_grow(b->kv, &s->kv, s->n_tokens - s->kv.n_pos) == 0) {
                break;
            }

            victim = fg_batch_preempt(b);

            if (victim == next) {
                next = NULL;
            }
        }

        if (victim == s) {
            break;
        }

        fg_batch_add(b, n++, s, 1, 0);
        budget--;
    }

    /*
     * 2. prompts under way, in chunks from the rest of the budget: a chunk
     * cut short takes all that is left, so joins are tried only when
     * every prompt under way is in the step whole (fg_batch_defer counts
     * on it)
     */
    for (s = b->running.head; s && budget; s = s->next) {
        rem = s->n_tokens - s->n_computed;

        if (rem == 1 && s->n_computed != 0) {
            continue;
        }

        chunk = fg_batch_plp_chunk(s, rem, &budget);
        fg_batch_add(b, n++, s, chunk, 0);
        budget -= chunk;
    }

    return fg_batch_admit(b, n, budget);
}


static uint32_t
fg_batch_stopped(fg_batch_t *b, fg_seq_t *s, int32_t token)
{
    uint32_t  i;

    if (!s->ignore_eos) {
        for (i = 0; i < b->conf.n_eog; i++) {
            if (token == b->conf.eog[i]) {
                return FG_FINISH_STOP;
            }
        }
    }

    for (i = 0; i < s->n_stop; i++) {
        if (token == s->stop[i]) {
            return FG_FINISH_STOP;
        }
    }

    /* its grammar took an end of generation: nothing may follow, even
     * with the EOG ids ignored */
    if (s->gm && fg_gram_done(s->gm)) {
        return FG_FINISH_STOP;
    }

    if (s->n_gen == s->max_gen) {
        return s->to_context ? FG_FINISH_CONTEXT : FG_FINISH_LENGTH;
    }

    return FG_FINISH_NONE;
}


/* the backend failed the step: its n sequences end with an error */
static void
fg_batch_failed(fg_batch_t *b, uint32_t n)
{
    uint32_t   i, k;
    fg_seq_t  *s;

    for (i = 0; i < n; i++) {
        s = b->step_seqs[i];

        /* the cache contents the step used are undefined now: whatever
         * of them the prefix cache held, nobody reuses */
        for (k = 0; k < s->kv.n_blocks; k++) {
            fg_kv_cache_forget(b->kv, s->kv.blocks[k]);
        }

        fg_batch_emit(b, s, -1, FG_FINISH_ERROR);
        b->stats.failed++;
        fg_batch_remove(b, s);
    }
}


/* the step's time, smoothed: from one busy step's start to the next's
 * (a step after an idle one does not count) */
static void
fg_batch_clock(fg_batch_t *b)
{
    double  t;

    t = fg_batch_now(b);

    if (b->step_t0 > 0.0 && t > b->step_t0) {
        b->step_s = b->step_s > 0.0
                    ? 0.8 * b->step_s + 0.2 * (t - b->step_t0)
                    : t - b->step_t0;
    }

    b->step_t0 = t;
}


int
fg_batch_step(fg_batch_t *b, char *err, size_t errlen)
{
    int                 rc;
    float              *row;
    double              now;
    int32_t             token;
    uint32_t            n, i, finish;
    fg_seq_t           *s;
    fg_backend_batch_t  batch;

    fg_batch_clock(b);

    n = fg_batch_schedule(b);

    if (n == 0) {
        b->step_t0 = 0.0;
        return 0;
    }

    batch.seqs = b->step;
    batch.n_seqs = n;
    batch.hidden = b->hidden;

    rc = fg_batch_window(b, n, err, errlen);
    rc = rc ? rc : fg_batch_plp_room(b, n, err, errlen);
    rc = rc ? rc : b->ops->forward(b->backend, &batch, b->logits, err,
                                   errlen);

    b->stats.steps++;

    if (rc != 0) {
        fg_batch_failed(b, n);
        return -1;
    }

    row = b->logits;
    now = fg_batch_now(b);

    for (i = 0; i < n; i++) {
        s = b->step_seqs[i];

        if (s->n_computed < s->n_prompt) {
            b->stats.prefill_tokens += b->step[i].n_tokens;
        }

        s->n_computed += b->step[i].n_tokens;

        /* what the next token no longer sees: the window lets it go */
        (void) fg_kv_seq_window(b->kv, &s->kv, s->n_computed, 0,
                                s->n_computed);

        if (b->conf.prefix_cache) {
            fg_batch_register(b, s);
        }

        if (s->embed) {
            if (fg_batch_embed_step(b, i)) {
                b->stats.finished++;
                fg_batch_remove(b, s);
            }

            continue;
        }

        if (b->step[i].want_all) {
            row = fg_batch_plp_step(b, i, row);
        }

        if (!b->step[i].want_logits) {
            continue;
        }

        token = fg_batch_sample(b, s, row);
        row += b->info.vocab;

        if (token < 0) {
            fg_batch_emit(b, s, -1, FG_FINISH_ERROR);
            b->stats.failed++;
            fg_batch_remove(b, s);
            continue;
        }

        s->tokens[s->n_tokens++] = token;
        s->n_gen++;
        b->stats.generated++;

        /* the reader reads it when both it and the reader are there */
        s->dry = (now > s->dry ? now : s->dry) + 1.0 / s->speed;

        finish = fg_batch_stopped(b, s, token);

        fg_batch_emit(b, s, token, finish);

        if (finish != FG_FINISH_NONE) {
            b->stats.finished++;
            fg_batch_remove(b, s);
        }
    }

    return (int) n;
}


void
fg_batch_hold_joins(fg_batch_t *b, int hold)
{
    b->joins_held = hold ? 1 : 0;
}
