
/*
 * fairgate: a cache whose sliding-window layers keep only their windows:
 * the global layers' keys and values in n_blocks blocks, as
 * fg_model_kv_init() lays them out, and the sliding layers' in n_slots
 * slots, which the kernels reach through a map of head blocks
 * (fg_k_kv_head()): head h of block b of a sliding layer is head h of
 * slot slots[b] of that layer's slots.
 */


#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fg_err.h"
#include "fg_mem.h"
#include "fg_model.h"


uint32_t
fg_model_swa_layers(const fg_model_t *m)
{
    uint32_t  l, n;

    n = 0;

    for (l = 0; l < m->hp->n_layer; l++) {
        n += m->llama.layers[l].swa != 0;
    }

    return n;
}


/* the layers' places in the mapping: the global ones' n_blocks blocks,
 * then the sliding ones' n_slots slots, each keys then values */
static void
fg_model_window_lay(fg_model_kv_t *kv, const fg_model_t *m, size_t block)
{
    char        *p;
    size_t       l, nkv;
    fg_k_kv_t   *lk;

    p = kv->mem;
    nkv = m->hp->n_head_kv;

    for (l = 0; l < m->hp->n_layer; l++) {
        if (m->llama.layers[l].swa) {
            continue;
        }

        kv->layers[l].k = p;
        kv->layers[l].v = p + kv->n_blocks * block;
        p += 2 * kv->n_blocks * block;
    }

    for (l = 0; l < m->hp->n_layer; l++) {
        if (!m->llama.layers[l].swa) {
            continue;
        }

        lk = &kv->layers[l];
        lk->k = p;
        lk->v = p + kv->n_slots * block;
        lk->k_map = kv->wmap;
        lk->v_map = kv->wmap;
        lk->map_stride = nkv;
        lk->head_stride = (size_t) kv->block_size * lk->head_dim;
        p += 2 * kv->n_slots * block;
    }
}


int
fg_model_kv_init_window(fg_model_kv_t *kv, const fg_model_t *m,
    uint32_t n_blocks, uint32_t n_slots, uint32_t block_size,
    fg_k_type_e type, char *err, size_t errlen)
{
    size_t     block;
    uint32_t   swa;
    uint64_t   bytes;

    swa = fg_model_swa_layers(m);

    if (n_slots == 0 || swa == 0) {
        return fg_model_kv_init(kv, m, n_blocks, block_size, type, err,
                                errlen);
    }

    if (fg_model_kv_layers(kv, m, n_blocks, block_size, type, err, errlen)
        != 0)
    {
        return -1;
    }

    kv->n_slots = n_slots;

    /* a layer's keys, or values, of one block */
    block = (size_t) block_size * m->kv_dim * fg_k_kv_value_size(type);
    bytes = 2 * (uint64_t) block
            * ((uint64_t) (m->hp->n_layer - swa) * n_blocks
               + (uint64_t) swa * n_slots);

    kv->wmap = calloc((size_t) n_blocks * m->hp->n_head_kv,
                      sizeof(uint32_t));

    if (kv->wmap == NULL || bytes > (uint64_t) SIZE_MAX / 2) {
        fg_err_printf(err, errlen, "a KV cache of %u blocks and %u window "
                      "slots is too large", n_blocks, n_slots);
        fg_model_kv_free(kv);
        return -1;
    }

    /* anonymous pages: nothing is touched before a block is written */
    kv->mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (kv->mem == MAP_FAILED) {
        fg_err_printf(err, errlen, "a KV cache of %u blocks and %u window "
                      "slots (%llu MiB): %s", n_blocks, n_slots,
                      (unsigned long long) (bytes >> 20), strerror(errno));
        kv->mem = NULL;
        fg_model_kv_free(kv);
        return -1;
    }

    kv->bytes = bytes;
    fg_model_window_lay(kv, m, block);

    return 0;
}


void
fg_model_kv_window_bind(fg_model_kv_t *kv, const int32_t *slots)
{
    kv->slots = slots;
}


int
fg_model_kv_window_sync(fg_model_kv_t *kv, const int32_t *blocks, size_t n)
{
    size_t    i, h, nkv;
    int32_t   b, slot;

    if (kv->wmap == NULL) {
        return 0;
    }

    if (kv->slots == NULL) {
        return -1;
    }

    nkv = kv->layers[0].n_kv_head;

    for (i = 0; i < n; i++) {
        b = blocks[i];

        if (b < 0 || (uint32_t) b >= kv->n_blocks) {
            continue;
        }

        slot = kv->slots[b] >= 0 ? kv->slots[b] : 0;

        for (h = 0; h < nkv; h++) {
            kv->wmap[(size_t) b * nkv + h] = (uint32_t) (slot * nkv + h);
        }
    }

    return 0;
}
