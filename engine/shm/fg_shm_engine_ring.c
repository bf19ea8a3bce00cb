
/*
 * fairgate: the rings of the engine's side of the segment: submissions
 * and cancels taken from the workers' rings, and completions written into
 * each worker's own, through an overflow queue of the engine's when that
 * ring is full (a slow worker never blocks the engine).
 */


#include <stdlib.h>
#include <string.h>

#include "fg_shm_engine_int.h"


/* a worker that owes this many unread completions is lost whatever else */
#define FG_SHM_OVERFLOW_MAX     (1u << 20)


static int
fg_shm_over_push(fg_shm_local_t *l, const fg_shm_comp_t *c)
{
    uint32_t        i, cap;
    fg_shm_comp_t  *q;

    if (l->over_n == l->over_cap) {
        if (l->over_cap >= FG_SHM_OVERFLOW_MAX) {
            return -1;
        }

        cap = l->over_cap ? 2 * l->over_cap : 256;
        q = malloc(cap * sizeof(fg_shm_comp_t));

        if (q == NULL) {
            return -1;
        }

        for (i = 0; i < l->over_n; i++) {
            q[i] = l->over[(l->over_head + i) % l->over_cap];
        }

        free(l->over);
        l->over = q;
        l->over_cap = cap;
        l->over_head = 0;
    }

    l->over[(l->over_head + l->over_n) % l->over_cap] = *c;
    l->over_n++;

    return 0;
}


void
fg_shm_over_move(fg_shm_engine_t *e, uint32_t w, fg_shm_local_t *l)
{
    uint64_t          tail, head;
    fg_shm_worker_t  *wk;

    wk = fg_shm_worker(e->base, e->h, w);
    tail = wk->tail;
    head = fg_shm_load(&wk->head);

    while (l->over_n && tail - head < e->h->comp_slots) {
        *fg_shm_comp_slot(wk, e->h, tail++) = l->over[l->over_head];
        l->over_head = (l->over_head + 1) % l->over_cap;
        l->over_n--;
        l->wake = 1;
    }

    fg_shm_store(&wk->tail, tail);
}


void
fg_shm_engine_complete(fg_shm_engine_t *e, uint32_t worker,
    const fg_shm_comp_t *c)
{
    uint64_t          tail, head;
    fg_shm_local_t   *l;
    fg_shm_worker_t  *wk;

    l = fg_shm_engine_worker(e, worker);

    if (l == NULL || l->lost) {
        return;
    }

    wk = fg_shm_worker(e->base, e->h, worker);

    if (l->over_n == 0) {
        tail = wk->tail;
        head = fg_shm_load(&wk->head);

        if (tail - head < e->h->comp_slots) {
            *fg_shm_comp_slot(wk, e->h, tail) = *c;
            fg_shm_store(&wk->tail, tail + 1);
            l->wake = 1;
            return;
        }
    }

    if (fg_shm_over_push(l, c) != 0) {
        l->lost = 1;
    }
}


void
fg_shm_engine_vector(fg_shm_engine_t *e, uint32_t worker, uint64_t req_id,
    const float *v, uint32_t n)
{
    uint32_t       i, k;
    fg_shm_comp_t  c;

    for (i = 0; i < n; i += k) {
        k = n - i < FG_SHM_VEC_FLOATS ? n - i : FG_SHM_VEC_FLOATS;

        fg_shm_vec_put(&c, req_id, i, v + i, k);
        fg_shm_engine_complete(e, worker, &c);
    }
}


void
fg_shm_engine_logprobs(fg_shm_engine_t *e, uint32_t worker, uint64_t req_id,
    uint32_t choice, unsigned prompt, const int32_t *ids, const float *lps,
    uint32_t n)
{
    uint32_t       i, k;
    fg_shm_lp_t    p;
    fg_shm_comp_t  c;

    n = n < FG_SHM_MAX_TOP + 1 ? n : FG_SHM_MAX_TOP + 1;

    for (i = 0; i < n; i += k) {
        k = n - i < FG_SHM_LP_PAIRS ? n - i : FG_SHM_LP_PAIRS;

        memset(&p, 0, sizeof(p));
        p.req_id = req_id;
        p.index = (uint8_t) i;
        p.n = (uint8_t) k;
        p.n_top = (uint8_t) (n - 1);
        p.choice = (uint8_t) choice;
        p.prompt = prompt ? 1 : 0;
        p.finish = FG_SHM_FINISH_NONE;
        p.kind = FG_SHM_COMP_LP;
        memcpy(p.id, ids + i, k * sizeof(int32_t));
        memcpy(p.lp, lps + i, k * sizeof(float));

        memcpy(&c, &p, sizeof(c));
        fg_shm_engine_complete(e, worker, &c);
    }
}


static void
fg_shm_engine_send(fg_shm_engine_t *e, uint32_t w, uint64_t req_id,
    uint8_t finish, uint8_t error)
{
    fg_shm_comp_t  c;

    memset(&c, 0, sizeof(c));
    c.req_id = req_id;
    c.token = -1;
    c.finish = finish;
    c.error = error;

    fg_shm_engine_complete(e, w, &c);
}


static int
fg_shm_pending_take(fg_shm_engine_t *e, uint32_t w, uint32_t epoch,
    uint64_t id)
{
    uint32_t  i;

    for (i = 0; i < e->n_pend; i++) {
        if (e->pend[i].req_id == id && e->pend[i].worker == w
            && e->pend[i].epoch == epoch)
        {
            /* a worker that never used id 0 cannot match this */
            e->pend[i].worker = UINT32_MAX;
            return 1;
        }
    }

    return 0;
}


/*
 * Checks the chunks of the submission at head; returns how many slots it
 * takes, 0 when it is malformed (then one slot is skipped).
 */
static uint32_t
fg_shm_sub_chunks(fg_shm_engine_t *e, uint64_t head, uint64_t tail)
{
    uint32_t       i, n, expect, prompt;
    fg_shm_sub_t  *first, *s;

    first = fg_shm_sub_slot(e->base, e->h, head);

    if (first->n_grammar > FG_SHM_MAX_GRAMMAR) {
        return 0;
    }

    n = fg_shm_sub_slots(first->n_prompt, first->n_grammar);
    prompt = fg_shm_sub_slots(first->n_prompt, 0);

    if (n > tail - head || n > e->h->sub_slots) {
        return 0;
    }

    for (i = 0; i < n; i++) {
        s = fg_shm_sub_slot(e->base, e->h, head + i);

        /* the grammar's slots hold no tokens */
        expect = i < prompt ? first->n_prompt - i * FG_SHM_SLOT_TOKENS : 0;
        expect = expect < FG_SHM_SLOT_TOKENS ? expect : FG_SHM_SLOT_TOKENS;

        if (s->index != i || s->req_id != first->req_id
            || s->worker != first->worker || s->n_tokens != expect)
        {
            return 0;
        }
    }

    return n;
}


/*
 * The worker may rewrite its slots while the engine reads them (a bug or
 * a hostile process): the first slot is read once into sub, and every
 * length comes from that copy, checked against the chunks counted.
 */
static int
fg_shm_take_one(fg_shm_engine_t *e, uint64_t head, uint32_t n,
    fg_shm_take_pt take, void *ctx)
{
    int                rc;
    uint32_t           i, k, len;
    fg_shm_sub_t       sub, *s;
    fg_shm_local_t    *l;
    fg_shm_request_t   req;

    sub = *fg_shm_sub_slot(e->base, e->h, head);
    s = &sub;
    l = fg_shm_engine_worker(e, s->worker);

    /* from a worker gone since, or an earlier attach: nobody to answer */
    if (l == NULL || l->epoch != s->epoch) {
        return 0;
    }

    if (fg_shm_pending_take(e, s->worker, s->epoch, s->req_id)) {
        fg_shm_engine_send(e, s->worker, s->req_id, FG_SHM_FINISH_CANCEL, 0);
        return 0;
    }

    if (s->n_prompt > e->h->shape.context) {
        fg_shm_engine_send(e, s->worker, s->req_id, FG_SHM_FINISH_REFUSED,
                           FG_SHM_ERR_CONTEXT);
        return 0;
    }

    if (s->n_stop > FG_SHM_MAX_STOP || s->n_bias > FG_SHM_MAX_BIAS
        || s->top_logprobs > FG_SHM_MAX_TOP
        || s->n_choices > FG_SHM_MAX_CHOICES
        || s->n_grammar > FG_SHM_MAX_GRAMMAR
        || (s->embed && s->n_grammar)
        || n != fg_shm_sub_slots(s->n_prompt, s->n_grammar))
    {
        fg_shm_engine_send(e, s->worker, s->req_id, FG_SHM_FINISH_REFUSED,
                           FG_SHM_ERR_INVALID);
        return 0;
    }

    k = fg_shm_sub_slots(s->n_prompt, 0);

    for (i = 0; i < k; i++) {
        len = s->n_prompt - i * FG_SHM_SLOT_TOKENS;
        len = len < FG_SHM_SLOT_TOKENS ? len : FG_SHM_SLOT_TOKENS;

        memcpy(e->prompt + i * FG_SHM_SLOT_TOKENS,
               i ? fg_shm_sub_slot(e->base, e->h, head + i)->tokens
                 : s->tokens,
               len * sizeof(int32_t));
    }

    /* version 7: the grammar's text, after the prompt's slots */
    for (i = k; i < n; i++) {
        len = s->n_grammar - (i - k) * FG_SHM_SLOT_BYTES;
        len = len < FG_SHM_SLOT_BYTES ? len : FG_SHM_SLOT_BYTES;

        memcpy(e->grammar + (i - k) * FG_SHM_SLOT_BYTES,
               fg_shm_sub_slot(e->base, e->h, head + i)->tokens, len);
    }

    req.grammar = s->n_grammar ? e->grammar : NULL;
    req.n_grammar = s->n_grammar;
    req.worker = s->worker;
    req.req_id = s->req_id;
    req.prompt = e->prompt;
    req.n_prompt = s->n_prompt;
    req.max_tokens = s->max_tokens;
    req.top_k = s->top_k;
    req.temperature = s->temperature;
    req.top_p = s->top_p;
    req.seed = s->seed;
    req.flags = s->flags;
    req.stop = s->stop;
    req.n_stop = s->n_stop;
    req.ttft_target = s->ttft_target;
    req.tokens_per_s = s->tokens_per_s;
    req.frequency_penalty = s->frequency_penalty;
    req.presence_penalty = s->presence_penalty;
    req.repetition_penalty = s->repetition_penalty;
    req.min_p = s->min_p;
    req.top_logprobs = s->top_logprobs;
    req.bias_id = s->bias_id;
    req.bias = s->bias;
    req.n_bias = s->n_bias;
    req.n_choices = s->n_choices ? s->n_choices : 1;
    req.embed = s->embed;

    rc = take(ctx, &req);

    if (rc > 0) {
        fg_shm_engine_send(e, s->worker, s->req_id, FG_SHM_FINISH_REFUSED,
                           (uint8_t) rc);
    }

    return rc;
}


uint32_t
fg_shm_engine_take(fg_shm_engine_t *e, uint32_t max, fg_shm_take_pt take,
    fg_shm_cancel_pt cancel, void *ctx)
{
    uint32_t          n, taken;
    uint64_t          tail;
    fg_shm_sub_t     *s;
    fg_shm_cancel_t  *c;
    fg_shm_local_t   *l;

    taken = 0;
    tail = fg_shm_load(&e->sub->tail);

    while (taken < max && e->sub_head < tail) {
        n = fg_shm_sub_chunks(e, e->sub_head, tail);

        if (n == 0) {
            s = fg_shm_sub_slot(e->base, e->h, e->sub_head);
            l = fg_shm_engine_worker(e, s->worker);

            if (l && l->epoch == s->epoch) {
                fg_shm_engine_send(e, s->worker, s->req_id,
                                   FG_SHM_FINISH_REFUSED,
                                   FG_SHM_ERR_PROTOCOL);
            }

            n = 1;

        } else if (fg_shm_take_one(e, e->sub_head, n, take, ctx) == -1) {
            break;
        }

        e->sub_head += n;
        fg_shm_store(&e->sub->head, e->sub_head);
        taken++;
    }

    tail = fg_shm_load(&e->can->tail);

    while (e->can_head < tail) {
        c = fg_shm_cancel_slot(e->base, e->h, e->can_head);
        l = fg_shm_engine_worker(e, c->worker);

        if (l && l->epoch == c->epoch
            && cancel(ctx, c->worker, c->req_id) != 0)
        {
            e->pend[e->next_pend] = *c;
            e->next_pend = (e->next_pend + 1) % FG_SHM_PENDING;
            e->n_pend += e->n_pend < FG_SHM_PENDING;
        }

        e->can_head++;
        fg_shm_store(&e->can->head, e->can_head);
    }

    return taken;
}
