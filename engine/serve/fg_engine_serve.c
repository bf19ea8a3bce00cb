
/*
 * fairgate: the engine's serving loop.
 */


#include <stdio.h>
#include <string.h>

#include "fg_engine_serve.h"


#define FG_SERVE_IDLE_MS  100


static uint8_t
fg_serve_finish(uint32_t finish)
{
    switch (finish) {

    case FG_FINISH_STOP:
        return FG_SHM_FINISH_STOP;

    case FG_FINISH_LENGTH:
        return FG_SHM_FINISH_LENGTH;

    case FG_FINISH_CONTEXT:
        return FG_SHM_FINISH_CONTEXT;

    case FG_FINISH_CANCEL:
        return FG_SHM_FINISH_CANCEL;

    case FG_FINISH_ERROR:
        return FG_SHM_FINISH_ERROR;

    default:
        return FG_SHM_FINISH_NONE;
    }
}


void
fg_engine_serve_emit(void *ctx, const fg_batch_event_t *ev)
{
    float          lps[FG_SHM_MAX_TOP + 1];
    int32_t        ids[FG_SHM_MAX_TOP + 1];
    uint32_t       n;
    fg_shm_comp_t  c;

    /* the token's log-probabilities, in pieces before its completion */
    if (ev->lp) {
        n = ev->lp->n_top < FG_SHM_MAX_TOP ? ev->lp->n_top : FG_SHM_MAX_TOP;

        ids[0] = ev->token;
        lps[0] = ev->lp->logprob;
        memcpy(ids + 1, ev->lp->top_id, n * sizeof(int32_t));
        memcpy(lps + 1, ev->lp->top_lp, n * sizeof(float));

        fg_shm_engine_logprobs(ctx, ev->owner, ev->id, ev->choice,
                               ev->prompt_pos != 0, ids, lps, n + 1);
    }

    /* a prompt position's log-probabilities have no completion */
    if (ev->prompt_pos) {
        return;
    }

    /* an embedding's vector, in pieces before its completion */
    if (ev->embedding) {
        fg_shm_engine_vector(ctx, ev->owner, ev->id, ev->embedding,
                             ev->n_embd);
    }

    memset(&c, 0, sizeof(c));
    c.req_id = ev->id;
    c.token = ev->token;
    c.finish = fg_serve_finish(ev->finish);
    c.n_prompt = ev->n_prompt;
    c.n_generated = ev->n_generated;
    c.n_cached = ev->n_cached;
    c.choice = ev->choice;

    fg_shm_engine_complete(ctx, ev->owner, &c);
}


/* the version 4 block: the logits' adjustments, the log-probabilities */
static void
fg_serve_sampling(const fg_shm_request_t *r, fg_sample_params_t *sp,
    fg_sample_bias_t *bias)
{
    uint32_t  i;

    for (i = 0; i < r->n_bias; i++) {
        bias[i].id = r->bias_id[i];
        bias[i].bias = r->bias[i];
    }

    sp->bias = bias;
    sp->n_bias = r->n_bias;
    sp->frequency = r->frequency_penalty;
    sp->presence = r->presence_penalty;
    sp->repetition = r->repetition_penalty;
    sp->min_p = r->min_p;
    sp->logprobs = (r->flags & FG_SHM_SUB_LOGPROBS) ? 1 : 0;
    sp->top_logprobs = r->top_logprobs;
}


static int
fg_serve_take(void *ctx, const fg_shm_request_t *r)
{
    int                rc;
    char               err[256];
    fg_engine_seg_t   *s;
    fg_batch_req_t     req;
    fg_sample_bias_t   bias[FG_SHM_MAX_BIAS];

    s = ctx;

    if (r->n_bias > FG_SHM_MAX_BIAS) {
        return FG_SHM_ERR_INVALID;
    }

    memset(&req, 0, sizeof(req));
    req.id = r->req_id;
    req.owner = r->worker;
    req.prompt = r->prompt;
    req.n_prompt = r->n_prompt;
    req.max_tokens = r->max_tokens;
    req.sampling.temperature = r->temperature;
    req.sampling.top_k = r->top_k;
    req.sampling.top_p = r->top_p;
    req.sampling.seed = (r->flags & FG_SHM_SUB_SEED) ? r->seed
                                                     : fg_rand_next(&s->seeds);
    req.stop = r->stop;
    req.n_stop = r->n_stop;
    req.ignore_eos = (r->flags & FG_SHM_SUB_IGNORE_EOS) ? 1 : 0;
    req.ttft = r->ttft_target;
    req.speed = r->tokens_per_s;
    req.n = r->n_choices;
    req.embed = r->embed == FG_SHM_EMBED_MEAN;
    req.grammar = r->grammar;
    req.n_grammar = r->n_grammar;
    req.prompt_lp = (r->flags & FG_SHM_SUB_LOGPROBS)
                    && (r->flags & FG_SHM_SUB_PROMPT_LP);

    fg_serve_sampling(r, &req.sampling, bias);

    rc = fg_batch_submit(s->batch, &req, err, sizeof(err));

    switch (rc) {

    case FG_BATCH_OK:
        return 0;

    case FG_BATCH_EFULL:
        return -1;

    case FG_BATCH_ECONTEXT:
        return FG_SHM_ERR_CONTEXT;

    case FG_BATCH_EKV:
        return FG_SHM_ERR_KV;

    case FG_BATCH_EEXIST:
        return FG_SHM_ERR_DUPLICATE;

    case FG_BATCH_ENOMEM:
        return FG_SHM_ERR_NOMEM;

    default:
        return FG_SHM_ERR_INVALID;
    }
}


static int
fg_serve_cancel(void *ctx, uint32_t worker, uint64_t req_id)
{
    fg_engine_seg_t  *s;

    s = ctx;

    return fg_batch_cancel(s->batch, worker, req_id, 1);
}


static void
fg_serve_lost(void *ctx, uint32_t worker)
{
    fg_engine_seg_t  *s;

    s = ctx;

    /* nobody to tell: the worker is gone */
    fg_batch_cancel_owner(s->batch, worker, 0);
}


void
fg_engine_seg_init(fg_engine_seg_t *s, fg_shm_engine_t *shm,
    fg_batch_t *batch)
{
    memset(s, 0, sizeof(fg_engine_seg_t));
    s->shm = shm;
    s->batch = batch;
    s->max_seqs = fg_shm_engine_header(shm)->shape.max_seqs;
    fg_rand_seed(&s->seeds, fg_shm_engine_generation(shm));
}


void
fg_engine_seg_take(fg_engine_seg_t *s)
{
    uint32_t  held;

    held = fg_batch_held(s->batch);

    s->submitted += fg_shm_engine_take(s->shm, held < s->max_seqs
                                               ? s->max_seqs - held : 0,
                                       fg_serve_take, fg_serve_cancel, s);
}


void
fg_engine_seg_publish(fg_engine_seg_t *s, const fg_batch_stats_t *st)
{
    fg_shm_load_t           load;
    const fg_shm_header_t  *h;

    h = fg_shm_engine_header(s->shm);

    memset(&load, 0, sizeof(load));
    load.steps = st->steps;
    load.running = st->running;
    load.waiting = st->waiting;
    load.max_batch = h->shape.max_batch;
    load.max_seqs = s->max_seqs;
    load.kv_blocks = st->kv_blocks;
    load.kv_free = st->kv_free;
    load.block_size = h->shape.block_size;
    load.overload = st->waiting > 0;
    load.submitted = s->submitted;
    load.generated = st->generated;
    load.prefill_tokens = st->prefill_tokens;
    load.preemptions = st->preemptions;
    load.finished = st->finished;
    load.cancelled = st->cancelled;
    load.refused = st->refused;
    load.failed = st->failed;
    load.cache_blocks = st->cache_blocks;
    load.cache_hit_tokens = st->cache_hit_tokens;
    load.cache_query_tokens = st->cache_query_tokens;
    load.cache_evictions = st->cache_evictions;

    fg_shm_engine_publish(s->shm, &load);
}


void
fg_engine_seg_flush(fg_engine_seg_t *s)
{
    fg_shm_engine_flush(s->shm, fg_serve_lost, s);
}


int
fg_engine_serve(fg_shm_engine_t *shm, fg_batch_t *batch,
    volatile sig_atomic_t *stop)
{
    int               rc;
    char              err[256];
    fg_engine_seg_t   s;
    fg_batch_stats_t  st;

    fg_engine_seg_init(&s, shm, batch);

    while (!*stop) {
        fg_engine_seg_take(&s);

        rc = fg_batch_step(batch, err, sizeof(err));

        if (rc < 0) {
            fprintf(stderr, "fairgate-engine: step failed: %s\n", err);
        }

        /* the status first: a worker woken by this step's tokens reads
         * a status at least as new as they are */
        fg_batch_stats(batch, &st);
        fg_engine_seg_publish(&s, &st);
        fg_engine_seg_flush(&s);

        if (rc == 0 && !*stop) {
            fg_shm_engine_wait(shm, FG_SERVE_IDLE_MS);
        }
    }

    return 0;
}
