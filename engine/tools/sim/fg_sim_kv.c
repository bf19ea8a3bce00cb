
/*
 * fairgate: the simulated engine's KV pool and its prefix cache.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_sim_kv.h"


int
fg_sim_kv_layout_init(fg_sim_kv_layout_t *layout, const fg_sim_trace_t *tr)
{
    size_t               i;
    uint32_t             p, n, *count;
    const fg_sim_req_t  *r;

    layout->total = 0;
    layout->base = calloc((size_t) tr->nstrs + 2, sizeof(uint32_t));
    count = calloc((size_t) tr->nstrs + 1, sizeof(uint32_t));

    if (layout->base == NULL || count == NULL) {
        free(layout->base);
        free(count);
        layout->base = NULL;
        return -1;
    }

    /* a prefix id used with several lengths: the longest */
    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];
        n = r->prefix_tokens / FG_SIM_KV_BLOCK;

        if (r->prefix != 0 && n > count[r->prefix]) {
            count[r->prefix] = n;
        }
    }

    for (p = 0; p <= tr->nstrs; p++) {
        layout->base[p] = (uint32_t) layout->total;
        layout->total += count[p];
    }

    layout->base[tr->nstrs + 1] = (uint32_t) layout->total;

    free(count);

    return 0;
}


void
fg_sim_kv_layout_free(fg_sim_kv_layout_t *layout)
{
    free(layout->base);
    layout->base = NULL;
}


int
fg_sim_kv_init(fg_sim_kv_t *kv, uint64_t kv_tokens,
    const fg_sim_kv_layout_t *layout)
{
    memset(kv, 0, sizeof(fg_sim_kv_t));

    kv->kv_tokens = kv_tokens;
    kv->free = kv_tokens;
    kv->layout = layout;
    kv->lru.prev = &kv->lru;
    kv->lru.next = &kv->lru;

    if (layout != NULL) {
        kv->blocks = calloc(layout->total ? layout->total : 1,
                            sizeof(fg_sim_kv_block_t));
        if (kv->blocks == NULL) {
            return -1;
        }
    }

    return 0;
}


void
fg_sim_kv_free(fg_sim_kv_t *kv)
{
    free(kv->blocks);
    kv->blocks = NULL;
}


/* r's prefix blocks in the cache (their first), and how many: 0 without */
static uint32_t
fg_sim_kv_prefix(const fg_sim_kv_t *kv, const fg_sim_req_t *r,
    fg_sim_kv_block_t **first)
{
    if (kv->layout == NULL || r->prefix == 0) {
        *first = NULL;
        return 0;
    }

    *first = &kv->blocks[kv->layout->base[r->prefix]];

    return r->prefix_tokens / FG_SIM_KV_BLOCK;
}


static void
fg_sim_kv_unlink(fg_sim_kv_block_t *b)
{
    b->prev->next = b->next;
    b->next->prev = b->prev;
}


/* the most recently released: evicted last */
static void
fg_sim_kv_release(fg_sim_kv_t *kv, fg_sim_kv_block_t *b)
{
    b->prev = kv->lru.prev;
    b->next = &kv->lru;
    kv->lru.prev->next = b;
    kv->lru.prev = b;
}


uint32_t
fg_sim_kv_match(const fg_sim_kv_t *kv, const fg_sim_req_t *r)
{
    uint32_t            k, n, most;
    fg_sim_kv_block_t  *b;

    n = fg_sim_kv_prefix(kv, r, &b);

    /* at least one token of the prompt is computed */
    most = (r->input_tokens - 1) / FG_SIM_KV_BLOCK;
    if (n > most) {
        n = most;
    }

    for (k = 0; k < n && b[k].blocks != 0; k++) {
        /* void */
    }

    return k * FG_SIM_KV_BLOCK;
}


int
fg_sim_kv_fits(const fg_sim_kv_t *kv, const fg_sim_req_t *r)
{
    uint32_t            k, n;
    uint64_t            need, room;
    fg_sim_kv_block_t  *b;

    n = fg_sim_kv_prefix(kv, r, &b);

    need = (uint64_t) r->input_tokens + r->max_output_tokens;
    room = kv->free + kv->cached;

    /* blocks of its prefix in the pool: held, not made nor evicted */
    for (k = 0; k < n; k++) {
        if (b[k].blocks != 0) {
            need -= FG_SIM_KV_BLOCK;

            if (b[k].refs == 0) {
                room -= FG_SIM_KV_BLOCK;
            }
        }
    }

    return need <= room;
}


uint32_t
fg_sim_kv_admit(fg_sim_kv_t *kv, const fg_sim_req_t *r,
    fg_sim_kv_lease_t *lease)
{
    uint32_t            k, n, cached;
    uint64_t            need;
    fg_sim_kv_block_t  *b, *old;

    cached = fg_sim_kv_match(kv, r);
    n = fg_sim_kv_prefix(kv, r, &b);

    need = (uint64_t) r->input_tokens + r->max_output_tokens;

    memset(lease, 0, sizeof(fg_sim_kv_lease_t));
    lease->held = need - (uint64_t) n * FG_SIM_KV_BLOCK;
    lease->blocks = n;
    lease->cached = cached;

    /* first hold what is there, so that making room cannot evict it */
    for (k = 0; k < n; k++) {
        if (b[k].blocks == 0) {
            continue;
        }

        if (b[k].refs++ == 0) {
            fg_sim_kv_unlink(&b[k]);
            kv->cached -= FG_SIM_KV_BLOCK;
            kv->reserved += FG_SIM_KV_BLOCK;
        }

        need -= FG_SIM_KV_BLOCK;
    }

    while (kv->free < need) {
        /* fits() said there is room: the list is not empty */
        old = kv->lru.next;

        if (--old->blocks == 0) {
            fg_sim_kv_unlink(old);
        }

        kv->free += FG_SIM_KV_BLOCK;
        kv->cached -= FG_SIM_KV_BLOCK;
        kv->evictions++;
    }

    kv->free -= need;
    kv->reserved += need;

    for (k = 0; k < n; k++) {
        if (b[k].blocks == 0) {
            b[k].blocks = 1;
            b[k].refs = 1;
        }
    }

    kv->query_tokens += r->input_tokens;
    kv->hit_tokens += cached;

    return cached;
}


/* r no longer holds its prefix's blocks: the unheld stay, cached */
static void
fg_sim_kv_unhold(fg_sim_kv_t *kv, const fg_sim_req_t *r)
{
    uint32_t            k, n;
    fg_sim_kv_block_t  *b;

    n = fg_sim_kv_prefix(kv, r, &b);

    for (k = n; k-- > 0; ) {
        if (--b[k].refs == 0) {
            kv->reserved -= FG_SIM_KV_BLOCK;
            kv->cached += FG_SIM_KV_BLOCK;
            fg_sim_kv_release(kv, &b[k]);
        }
    }
}


void
fg_sim_kv_finish(fg_sim_kv_t *kv, const fg_sim_req_t *r, uint32_t output,
    fg_sim_kv_lease_t *lease)
{
    uint32_t  own;

    kv->reserved -= lease->held;

    if (kv->layout == NULL) {
        kv->free += lease->held;
        return;
    }

    /* the full blocks of its own part stay, evicted before its prefix's */
    own = ((uint64_t) r->input_tokens + output
           - (uint64_t) lease->blocks * FG_SIM_KV_BLOCK) / FG_SIM_KV_BLOCK;

    lease->own.refs = 0;
    lease->own.blocks = own;

    kv->cached += (uint64_t) own * FG_SIM_KV_BLOCK;
    kv->free += lease->held - (uint64_t) own * FG_SIM_KV_BLOCK;

    if (own > 0) {
        fg_sim_kv_release(kv, &lease->own);
    }

    fg_sim_kv_unhold(kv, r);
}


void
fg_sim_kv_preempt(fg_sim_kv_t *kv, const fg_sim_req_t *r,
    fg_sim_kv_lease_t *lease)
{
    /* its own blocks are freed: only its prefix may be found again */
    kv->reserved -= lease->held;
    kv->free += lease->held;

    if (kv->layout != NULL) {
        fg_sim_kv_unhold(kv, r);
    }
}
