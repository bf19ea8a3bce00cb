
/*
 * fairgate: the paged KV cache's bookkeeping.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_kv.h"


struct fg_kv_s {
    uint32_t    n_blocks;
    uint32_t    block_size;
    uint32_t    n_free;
    int32_t    *free;           /* stack: free[n_free - 1] is taken next */
    uint32_t   *refs;
};


fg_kv_t *
fg_kv_create(uint32_t n_blocks, uint32_t block_size, char *err,
    size_t errlen)
{
    uint32_t   i;
    fg_kv_t   *kv;

    if (n_blocks == 0 || block_size == 0 || n_blocks > INT32_MAX) {
        snprintf(err, errlen, "KV pool of %u blocks of %u positions: both "
                 "must be at least 1", n_blocks, block_size);
        return NULL;
    }

    kv = calloc(1, sizeof(fg_kv_t));

    if (kv == NULL) {
        goto nomem;
    }

    kv->free = malloc(n_blocks * sizeof(int32_t));
    kv->refs = calloc(n_blocks, sizeof(uint32_t));

    if (kv->free == NULL || kv->refs == NULL) {
        fg_kv_destroy(kv);
        goto nomem;
    }

    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    kv->n_free = n_blocks;

    /* block 0 on top: a fresh pool hands out 0, 1, 2 ... */
    for (i = 0; i < n_blocks; i++) {
        kv->free[i] = (int32_t) (n_blocks - 1 - i);
    }

    return kv;

nomem:

    snprintf(err, errlen, "no memory for a KV pool of %u blocks", n_blocks);

    return NULL;
}


void
fg_kv_destroy(fg_kv_t *kv)
{
    if (kv == NULL) {
        return;
    }

    free(kv->free);
    free(kv->refs);
    free(kv);
}


uint32_t
fg_kv_n_blocks(const fg_kv_t *kv)
{
    return kv->n_blocks;
}


uint32_t
fg_kv_block_size(const fg_kv_t *kv)
{
    return kv->block_size;
}


uint32_t
fg_kv_free_blocks(const fg_kv_t *kv)
{
    return kv->n_free;
}


uint32_t
fg_kv_blocks_for(const fg_kv_t *kv, uint64_t n)
{
    uint64_t  b;

    b = (n + kv->block_size - 1) / kv->block_size;

    return b > UINT32_MAX ? UINT32_MAX : (uint32_t) b;
}


uint32_t
fg_kv_refs(const fg_kv_t *kv, int32_t block)
{
    if (block < 0 || (uint32_t) block >= kv->n_blocks) {
        return 0;
    }

    return kv->refs[block];
}


void
fg_kv_seq_init(fg_kv_seq_t *s)
{
    memset(s, 0, sizeof(fg_kv_seq_t));
}


uint32_t
fg_kv_grow_need(const fg_kv_t *kv, const fg_kv_seq_t *s, uint32_t k)
{
    uint32_t  want;

    want = fg_kv_blocks_for(kv, (uint64_t) s->n_pos + k);

    return want > s->n_blocks ? want - s->n_blocks : 0;
}


int
fg_kv_can_grow(const fg_kv_t *kv, const fg_kv_seq_t *s, uint32_t k)
{
    return fg_kv_grow_need(kv, s, k) <= kv->n_free;
}


static int
fg_kv_seq_reserve(fg_kv_seq_t *s, uint32_t n)
{
    int32_t   *blocks;
    uint32_t   cap;

    if (n <= s->cap) {
        return 0;
    }

    cap = s->cap ? s->cap : 4;

    while (cap < n) {
        cap *= 2;
    }

    blocks = realloc(s->blocks, cap * sizeof(int32_t));

    if (blocks == NULL) {
        return -1;
    }

    s->blocks = blocks;
    s->cap = cap;

    return 0;
}


int
fg_kv_grow(fg_kv_t *kv, fg_kv_seq_t *s, uint32_t k)
{
    int32_t   b;
    uint32_t  need, i;

    if ((uint64_t) s->n_pos + k > UINT32_MAX) {
        return -1;
    }

    need = fg_kv_grow_need(kv, s, k);

    if (need > kv->n_free
        || fg_kv_seq_reserve(s, s->n_blocks + need) != 0)
    {
        return -1;
    }

    for (i = 0; i < need; i++) {
        b = kv->free[--kv->n_free];
        kv->refs[b] = 1;
        s->blocks[s->n_blocks++] = b;
    }

    s->n_pos += k;

    return 0;
}


void
fg_kv_seq_free(fg_kv_t *kv, fg_kv_seq_t *s)
{
    int32_t   b;
    uint32_t  i;

    /* the table's last block first, so that its first block is reused
     * first: a sequence allocated again gets its old blocks back in order */
    for (i = s->n_blocks; i-- > 0; ) {
        b = s->blocks[i];

        if (--kv->refs[b] == 0) {
            kv->free[kv->n_free++] = b;
        }
    }

    free(s->blocks);
    fg_kv_seq_init(s);
}


int
fg_kv_seq_share(fg_kv_t *kv, fg_kv_seq_t *dst, const fg_kv_seq_t *src,
    uint32_t n_blocks)
{
    uint32_t  i;

    if (dst->n_blocks != 0 || n_blocks > src->n_blocks
        || (uint64_t) n_blocks * kv->block_size > src->n_pos
        || fg_kv_seq_reserve(dst, n_blocks) != 0)
    {
        return -1;
    }

    for (i = 0; i < n_blocks; i++) {
        dst->blocks[i] = src->blocks[i];
        kv->refs[src->blocks[i]]++;
    }

    dst->n_blocks = n_blocks;
    dst->n_pos = n_blocks * kv->block_size;

    return 0;
}
