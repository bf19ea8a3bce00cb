
/*
 * fairgate: the batcher's figures, read between steps: the sequences it
 * holds, its counters with the KV pool's, and the blocks its queue would
 * need (fg_batch.h).
 */


#include "fg_batch_int.h"


uint32_t
fg_batch_held(const fg_batch_t *b)
{
    return b->running.n + b->waiting.n;
}


void
fg_batch_stats(const fg_batch_t *b, fg_batch_stats_t *st)
{
    const fg_seq_t  *s;

    *st = b->stats;
    st->running = b->running.n;
    st->waiting = b->waiting.n;
    st->kv_blocks = fg_kv_n_blocks(b->kv);
    st->kv_free = fg_kv_free_blocks(b->kv);
    st->swap_held = b->swap_held;
    st->cache_blocks = fg_kv_cached_blocks(b->kv);
    st->cache_evictions = fg_kv_evictions(b->kv);
    st->kv_held = fg_kv_held_blocks(b->kv);
    st->next_need = b->waiting.head
                    ? fg_kv_blocks_for(b->kv, b->waiting.head->n_tokens) : 0;
    st->decoding = 0;

    for (s = b->running.head; s; s = s->next) {
        st->decoding += s->n_computed != 0;
    }
}


uint32_t
fg_batch_waiting_need(const fg_batch_t *b)
{
    uint32_t         need, pool;
    const fg_seq_t  *s;

    need = 0;
    pool = fg_kv_n_blocks(b->kv);

    /* as far as the pool goes: a long queue is not walked to its end */
    for (s = b->waiting.head; s && need < pool; s = s->next) {
        need += fg_kv_blocks_for(b->kv, s->n_tokens);
    }

    return need;
}

