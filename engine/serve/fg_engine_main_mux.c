
/*
 * fairgate: fairgate-engine with several models (--model A --shm /fg-a
 * --model B --shm /fg-b ... --mux MODE): each model its tokenizer,
 * backend, fg_kv, segment and batcher, as one model has, all under one
 * fg_engine_mux (fg_engine_mux.h).  The pool is counted in head blocks:
 * --kv-head-blocks, else --kv-blocks of the model whose token block
 * takes the most; each model's fg_kv numbers what the whole pool holds
 * in its token blocks (spatial: its fixed quota), and fg_kv's limit
 * keeps it to its quota.  On the cpu backend the pool is one arena of
 * head blocks (fg_kv_arena.c) the models' caches take from as they
 * grow; the sim backend keeps no cache, and the cuda backend's each
 * model's own (the quotas keep their sum to the pool).  The lanes run
 * on threads (fg_engine_mux.h), but for the cuda backend, which runs
 * the models' steps one after another (no streams yet).
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_engine_int.h"
#include "fg_engine_serve.h"
#include "fg_gguf.h"
#include "fg_llama.h"


typedef struct {
    fg_tokenizer_t      *tok;
    fg_backend_t        *backend;
    fg_kv_t             *kv;
    fg_shm_engine_t     *shm;
    fg_batch_t          *batch;
    fg_backend_info_t    info;
    int32_t              eog[FG_MAIN_MAX_EOG];
} fg_main_model_t;


/*
 * head blocks a token block of the model takes (2 x layers x kv heads)
 * and its head size: 0, or -1 said
 */
static int
fg_main_shape(const char *path, uint32_t *unit, uint32_t *head_dim)
{
    char        err[512];
    uint32_t    layers, heads, kv_heads, embd;
    fg_gguf_t  *g;

    g = fg_gguf_open(path, err, sizeof(err));

    if (g == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        return -1;
    }

    layers = fg_llama_meta_u32(g, "block_count", 0);
    heads = fg_llama_meta_u32(g, "attention.head_count", 0);
    kv_heads = fg_llama_meta_u32(g, "attention.head_count_kv", heads);
    embd = fg_llama_meta_u32(g, "embedding_length", 0);
    *head_dim = fg_llama_meta_u32(g, "attention.key_length",
                                  heads ? embd / heads : 0);
    fg_gguf_close(g);

    if (layers == 0 || kv_heads == 0 || *head_dim == 0) {
        fprintf(stderr, "fairgate-engine: %s: no block_count, head count "
                "or head size\n", path);
        return -1;
    }

    *unit = 2 * layers * kv_heads;

    return 0;
}


static void
fg_main_model_free(fg_main_model_t *m, const fg_backend_ops_t *ops)
{
    if (m->batch) {
        fg_batch_destroy(m->batch);
    }

    if (m->kv) {
        fg_kv_set_index(m->kv, NULL, NULL);
        fg_kv_destroy(m->kv);
    }

    if (m->shm) {
        fg_shm_engine_destroy(m->shm);
    }

    if (m->backend) {
        ops->destroy(m->backend);
    }

    fg_tokenizer_free(m->tok);
    memset(m, 0, sizeof(fg_main_model_t));
}


/*
 * model i's parts: blocks of its own in the arena's head blocks (or, no
 * arena, a cache of its own), its step model (sim) and its share of the
 * device (sim: its steps take 1 / share as long): 0, or -1 said
 */
static int
fg_main_model(fg_main_args_t *a, const fg_backend_ops_t *ops, uint32_t i,
    uint32_t blocks, double share, fg_kv_arena_t *arena, uint32_t unit,
    fg_main_model_t *m)
{
    char                  err[512];
    fg_main_args_t        ma;
    fg_batch_conf_t       bc;
    fg_shm_engine_conf_t  sc;

    ma = *a;
    ma.model = a->models[i];
    ma.shm = a->shms[i];
    ma.kv_blocks = blocks;
    ma.kv_blocks_set = 1;
    ma.step_model = a->step_models[i];
    ma.speedup = a->speedup * share;

    m->kv = fg_kv_create(blocks, FG_KV_BLOCK_SIZE, err, sizeof(err));

    if (m->kv == NULL
        || (arena && fg_kv_set_arena(m->kv, arena, unit) != 0))
    {
        fprintf(stderr, "fairgate-engine: %s: %s\n", ma.model,
                m->kv ? "no memory for its map of the KV arena" : err);
        return -1;
    }

    m->tok = fg_main_tokenizer(ma.model);
    m->backend = m->tok ? fg_main_backend(&ma, ops, m->tok, arena,
                                          fg_kv_map(m->kv), &m->info)
                        : NULL;

    if (m->backend == NULL) {
        return -1;
    }

    fg_main_shm_conf(&ma, ops, m->kv, m->tok, &m->info, &sc);
    sc.name = ma.shm;
    m->shm = fg_shm_engine_create(&sc, err, sizeof(err));

    if (m->shm != NULL) {
        fg_main_batch_conf(&ma, m->tok, m->eog, m->shm, &bc);
        m->batch = fg_batch_create(&bc, ops, m->backend, m->kv, err,
                                   sizeof(err));
    }

    if (m->batch == NULL) {
        fprintf(stderr, "fairgate-engine: %s: %s\n", ma.model, err);
        return -1;
    }

    fg_kv_set_index(m->kv, fg_shm_engine_index, m->shm);

    return 0;
}


static const char *const  fg_main_mux_names[] = {
    "spatial", "temporal", "muxserve"
};


/*
 * the pool, each model's unit and rate, and the largest head size: 0, or
 * -1 said
 */
static int
fg_main_mux_conf(fg_main_args_t *a, fg_engine_mux_t *em, uint32_t *head_dim)
{
    uint32_t  i, most, hd;

    memset(em, 0, sizeof(fg_engine_mux_t));
    em->mx.mode = (fg_mux_mode_e) a->mux;
    em->mx.n = a->n_models;
    most = 0;
    *head_dim = 0;

    for (i = 0; i < a->n_models; i++) {
        if (fg_main_shape(a->models[i], &em->mx.m[i].unit, &hd) != 0) {
            return -1;
        }

        em->mx.m[i].rate = a->rates[i];
        most = em->mx.m[i].unit > most ? em->mx.m[i].unit : most;
        *head_dim = hd > *head_dim ? hd : *head_dim;
    }

    em->mx.pool = a->kv_head_blocks ? a->kv_head_blocks
                                    : (uint64_t) a->kv_blocks * most;

    return 0;
}


/*
 * Each model's arena and share of the device.  The arena: what the pool
 * holds in its token blocks, or under spatial its fixed quota, which it
 * can never pass (so that its batcher refuses a request over it at
 * once, as the simulator does, rather than keep it waiting for good).
 * The share: spatial's slices (the paper's dedicated GPUs) are its
 * quota's share of the pool, as the simulator has them, and the sim
 * backend stretches its steps by it; a cpu or cuda backend's steps take
 * what they take (1).
 */
static void
fg_main_mux_slices(const fg_main_args_t *a, const fg_engine_mux_t *em,
    uint32_t *blocks, double *share)
{
    int       spatial;
    uint32_t  i;
    fg_mux_t  mx;

    mx = em->mx;
    fg_mux_init(&mx, 0.0);
    spatial = mx.mode == FG_MUX_SPATIAL;

    for (i = 0; i < mx.n; i++) {
        blocks[i] = (uint32_t) ((spatial ? mx.m[i].quota : mx.pool)
                                / mx.m[i].unit);
        share[i] = spatial && strcmp(a->backend, "sim") == 0
                   ? (double) mx.m[i].quota / (double) mx.pool : 1.0;
    }
}


/*
 * The cpu backend's unified pool: one arena of the pool's head blocks,
 * each of the largest head size in the engine's KV type.  0 (*arena NULL
 * for the other backends), or -1 said.
 */
static int
fg_main_mux_arena(const fg_main_args_t *a, const fg_backend_ops_t *ops,
    const fg_engine_mux_t *em, uint32_t head_dim, fg_kv_arena_t **arena)
{
    char  err[512];

    *arena = NULL;

    if (strcmp(ops->name, "cpu") != 0) {
        return 0;
    }

    if (em->mx.pool > UINT32_MAX) {
        fprintf(stderr, "fairgate-engine: a pool of %llu head blocks: the "
                "cpu backend's arena holds at most %u\n",
                (unsigned long long) em->mx.pool, UINT32_MAX);
        return -1;
    }

    *arena = fg_kv_arena_create((uint32_t) em->mx.pool,
                                (size_t) FG_KV_BLOCK_SIZE * head_dim
                                * fg_backend_kv_value_size(
                                      (fg_backend_kv_type_e) a->kv_type),
                                err, sizeof(err));

    if (*arena == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        return -1;
    }

    return 0;
}


static void
fg_main_mux_said(const fg_main_args_t *a, const fg_engine_mux_t *em,
    const fg_backend_ops_t *ops, fg_kv_arena_t *arena, const double *share)
{
    uint32_t  i, q, f;

    fprintf(stderr, "fairgate-engine: %u models on the %s backend, mux %s "
            "on %u lane%s%s, a pool of %llu head blocks of %u positions",
            em->mx.n, ops->name, fg_main_mux_names[em->mx.mode],
            em->n_lanes, em->n_lanes > 1 ? "s" : "",
            em->threads ? "" : " in turn", (unsigned long long) em->mx.pool,
            FG_KV_BLOCK_SIZE);

    if (arena) {
        fprintf(stderr, ", one arena of %zu MiB they share",
                (size_t) fg_kv_arena_size(arena)
                * fg_kv_arena_head_bytes(arena) >> 20);
    }

    fprintf(stderr, "\n");

    for (i = 0; i < em->mx.n; i++) {
        fg_engine_mux_quota(em, i, &q, &f);
        fprintf(stderr, "fairgate-engine: serving %s at shm %s: %u head "
                "blocks a token block, rate %g, quota %u token blocks, "
                "share of the device %.3g\n", a->models[i], a->shms[i],
                em->mx.m[i].unit, a->rates[i], q, share[i]);
    }
}


int
fg_main_mux(fg_main_args_t *a, const fg_backend_ops_t *ops,
    volatile sig_atomic_t *stop)
{
    int               rc;
    double            share[FG_MUX_MAX_MODELS];
    uint32_t          i, head_dim, blocks[FG_MUX_MAX_MODELS];
    const char       *e;
    fg_kv_arena_t    *arena;
    fg_engine_mux_t   em;
    fg_shm_engine_t  *shm[FG_MUX_MAX_MODELS];
    fg_main_model_t   m[FG_MUX_MAX_MODELS];

    memset(m, 0, sizeof(m));
    rc = 1;

    if (fg_main_mux_conf(a, &em, &head_dim) != 0
        || fg_main_mux_arena(a, ops, &em, head_dim, &arena) != 0)
    {
        return 1;
    }

    fg_main_mux_slices(a, &em, blocks, share);

    for (i = 0; i < a->n_models; i++) {
        if (fg_main_model(a, ops, i, blocks[i], share[i], arena,
                          em.mx.m[i].unit, &m[i])
            != 0)
        {
            goto done;
        }

        em.batch[i] = m[i].batch;
        em.kv[i] = m[i].kv;
        shm[i] = m[i].shm;
    }

    /* cuda: one stream, its steps in turn (issue 20 has no GPU to test
     * its backends from several threads on) */
    em.threads = strcmp(ops->name, "cuda") != 0;

    /* muxserve's decodes: a GPU's (the sim backend's) share its memory
     * bandwidth, so one after another; a cpu's cores run them at once */
    em.decode_lanes = strcmp(ops->name, "cpu") == 0 ? a->n_models : 1;
    em.arena = arena;
    e = fg_engine_mux_init(&em, 0.0);

    if (e != NULL) {
        fprintf(stderr, "fairgate-engine: --mux: %s\n", e);
        goto done;
    }

    fg_main_mux_said(a, &em, ops, arena, share);
    rc = fg_engine_mux_serve(&em, shm, stop);

    fprintf(stderr, "fairgate-engine: stopped; %u segments removed\n",
            a->n_models);

    if (arena) {
        fprintf(stderr, "fairgate-engine: the models held at most %u of "
                "the arena's %u head blocks at once\n",
                fg_kv_arena_peak(arena), fg_kv_arena_size(arena));
    }

done:

    fg_engine_mux_stop(&em);

    for (i = 0; i < a->n_models; i++) {
        fg_main_model_free(&m[i], ops);
    }

    fg_kv_arena_destroy(arena);

    return rc;
}
