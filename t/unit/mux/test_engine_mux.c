
/*
 * fairgate: several models in one engine (fg_engine_mux.h) on the cpu
 * backend, on a clock the test drives: stories260K (or, without it, a
 * generated model of its shape) and a generated model of another shape
 * (3 layers, 2 KV heads, embedding 48: a token block takes 12 head
 * blocks where stories260K's takes 40).  Checked: spatial, temporal and
 * muxserve each serve both models, and each model's greedy tokens are
 * what it gives served alone; a quota stops a model from holding more
 * than it (never above it, round after round, with more asked than it
 * holds) while the other model's requests are served; the pool is never
 * overdrawn; muxserve's adaptation moves quota to the model that is busy
 * with a queue; ADBS admits one model's new requests a round.  The mux
 * runs keep both models' caches in one arena of head blocks (the
 * unified pool) while alone each has its own, so equal tokens show the
 * mapped cache right; the arena holds exactly the models' held blocks'
 * head blocks, and has them all back at the end.
 */


#include <pthread.h>
#include <string.h>
#include <time.h>

#include "fg_tap.h"
#include "fg_test_backend.h"
#include "fg_test_batch.h"
#include "fg_test_file.h"
#include "fg_test_model.h"
#include "fg_test_gguf.h"
#include "fg_engine_mux.h"
#include "fg_gguf_gen.h"


#define N_MODELS    2
#define MAX_REQ     8
#define MAX_OUT     32
#define N_OUT       20
#define MAX_ROUNDS  4000


typedef struct {
    int32_t     tokens[MAX_OUT];
    uint32_t    n;
    uint32_t    finish;
} out_t;


/* one model's parts and what its requests gave */
typedef struct {
    const char         *path;
    fg_backend_t       *backend;
    fg_kv_t            *kv;
    fg_batch_t         *batch;
    out_t               out[MAX_REQ];
} model_t;


static double          now_s;
static fg_kv_arena_t  *arena;      /* the unified pool of a mux run */
static int             prefix;     /* the batchers' prefix cache on */

/*
 * The gate around the cpu backend's forward: shut, a step waits (at most
 * GATE_MS) for another model's step to come in too, and the gate opens
 * for good once one has.  Lanes that run side by side meet there; lanes
 * that take turns never do.  With gate_decodes only decode steps (every
 * sequence's one token) take part, so two decode lanes meet there.  The
 * most decode steps in flight at once are counted either way, from the
 * step's entry: counted after the gate, the first of two that met could
 * finish its forward before a loaded machine woke the second, and two
 * decode lanes that ran at once would read as one.
 */
#define GATE_MS  500

static fg_backend_ops_t  gated;
static pthread_mutex_t   gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t    gate_cv = PTHREAD_COND_INITIALIZER;
static int               gate_shut, gate_decodes, gate_in, gate_met;
static int               decodes_now, decodes_most;


static int
decode_step(const fg_backend_batch_t *batch)
{
    uint32_t  s;

    for (s = 0; s < batch->n_seqs; s++) {
        if (batch->seqs[s].n_tokens != 1 || batch->seqs[s].first) {
            return 0;
        }
    }

    return batch->n_seqs > 0;
}


static int
gated_forward(fg_backend_t *b, const fg_backend_batch_t *batch,
    float *logits, char *err, size_t errlen)
{
    int              rc, dec;
    struct timespec  ts;

    dec = decode_step(batch);

    pthread_mutex_lock(&gate_mu);

    /* in flight from here: two steps that meet at the gate are both in */
    decodes_now += dec;
    decodes_most = decodes_now > decodes_most ? decodes_now : decodes_most;

    if (gate_shut && (dec || !gate_decodes)) {
        if (++gate_in > 1) {
            gate_met = 1;
            gate_shut = 0;
            pthread_cond_broadcast(&gate_cv);
        }

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += GATE_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;

        while (gate_shut
               && pthread_cond_timedwait(&gate_cv, &gate_mu, &ts) == 0)
        {
            /* the other step came in, or a spurious wake */
        }

        gate_in--;
    }

    pthread_mutex_unlock(&gate_mu);

    rc = fg_backend_cpu.forward(b, batch, logits, err, errlen);

    pthread_mutex_lock(&gate_mu);
    decodes_now -= dec;
    pthread_mutex_unlock(&gate_mu);

    return rc;
}


static double
clock_fn(void *ctx)
{
    (void) ctx;

    return now_s;
}


static void
emit(void *ctx, const fg_batch_event_t *ev)
{
    out_t    *o;
    model_t  *m;

    m = ctx;

    if (ev->id >= MAX_REQ) {
        return;
    }

    o = &m->out[ev->id];

    if (ev->token >= 0 && o->n < MAX_OUT) {
        o->tokens[o->n++] = ev->token;
    }

    o->finish = ev->finish;
}


/* a model's parts: its cache in the arena's head blocks, or its own */
static int
model_open(model_t *m, uint32_t blocks, uint32_t unit)
{
    char               err[512];
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;

    memset(m->out, 0, sizeof(m->out));
    m->kv = fg_kv_create(blocks, FG_KV_BLOCK_SIZE, err, sizeof(err));

    if (m->kv && arena && fg_kv_set_arena(m->kv, arena, unit) != 0) {
        ok(0, "%s: its map of the arena", m->path);
        return -1;
    }

    fg_test_backend_conf(&conf, m->path, blocks, FG_KV_BLOCK_SIZE, 8, 128, 1);

    if (arena) {
        fg_kv_arena_conf(arena, fg_kv_map(m->kv), &conf);
    }

    m->backend = gated.create(&conf, err, sizeof(err));

    fg_test_batch_conf(&bc, 8, 128, 64, emit, m);
    bc.clock = clock_fn;
    bc.prefix_cache = prefix;

    m->batch = (m->backend && m->kv)
               ? fg_batch_create(&bc, &gated, m->backend, m->kv, err,
                                 sizeof(err))
               : NULL;

    if (m->batch == NULL) {
        ok(0, "%s: %s", m->path, err);
        return -1;
    }

    return 0;
}


static void
model_close(model_t *m)
{
    if (m->batch) {
        fg_batch_destroy(m->batch);
    }

    fg_kv_destroy(m->kv);

    if (m->backend) {
        fg_backend_cpu.destroy(m->backend);
    }

    m->batch = NULL;
    m->kv = NULL;
    m->backend = NULL;
}


/* request r of model k: a prompt of n of its own, N_OUT tokens, greedy */
static void
submit_n(model_t *m, uint32_t k, uint32_t r, uint32_t n)
{
    char            err[256];
    int32_t         prompt[256];
    uint32_t        i;
    fg_batch_req_t  req;

    for (i = 0; i < n; i++) {
        prompt[i] = (int32_t) (1 + (37 * (i + 1) + 11 * r + 101 * k) % 500);
    }

    fg_test_batch_req(&req, r, prompt, n, N_OUT, 1);
    req.sampling.temperature = 0.0f;

    ok(fg_batch_submit(m->batch, &req, err, sizeof(err)) == FG_BATCH_OK,
       "model %u request %u submitted", k, r);
}


static void
submit(model_t *m, uint32_t k, uint32_t r)
{
    submit_n(m, k, r, 12);
}


/* what each model gives alone: its own batcher, the whole pool */
static void
alone(model_t *m, uint32_t k, uint32_t n_req, out_t *ref)
{
    char      err[256];
    uint32_t  r, steps;

    if (model_open(m, 256, 0) != 0) {
        return;
    }

    for (r = 0; r < n_req; r++) {
        submit(m, k, r);
    }

    for (steps = 0; fg_batch_held(m->batch) && steps < MAX_ROUNDS; steps++) {
        fg_batch_step(m->batch, err, sizeof(err));
    }

    memcpy(ref, m->out, sizeof(m->out));
    model_close(m);
}


static uint32_t  units[N_MODELS] = { 40, 12 };


static int
mux_open(fg_engine_mux_t *em, model_t *m, fg_mux_mode_e mode, uint64_t pool,
    const double *rates, int threads, uint32_t decode_lanes)
{
    char         err[256];
    uint32_t     k;
    const char  *e;

    memset(em, 0, sizeof(fg_engine_mux_t));
    em->threads = threads;
    em->decode_lanes = decode_lanes;
    em->mx.mode = mode;
    em->mx.pool = pool;
    em->mx.n = N_MODELS;

    /* head blocks of the larger head size, the generated model's 12, in
     * the engine's default KV type, halves */
    arena = fg_kv_arena_create((uint32_t) pool,
                               FG_KV_BLOCK_SIZE * 12 * sizeof(uint16_t), err,
                               sizeof(err));

    if (arena == NULL) {
        ok(0, "arena: %s", err);
        return -1;
    }

    for (k = 0; k < N_MODELS; k++) {
        if (model_open(&m[k], (uint32_t) (pool / units[k]), units[k])
            != 0)
        {
            return -1;
        }

        em->mx.m[k].unit = units[k];
        em->mx.m[k].rate = rates[k];
        em->batch[k] = m[k].batch;
        em->kv[k] = m[k].kv;
    }

    em->arena = arena;
    now_s = 0.0;
    e = fg_engine_mux_init(em, now_s);
    ok(e == NULL, "mux init: %s", e ? e : "ok");

    return e ? -1 : 0;
}


/* the lanes stopped, the models closed: the arena has all back */
static void
mux_close(fg_engine_mux_t *em, model_t *m, const char *name)
{
    uint32_t  k;

    fg_engine_mux_stop(em);

    for (k = 0; k < N_MODELS; k++) {
        model_close(&m[k]);
    }

    ok(fg_kv_arena_free(arena) == fg_kv_arena_size(arena),
       "%s: the arena has all its head blocks back", name);
    fg_kv_arena_destroy(arena);
    arena = NULL;
}


/*
 * rounds until every model is done; checks the pool and the limits
 * whenever no lane holds a model (with threads, between a round and the
 * next hand-back the lanes' models are theirs alone)
 */
static uint32_t
run(fg_engine_mux_t *em, model_t *m, uint64_t *held_over, uint64_t *pool_over)
{
    uint8_t   held[FG_MUX_MAX_MODELS];
    uint32_t  rounds, k, n;
    uint64_t  used;

    n = 1;

    for (rounds = 0; rounds < MAX_ROUNDS; rounds++) {
        if (n == 0 && !fg_batch_held(m[0].batch)
            && !fg_batch_held(m[1].batch))
        {
            break;
        }

        n = fg_engine_mux_round(em, now_s);
        fg_engine_mux_wait(em, 1000);
        now_s += 0.05;

        if (fg_engine_mux_held(em, held) != 0) {
            continue;
        }

        used = 0;

        for (k = 0; k < N_MODELS; k++) {
            used += (uint64_t) fg_kv_held_blocks(m[k].kv) * units[k];
            *held_over += fg_kv_held_blocks(m[k].kv)
                          > em->mx.m[k].quota / units[k]
                          && em->mx.mode != FG_MUX_MUXSERVE;
        }

        *pool_over += used > em->mx.pool
                      || used != em->mx.pool - fg_kv_arena_free(arena);
    }

    return rounds;
}


static const char *const  mode_names[] = { "spatial", "temporal",
                                           "muxserve" };


/*
 * both models served, each model's tokens those it gives alone; with
 * threads, steps of the two models ran side by side (spatial, muxserve),
 * muxserve's decodes one at a time on one decode lane and side by side
 * on two
 */
static void
test_mode(fg_mux_mode_e mode, int threads, uint32_t decode_lanes,
    model_t *m, out_t ref[N_MODELS][MAX_REQ])
{
    int              side;
    const char      *name;
    char             buf[64];
    double           rates[N_MODELS] = { 1.0, 1.0 };
    uint32_t         k, r, same, done, rounds;
    uint64_t         over, pool_over;
    fg_engine_mux_t  em;

    snprintf(buf, sizeof(buf), "%s%s%s", mode_names[mode],
             threads ? " on threads" : "",
             decode_lanes > 1 ? ", two decode lanes" : "");
    name = buf;

    if (mux_open(&em, m, mode, 40 * 12 + 12 * 12, rates, threads,
                 decode_lanes)
        != 0)
    {
        return;
    }

    for (r = 0; r < 6; r++) {
        submit(&m[0], 0, r);
        submit(&m[1], 1, r);
    }

    side = threads && mode != FG_MUX_TEMPORAL;
    gate_shut = side;
    gate_decodes = decode_lanes > 1;
    gate_met = 0;
    decodes_most = 0;

    over = 0;
    pool_over = 0;
    rounds = run(&em, m, &over, &pool_over);
    fg_engine_mux_stop(&em);
    gate_shut = 0;

    for (k = 0; k < N_MODELS; k++) {
        same = 0;
        done = 0;

        for (r = 0; r < 6; r++) {
            done += m[k].out[r].finish == FG_FINISH_LENGTH;
            same += m[k].out[r].n == N_OUT
                    && memcmp(m[k].out[r].tokens, ref[k][r].tokens,
                              N_OUT * sizeof(int32_t)) == 0;
        }

        is_int(done, 6, "%s: model %u's six requests all served",
               name, k);
        is_int(same, 6, "%s: model %u's tokens are those it gives alone",
               name, k);
    }

    ok(rounds < MAX_ROUNDS && pool_over == 0,
       "%s: done in %u rounds, the pool never overdrawn, the arena "
       "holding the held blocks' head blocks", name, rounds);
    ok(over == 0, "%s: no model ever held more than its quota",
       name);
    ok(em.steps[0] > 0 && em.steps[1] > 0, "%s: both models stepped "
       "(%llu, %llu)", name, (unsigned long long) em.steps[0],
       (unsigned long long) em.steps[1]);

    if (side) {
        ok(gate_met && em.beside > 0, "%s: the two models' steps ran at "
           "once (%llu began beside another's)", name,
           (unsigned long long) em.beside);

    } else {
        is_int(em.beside, 0, "%s: one step at a time", name);
    }

    if (mode == FG_MUX_MUXSERVE && threads) {
        ok(decode_lanes > 1 ? gate_met && decodes_most == 2
                            : decodes_most == 1,
           "%s: at most %d decode step%s in flight at once", name,
           decodes_most, decodes_most > 1 ? "s" : "");
    }

    mux_close(&em, m, name);
}


/* spatial: a quota of 4 token blocks holds model 0 to it, with 12 asked */
static void
test_quota(model_t *m)
{
    double           rates[N_MODELS] = { 1.0, 3.0 };
    uint32_t         r, done[N_MODELS];
    uint64_t         over, pool_over;
    fg_engine_mux_t  em;

    /* spatial splits by size (unit) alone: 40 of 52 of 208 head blocks,
     * 12 of 52, whatever the rates */
    if (mux_open(&em, m, FG_MUX_SPATIAL, 208, rates, 0, 0) != 0) {
        return;
    }

    is_int(em.mx.m[0].quota, 4 * 40, "spatial: model 0's quota is 4 token "
           "blocks (its size's share, 40 head blocks each)");
    is_int(em.mx.m[1].quota, 4 * 12, "model 1's is 4 too (12 each), its "
           "rate three times model 0's notwithstanding");

    for (r = 0; r < 6; r++) {
        submit(&m[0], 0, r);
        submit(&m[1], 1, r);
    }

    over = 0;
    pool_over = 0;
    (void) run(&em, m, &over, &pool_over);

    done[0] = 0;
    done[1] = 0;

    for (r = 0; r < 6; r++) {
        done[0] += m[0].out[r].finish == FG_FINISH_LENGTH;
        done[1] += m[1].out[r].finish == FG_FINISH_LENGTH;
    }

    ok(over == 0 && em.mx.m[0].peak == 4 * 40,
       "model 0 reached its quota and never held more (peak %llu head "
       "blocks)", (unsigned long long) em.mx.m[0].peak);
    ok(done[0] == 6 && done[1] == 6,
       "both models' requests all served (%u, %u)", done[0], done[1]);

    mux_close(&em, m, "quota");
}


/* muxserve: the busy model with a queue takes quota from the idle one */
static void
test_adapt(model_t *m, out_t ref[N_MODELS][MAX_REQ])
{
    double           rates[N_MODELS] = { 1.0, 1.0 };
    uint32_t         r, rounds, same, k;
    uint64_t         most, sum, over;
    fg_engine_mux_t  em;

    em.mx.adapt_s = 0.0;

    if (mux_open(&em, m, FG_MUX_MUXSERVE, 40 * 12 + 12 * 12, rates, 0, 0)
        != 0)
    {
        return;
    }

    em.mx.adapt_s = 0.2;

    for (r = 0; r < MAX_REQ; r++) {
        submit(&m[0], 0, r);
    }

    most = em.mx.m[0].quota;
    over = 0;

    for (rounds = 0; fg_batch_held(m[0].batch) && rounds < MAX_ROUNDS;
         rounds++)
    {
        (void) fg_engine_mux_round(&em, now_s);
        now_s += 0.05;

        most = em.mx.m[0].quota > most ? em.mx.m[0].quota : most;
        sum = 0;

        for (k = 0; k < N_MODELS; k++) {
            sum += em.mx.m[k].quota;
        }

        over += sum > em.mx.pool;
    }

    ok(most > 12 * 40, "muxserve: the busy model's quota grew from 480 to "
       "%llu head blocks", (unsigned long long) most);
    ok(over == 0, "the quotas never sum above the pool");

    same = 0;

    for (r = 0; r < MAX_REQ; r++) {
        same += m[0].out[r].n == N_OUT
                && memcmp(m[0].out[r].tokens, ref[0][r].tokens,
                          N_OUT * sizeof(int32_t)) == 0;
    }

    is_int(same, MAX_REQ, "its tokens are those it gives alone");

    mux_close(&em, m, "adapt");
}


static int
gen(const char *path, uint32_t layers, uint32_t heads, uint32_t kv_heads,
    uint32_t embd)
{
    char                err[512];
    fg_gguf_gen_conf_t  c;

    fg_test_gguf_shape(&c, FG_GGML_F32, embd, layers, 128, heads, kv_heads);
    c.seed = 7;

    if (access(fg_test_stories(), R_OK) == 0) {
        c.tokenizer_from = fg_test_stories();

    } else {
        c.n_vocab = 512;
    }

    if (fg_gguf_gen_file(&c, path, err, sizeof(err)) != 0) {
        ok(0, "generate %s: %s", path, err);
        return -1;
    }

    return 0;
}


/*
 * Model 0's prefix-cache blocks, evictable, fill the arena; model 1's
 * request needs more than is free: a round evicts model 0's (no lane
 * holds it), and model 1 is served
 */
static void
test_reclaim(model_t *m)
{
    double           rates[N_MODELS] = { 1.0, 1.0 };
    uint32_t         r, rounds, cached;
    uint64_t         before;
    fg_engine_mux_t  em;

    prefix = 1;

    if (mux_open(&em, m, FG_MUX_TEMPORAL, 40 * 12 + 12 * 12, rates, 0, 0)
        != 0)
    {
        prefix = 0;
        return;
    }

    for (r = 0; r < 5; r++) {
        submit_n(&m[0], 0, r, 48);
    }

    for (rounds = 0; fg_batch_held(m[0].batch) && rounds < MAX_ROUNDS;
         rounds++)
    {
        (void) fg_engine_mux_round(&em, now_s);
        now_s += 0.05;
    }

    cached = fg_kv_evictable_blocks(m[0].kv);
    ok(fg_kv_arena_free(arena) < 192,
       "model 0's %u cached blocks leave %u head blocks of 624 free", cached,
       fg_kv_arena_free(arena));

    before = fg_kv_evictions(m[0].kv);
    submit_n(&m[1], 1, 0, 236);

    for (rounds = 0; fg_batch_held(m[1].batch) && rounds < MAX_ROUNDS;
         rounds++)
    {
        (void) fg_engine_mux_round(&em, now_s);
        now_s += 0.05;
    }

    ok(m[1].out[0].n == N_OUT && fg_kv_evictions(m[0].kv) > before,
       "model 1's request of 256 positions (192 head blocks) served after "
       "%u rounds, %llu of model 0's cached blocks evicted for it", rounds,
       (unsigned long long) (fg_kv_evictions(m[0].kv) - before));

    mux_close(&em, m, "reclaim");
    prefix = 0;
}


int
main(void)
{
    char     a[256], b[256];
    model_t  m[N_MODELS];
    static out_t  ref[N_MODELS][MAX_REQ];

    fg_test_dir_make("engine_mux");
    memset(m, 0, sizeof(m));
    gated = fg_backend_cpu;
    gated.forward = gated_forward;

    snprintf(a, sizeof(a), "%s/a.gguf", dir);
    snprintf(b, sizeof(b), "%s/b.gguf", dir);

    if (access(fg_test_stories(), R_OK) == 0) {
        snprintf(a, sizeof(a), "%s", fg_test_stories());

    } else if (gen(a, 5, 8, 4, 64) != 0) {
        return fg_tap_done();
    }

    if (gen(b, 3, 4, 2, 48) != 0) {
        return fg_tap_done();
    }

    m[0].path = a;
    m[1].path = b;

    alone(&m[0], 0, MAX_REQ, ref[0]);
    alone(&m[1], 1, MAX_REQ, ref[1]);

    ok(ref[0][0].n == N_OUT && ref[1][0].n == N_OUT
       && memcmp(ref[0][0].tokens, ref[1][0].tokens,
                 N_OUT * sizeof(int32_t)) != 0,
       "alone, each model gives its own tokens");

    test_mode(FG_MUX_SPATIAL, 0, 0, m, ref);
    test_mode(FG_MUX_TEMPORAL, 0, 0, m, ref);
    test_mode(FG_MUX_MUXSERVE, 0, 0, m, ref);
    test_mode(FG_MUX_SPATIAL, 1, 0, m, ref);
    test_mode(FG_MUX_TEMPORAL, 1, 0, m, ref);
    test_mode(FG_MUX_MUXSERVE, 1, 0, m, ref);
    test_mode(FG_MUX_MUXSERVE, 1, 2, m, ref);
    test_quota(m);
    test_adapt(m, ref);
    test_reclaim(m);

    fg_test_dir_remove();

    return fg_tap_done();
}
