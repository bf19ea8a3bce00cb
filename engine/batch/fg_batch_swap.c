
/*
 * fairgate: swap preemption in the batcher.  A preempted sequence's
 * computed blocks are copied to host memory through the backend's
 * kv_save before the preemption frees them; it keeps its n_computed and,
 * when it joins again, takes new blocks of its own (none adopted from the
 * prefix cache, none shared), loads the copy into them with kv_load and
 * decodes on without a prefill.  Host memory is bounded by swap_bytes;
 * a preemption that would pass it, or a backend without the two ops,
 * recomputes instead.
 *
 * The prefix cache: the blocks freed at a swap out lose the sequence's
 * references as a recompute's do (a registered one stays cached,
 * evictable); the blocks loaded back are registered again from the
 * first (n_registered 0), and where another block holds a hash already,
 * the loaded one stays private (fg_kv_cache_insert's rule).
 */


#include <stdlib.h>

#include "fg_batch_int.h"


int
fg_batch_swap_out(fg_batch_t *b, fg_seq_t *s)
{
    char      err[256];
    void     *buf;
    uint32_t  n;
    uint64_t  bytes, limit;

    if (b->conf.preempt != FG_PREEMPT_SWAP || !b->swap_ok
        || s->n_computed == 0)
    {
        return -1;
    }

    n = fg_kv_blocks_for(b->kv, s->n_computed);
    bytes = (uint64_t) n * b->info.kv_bytes_per_block;
    limit = b->conf.swap_bytes ? b->conf.swap_bytes : FG_BATCH_SWAP_BYTES;

    if (n > s->kv.n_blocks || bytes == 0 || b->swap_held + bytes > limit
        || bytes > SIZE_MAX)
    {
        return -1;
    }

    buf = malloc((size_t) bytes);

    if (buf == NULL) {
        return -1;
    }

    if (b->ops->kv_save(b->backend, s->kv.blocks, n, buf, err, sizeof(err))
        != 0)
    {
        free(buf);
        return -1;
    }

    s->swap = buf;
    s->n_swapped = n;
    b->swap_held += bytes;
    b->stats.swap_outs++;

    return 0;
}


void
fg_batch_swap_free(fg_batch_t *b, fg_seq_t *s)
{
    if (s->swap == NULL) {
        return;
    }

    free(s->swap);
    b->swap_held -= (uint64_t) s->n_swapped * b->info.kv_bytes_per_block;
    s->swap = NULL;
    s->n_swapped = 0;
}


int
fg_batch_swap_in(fg_batch_t *b, fg_seq_t *s, uint32_t reserve)
{
    char      err[256];
    uint32_t  need;

    need = fg_kv_blocks_for(b->kv, s->n_tokens);

    if ((uint64_t) need + reserve > fg_kv_free_blocks(b->kv)
        || fg_kv_grow(b->kv, &s->kv, s->n_tokens) != 0)
    {
        return -1;
    }

    /* its window's blocks take their slots (sliding layers) before the
     * load; a failed load leaves the new blocks' contents undefined: they
     * are its own, unregistered, and it recomputes in them */
    if (fg_kv_seq_window(b->kv, &s->kv, s->n_computed, 0, 0) != 0
        || b->ops->kv_load(b->backend, s->kv.blocks, s->n_swapped, s->swap,
                           err, sizeof(err))
           != 0)
    {
        s->n_computed = 0;

    } else {
        b->stats.swap_ins++;
    }

    s->n_registered = 0;
    fg_batch_swap_free(b, s);

    return 0;
}


/*
 * Andes's cost of resuming a swapped sequence: its bytes over the
 * host-to-device bandwidth of a PCIe 4.0 x16 link as copies of a block's
 * rows see it, about 12 GB/s (a guess, not a measure: H100s on PCIe 5.0
 * do better, a CPU backend's memcpy better still; the decision needs the
 * order of magnitude, well below a prefill's).
 */
#define FG_BATCH_SWAP_BW  12e9

double
fg_batch_swap_in_s(const fg_batch_t *b, const fg_seq_t *s)
{
    return (double) s->n_swapped * b->info.kv_bytes_per_block
           / FG_BATCH_SWAP_BW;
}
