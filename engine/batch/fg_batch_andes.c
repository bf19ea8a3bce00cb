
/*
 * fairgate: Andes's scheduler in the batcher: when it runs, the held
 * sequences as its candidates, and its decision applied (preemptions,
 * the waiting queue's new head).  The decision is fg_sched_andes.c's.
 */


#include "fg_batch_int.h"

/*
 * Andes's trigger: sequences wait, and the KV pool is 90% held by
 * running ones or the first waiting cannot join (the authors trigger on
 * KV use alone; a long prompt blocked at 80% is pressure too).  Without
 * it, nothing changes: fcfs's order.
 */
static int
fg_batch_pressure(fg_batch_t *b)
{
    uint32_t  total, held, need;

    if (b->waiting.n == 0) {
        return 0;
    }

    total = fg_kv_n_blocks(b->kv);
    held = total - fg_kv_free_blocks(b->kv);
    need = fg_kv_blocks_for(b->kv, b->waiting.head->n_tokens)
           + total / 100;

    return (uint64_t) held * 10 >= (uint64_t) total * 9
           || need > fg_kv_free_blocks(b->kv);
}


/* a held sequence as Andes's candidate; prefill runs at the step's
 * budget of tokens, a step's time each */
static void
fg_batch_candidate(fg_batch_t *b, fg_seq_t *s, double now,
    fg_andes_cand_t *c)
{
    double    prefill;
    uint32_t  m, idle, rest;

    c->seq = s;
    c->dry = s->dry;
    c->first = s->submit + s->ttft;
    c->speed = s->speed;
    c->order = s->serial;
    c->running = s->running;
    c->pinned = fg_andes_pinned(s->preempted, b->conf.andes_max_preempt,
                                s->running, s->dry, now);
    c->recompute = 0.0;

    if (s->running) {
        c->ready = now + b->step_s;
        c->blocks = s->kv.n_blocks;
        return;
    }

    /* swapped out: its blocks are loaded, not computed, and its own */
    if (s->swap) {
        rest = s->n_tokens - s->n_computed;
        c->recompute = fg_batch_swap_in_s(b, s);
        c->ready = now + b->step_s + c->recompute
                   + b->step_s * rest / b->conf.max_tokens;
        c->blocks = fg_kv_blocks_for(b->kv, s->n_tokens);
        return;
    }

    m = fg_batch_match(b, s, &idle);
    rest = s->n_tokens - m * b->block_size;
    prefill = b->step_s * rest / b->conf.max_tokens;
    c->ready = now + b->step_s + prefill;
    c->blocks = fg_kv_blocks_for(b->kv, s->n_tokens) - m;
    c->blocks = c->blocks ? c->blocks : 1;

    /* a preempted one's tokens again: its recompute is the cost */
    if (s->n_gen) {
        c->recompute = prefill;
    }
}


/*
 * Andes's decision, at every step under pressure (a step is the quantum
 * at which tokens are made; the decision costs O(n log n) for the n
 * sequences held, little next to a forward pass): the losers running are
 * preempted, the winners waiting go to the head of the queue, best
 * first, and join as fcfs's admission finds them room.
 */
void
fg_batch_andes(fg_batch_t *b)
{
    double            now;
    uint32_t          n, i;
    fg_seq_t         *s;
    fg_andes_conf_t   cf;
    fg_andes_cand_t  *c;

    if (b->conf.sched != FG_SCHED_ANDES || !fg_batch_pressure(b)) {
        return;
    }

    now = fg_batch_now(b);
    c = b->cand_andes;
    n = 0;

    for (s = b->running.head; s; s = s->next) {
        fg_batch_candidate(b, s, now, &c[n++]);
    }

    for (s = b->waiting.head; s; s = s->next) {
        fg_batch_candidate(b, s, now, &c[n++]);
    }

    cf.now = now;
    cf.horizon = b->conf.andes_horizon;
    cf.step_s = b->step_s;
    cf.cap = b->conf.andes_cap;
    cf.pool = fg_kv_n_blocks(b->kv) - fg_kv_n_blocks(b->kv) / 100;
    cf.seats = b->conf.max_batch;

    (void) fg_andes_decide(&cf, c, n, b->order_andes);
    b->stats.andes_decisions++;

    for (i = 0; i < n; i++) {
        if (c[i].preempt) {
            fg_batch_preempt_seq(b, c[i].seq);
            b->stats.andes_preemptions++;
        }
    }

    for (i = n; i-- > 0; /* void */) {
        s = b->order_andes[i]->seq;

        if (b->order_andes[i]->keep && !s->running) {
            fg_list_remove(&b->waiting, s);
            fg_list_push_head(&b->waiting, s);
        }
    }
}

