
/*
 * fairgate: embeddings through the batcher (fg_batch_embed.c).
 *
 * stories260K on the cpu backend: prompts of 1 to 90 tokens run as
 * embeddings beside a generating request, in chunks of a small step
 * budget, with the prefix cache on and one prompt given twice (the second
 * must compute every position again, not adopt the first's blocks).  Each
 * vector is checked against the reference forward pass in double
 * (t/unit/backends/fg_test_ref.h): its final hidden states after the
 * output norm, mean-pooled over the prompt's positions, L2-normalised.
 * Bound: 1e-5 on each component of a unit vector with a cache of floats
 * (float sums against double measure about 1e-6, printed beside it).
 * With the engine's default F16 cache, against the reference rounding
 * its keys and values to halves too, 5e-5 (8e-6 measured): where a key
 * lies near a half's boundary, float and double round it to neighbouring
 * halves; the prompt given twice, 5e-5 apart at most for the same reason
 * (1e-7 measured).
 *
 * The sim backend: deterministic vectors, the same in one chunk and in
 * many; a backend whose info says n_embd 0 refuses an embedding at
 * submission, and takes generating requests all the same; an embedding
 * of more than one choice is refused.
 */


#include <math.h>
#include <string.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_backend.h"
#include "fg_test_batch.h"
#include "fg_test_model.h"
#include "batch/fg_test_rig.h"
#include "backends/fg_test_ref.h"


#define N_EMB       5
#define MAX_EMBD    1024
#define GEN_ID      100


typedef struct {
    float       vec[N_EMB][MAX_EMBD];
    uint32_t    n_embd[N_EMB];
    uint32_t    n_prompt[N_EMB];
    uint32_t    events[N_EMB];
    int         bad;                /* an embedding's event out of shape */
    uint32_t    gen_tokens;
    uint32_t    gen_finish;
} em_out_t;


static void
em_emit(void *ctx, const fg_batch_event_t *ev)
{
    em_out_t  *o;

    o = ctx;

    if (ev->id == GEN_ID) {
        o->gen_tokens++;
        o->gen_finish = ev->finish;
        o->bad |= ev->embedding != NULL;
        return;
    }

    if (ev->id >= N_EMB || ev->embedding == NULL || ev->n_embd > MAX_EMBD
        || ev->finish != FG_FINISH_STOP || ev->token != -1
        || ev->n_generated != 0)
    {
        o->bad = 1;
        return;
    }

    o->events[ev->id]++;
    o->n_embd[ev->id] = ev->n_embd;
    o->n_prompt[ev->id] = ev->n_prompt;
    memcpy(o->vec[ev->id], ev->embedding, ev->n_embd * sizeof(float));
}


static const uint32_t  em_lens[N_EMB] = { 1, 5, 37, 90, 37 };


/* the prompts: the last one is the third again */
static void
em_prompts(int32_t p[N_EMB][128], uint32_t vocab)
{
    uint32_t  i;

    for (i = 0; i < N_EMB; i++) {
        fg_test_prompt(p[i], em_lens[i], i == N_EMB - 1 ? 2 : i, vocab);
    }
}


/* submits the embeddings and one generating request, steps to the end */
static int
em_run(fg_test_rig_t *rig, int32_t p[N_EMB][128])
{
    int             rc;
    char            err[256];
    uint32_t        i, steps;
    fg_batch_req_t  req;

    for (i = 0; i < N_EMB; i++) {
        fg_test_batch_req(&req, i, p[i], em_lens[i], 0, 0);
        req.embed = 1;

        if (i == 2) {
            fg_test_batch_req(&req, GEN_ID, p[3], 20, 12, 1);
            rc = fg_batch_submit(rig->batch, &req, err, sizeof(err));
            ok_rc(rc, err, "a generating request among them");

            fg_test_batch_req(&req, i, p[i], em_lens[i], 0, 0);
            req.embed = 1;
        }

        rc = fg_batch_submit(rig->batch, &req, err, sizeof(err));
        ok_rc(rc, err, "embedding %u of %u tokens submitted", i, em_lens[i]);
    }

    for (steps = 0; steps < 1000 && fg_batch_held(rig->batch); steps++) {
        if (fg_batch_step(rig->batch, err, sizeof(err)) < 0) {
            diag("step: %s", err);
            return -1;
        }
    }

    return fg_batch_held(rig->batch) == 0 ? 0 : -1;
}


/* the reference: mean of the normed final states, L2-normalised */
static void
em_reference(const ref_t *r, const int32_t *p, uint32_t len, double *out)
{
    double    *h, *logits, norm;
    uint32_t   t, k;

    h = malloc((size_t) len * r->embd * sizeof(double));
    logits = malloc((size_t) len * r->vocab * sizeof(double));
    ref_forward(r, p, len, logits, h);
    free(logits);

    norm = 0.0;

    for (k = 0; k < r->embd; k++) {
        out[k] = 0.0;

        for (t = 0; t < len; t++) {
            out[k] += h[(size_t) t * r->embd + k] / len;
        }

        norm += out[k] * out[k];
    }

    for (k = 0; k < r->embd; k++) {
        out[k] /= sqrt(norm);
    }

    free(h);
}


/* stories260K's embeddings with the engine's cache in kv (the reference
 * rounding its keys and values alike) within bound of the reference's;
 * the same prompt twice within twice of each other */
static void
test_stories(fg_backend_kv_type_e kv, double bound, double twice)
{
    char               err[256];
    double             ref[MAX_EMBD], d, worst, norm;
    uint32_t           i, k;
    const char        *name;
    ref_t              r;
    em_out_t          *o;
    fg_test_rig_t      rig;
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;
    static int32_t     p[N_EMB][128];

    if (access(fg_test_stories(), R_OK) != 0) {
        ok(1, "stories260K # SKIP %s is not there", fg_test_stories());
        return;
    }

    if (ref_load(&r, fg_test_stories()) != 0 || r.embd > MAX_EMBD) {
        ok(0, "the reference loads stories260K");
        return;
    }

    o = calloc(1, sizeof(em_out_t));
    name = (kv == FG_BACKEND_KV_F16) ? "F16 cache" : "F32 cache";
    kv_type = (kv == FG_BACKEND_KV_F16) ? FG_K_F16 : FG_K_F32;

    /* 24 tokens a step: the longer prompts run in chunks */
    fg_test_backend_conf(&conf, fg_test_stories(), 64, 16, 4, 24, 1);
    conf.kv_type = kv;
    fg_test_batch_conf(&bc, 4, 24, 16, em_emit, o);
    bc.prefix_cache = 1;

    if (fg_test_rig_open(&rig, &fg_backend_cpu, &conf, &bc) != 0) {
        ok(0, "a batcher on the cpu backend");
        free(o);
        ref_free(&r);
        return;
    }

    is_int(fg_batch_info(rig.batch)->n_embd, r.embd,
           "the backend says the model's width");

    em_prompts(p, r.vocab);
    ok(em_run(&rig, p) == 0, "every request ran to its end");
    ok(!o->bad, "each embedding ended in one event of its shape");
    is_int(o->gen_tokens, 12, "the generating request beside them got its "
           "12 tokens");

    for (i = 0; i < N_EMB; i++) {
        em_reference(&r, p[i], em_lens[i], ref);

        worst = 0.0;
        norm = 0.0;

        for (k = 0; k < r.embd; k++) {
            d = fabs(o->vec[i][k] - ref[k]);
            worst = d > worst ? d : worst;
            norm += (double) o->vec[i][k] * o->vec[i][k];
        }

        is_int(o->events[i], 1, "embedding %u: one event", i);
        is_int(o->n_prompt[i], em_lens[i], "embedding %u: its prompt "
               "counted", i);
        diag("%s, embedding %u (%u tokens): largest difference %.2e",
             name, i, em_lens[i], worst);
        ok(worst < bound, "%s: embedding %u of %u tokens is the "
           "reference's mean-pooled, normalised final state", name, i,
           em_lens[i]);
        is_num(norm, 1.0, 1e-5, "embedding %u has unit length", i);
    }

    /* the same prompt again: every position computed again, alike */
    worst = 0.0;

    for (k = 0; k < r.embd; k++) {
        d = fabs(o->vec[2][k] - o->vec[N_EMB - 1][k]);
        worst = d > worst ? d : worst;
    }

    ok(worst < twice, "%s: a prompt given twice, the prefix cache on: "
       "the same vector (%.1e)", name, worst);

    fg_test_rig_close(&rig);
    free(o);
    ref_free(&r);
    (void) err;
}


/* the sim backend's info, with n_embd 0: a backend without embeddings */
static void
em_no_info(fg_backend_t *b, fg_backend_info_t *info)
{
    fg_backend_sim.info(b, info);
    info->n_embd = 0;
}


/* one embedding of the prompt on the sim backend, max_tokens a step */
static int
em_sim_one(const int32_t *prompt, uint32_t n, uint32_t max_tokens,
    float *vec, uint32_t *n_embd)
{
    char               err[256];
    uint32_t           steps;
    em_out_t          *o;
    fg_test_rig_t      rig;
    fg_batch_req_t     req;
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;

    o = calloc(1, sizeof(em_out_t));
    fg_test_backend_sim(&conf, 64, 16, 4, max_tokens, "linear:0,0", 1.0,
                        1000);
    fg_test_batch_conf(&bc, 4, max_tokens, 16, em_emit, o);

    if (fg_test_rig_open(&rig, &fg_backend_sim, &conf, &bc) != 0) {
        free(o);
        return -1;
    }

    fg_test_batch_req(&req, 1, prompt, n, 0, 0);
    req.embed = 1;

    if (fg_batch_submit(rig.batch, &req, err, sizeof(err)) != FG_BATCH_OK) {
        diag("%s", err);
    }

    for (steps = 0; steps < 100 && fg_batch_held(rig.batch); steps++) {
        (void) fg_batch_step(rig.batch, err, sizeof(err));
    }

    *n_embd = o->n_embd[1];
    memcpy(vec, o->vec[1], *n_embd * sizeof(float));

    fg_test_rig_close(&rig);
    free(o);

    return 0;
}


static void
test_sim(void)
{
    int                rc;
    char               err[256];
    float              a[MAX_EMBD], b[MAX_EMBD];
    double             d, norm;
    int32_t            p[40];
    uint32_t           k, na, nb;
    fg_test_rig_t      rig;
    fg_batch_req_t     req;
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;
    fg_backend_ops_t   ops;

    fg_test_prompt(p, 40, 9, 1000);

    na = nb = 0;
    ok(em_sim_one(p, 40, 64, a, &na) == 0 && em_sim_one(p, 40, 7, b, &nb) == 0,
       "sim: one embedding in one chunk, one in chunks of 7");
    ok(na > 0 && na == nb, "sim: a vector of %u values", na);

    d = 0.0;
    norm = 0.0;

    for (k = 0; k < na && k < MAX_EMBD; k++) {
        d = fabs(a[k] - b[k]) > d ? fabs(a[k] - b[k]) : d;
        norm += (double) a[k] * a[k];
    }

    ok(d < 1e-6, "sim: the same vector whatever the chunks (%.1e)", d);
    is_num(norm, 1.0, 1e-5, "sim: unit length");

    /* a backend that computes none: refused at submission */
    ops = fg_backend_sim;
    ops.info = em_no_info;

    fg_test_backend_sim(&conf, 64, 16, 4, 64, "linear:0,0", 1.0, 1000);
    fg_test_batch_conf(&bc, 4, 64, 16, NULL, NULL);

    if (fg_test_rig_open(&rig, &ops, &conf, &bc) != 0) {
        ok(0, "a batcher on a backend without embeddings");
        return;
    }

    fg_test_batch_req(&req, 1, p, 40, 0, 0);
    req.embed = 1;
    rc = fg_batch_submit(rig.batch, &req, err, sizeof(err));
    is_int(rc, FG_BATCH_EINVAL, "no embeddings from a backend without "
           "them: %s", err);
    ok(strstr(err, "computes no embeddings") != NULL, "the reason says so");

    fg_test_batch_req(&req, 2, p, 40, 4, 1);
    rc = fg_batch_submit(rig.batch, &req, err, sizeof(err));
    ok_rc(rc, err, "a generating request is taken all the same");

    fg_test_rig_close(&rig);
}


/* an embedding has one choice: n 2 refused, n 1 taken */
static void
test_choices(void)
{
    int                rc;
    char               err[256];
    int32_t            p[8];
    fg_test_rig_t      rig;
    fg_batch_req_t     req;
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;

    fg_test_prompt(p, 8, 3, 1000);
    fg_test_backend_sim(&conf, 64, 16, 4, 64, "linear:0,0", 1.0, 1000);
    fg_test_batch_conf(&bc, 4, 64, 16, NULL, NULL);

    if (fg_test_rig_open(&rig, &fg_backend_sim, &conf, &bc) != 0) {
        ok(0, "a batcher on the sim backend");
        return;
    }

    fg_test_batch_req(&req, 1, p, 8, 0, 0);
    req.embed = 1;
    req.n = 2;
    rc = fg_batch_submit(rig.batch, &req, err, sizeof(err));
    is_int(rc, FG_BATCH_EINVAL, "an embedding of 2 choices refused: %s",
           err);

    req.n = 1;
    rc = fg_batch_submit(rig.batch, &req, err, sizeof(err));
    ok_rc(rc, err, "an embedding of 1 choice taken");

    fg_test_rig_close(&rig);
}


int
main(void)
{
    test_stories(FG_BACKEND_KV_F32, 1e-5, 1e-6);
    test_stories(FG_BACKEND_KV_F16, 5e-5, 5e-5);
    test_sim();
    test_choices();

    return done_testing();
}
