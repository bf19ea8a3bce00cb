
/*
 * fairgate: the simulated engine's KV pool and its prefix cache.
 *
 * The pool holds kv_tokens.  Without the prefix cache (the VTC paper's
 * engine), a request reserves input + max output tokens from admission to
 * its end.  With it (as vLLM's automatic prefix caching and SGLang's
 * radix cache keep KV, in blocks of FG_SIM_KV_BLOCK tokens):
 *
 *   - a request with a prefix (the trace's "prefix" and "prefix_tokens")
 *     holds that prefix's whole blocks, n = prefix_tokens / block, shared
 *     with every request of the same id on this engine: a block counts
 *     once in the pool however many requests hold it.  The rest of its
 *     reservation, input + max output - n blocks, is its own;
 *   - its cached tokens are its prefix's blocks found in the pool when it
 *     is admitted, from the first on: the largest k with blocks 0 .. k - 1
 *     there, at most (input - 1) / block of them (an engine computes at
 *     least one token of a prompt, as vLLM does);
 *   - when it ends, its prefix's blocks stay in the pool, unreferenced
 *     once no running request holds them, and so do the full blocks of
 *     its own part (input and output after the prefix: no other request
 *     can use them, but an engine keeps them too); the rest of its
 *     reservation is freed;
 *   - unreferenced blocks are evicted least recently released first when
 *     an admission needs room; of one request's, its own blocks first,
 *     then its prefix's from the last to the first, so that a prefix
 *     shortens from its end.
 *
 * A block becomes cached when the request that computes it is admitted: a
 * request admitted in the same merge finds it there.
 */

#ifndef _FG_SIM_KV_H_INCLUDED_
#define _FG_SIM_KV_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_sim_trace.h"


#define FG_SIM_KV_BLOCK  16


typedef struct fg_sim_kv_block_s  fg_sim_kv_block_t;

struct fg_sim_kv_block_s {
    fg_sim_kv_block_t  *prev;         /* in the LRU list, unreferenced */
    fg_sim_kv_block_t  *next;
    uint32_t            refs;         /* running requests holding it */
    uint32_t            blocks;       /* in the pool: 0 or 1 for a block
                                         of a prefix, n for a request's
                                         own blocks */
};


/*
 * Where each prefix's blocks are, for every engine of one trace: prefix p
 * (a string index) has blocks base[p] .. base[p + 1] - 1.
 */
typedef struct {
    uint32_t   *base;
    size_t      total;
} fg_sim_kv_layout_t;


/* what a running request holds */
typedef struct {
    fg_sim_kv_block_t   own;          /* its own full blocks, once ended */
    uint64_t            held;         /* tokens reserved beside its
                                         prefix's blocks */
    uint32_t            blocks;       /* of its prefix, held */
    uint32_t            cached;       /* tokens found cached at admission */
} fg_sim_kv_lease_t;


typedef struct {
    uint64_t                   kv_tokens;
    uint64_t                   free;        /* neither reserved nor cached */
    uint64_t                   reserved;    /* by running requests */
    uint64_t                   cached;      /* in unreferenced blocks */

    const fg_sim_kv_layout_t  *layout;      /* NULL: no prefix cache */
    fg_sim_kv_block_t         *blocks;      /* the prefixes', by layout */
    fg_sim_kv_block_t          lru;         /* next: the least recent */

    /* read-out: tokens of admitted requests' input and of their hits */
    uint64_t                   query_tokens;
    uint64_t                   hit_tokens;
    uint64_t                   evictions;   /* blocks */
} fg_sim_kv_t;


/* the prefixes of tr, for each engine's cache; 0, or -1 out of memory */
int fg_sim_kv_layout_init(fg_sim_kv_layout_t *layout,
    const fg_sim_trace_t *tr);
void fg_sim_kv_layout_free(fg_sim_kv_layout_t *layout);

/* layout NULL: no prefix cache; 0, or -1 when out of memory */
int fg_sim_kv_init(fg_sim_kv_t *kv, uint64_t kv_tokens,
    const fg_sim_kv_layout_t *layout);
void fg_sim_kv_free(fg_sim_kv_t *kv);

/* the tokens of r's input that admitting it now would find cached */
uint32_t fg_sim_kv_match(const fg_sim_kv_t *kv, const fg_sim_req_t *r);

/* whether r fits now, evicting what it may */
int fg_sim_kv_fits(const fg_sim_kv_t *kv, const fg_sim_req_t *r);

/* admits r, which fits: its cached tokens, as fg_sim_kv_match() said */
uint32_t fg_sim_kv_admit(fg_sim_kv_t *kv, const fg_sim_req_t *r,
    fg_sim_kv_lease_t *lease);

/* r ended with output tokens generated; the lease stays in the cache */
void fg_sim_kv_finish(fg_sim_kv_t *kv, const fg_sim_req_t *r,
    uint32_t output, fg_sim_kv_lease_t *lease);

/* r is preempted: its reservation freed, its prefix's blocks cached */
void fg_sim_kv_preempt(fg_sim_kv_t *kv, const fg_sim_req_t *r,
    fg_sim_kv_lease_t *lease);


#endif /* _FG_SIM_KV_H_INCLUDED_ */
