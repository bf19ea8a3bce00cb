
/*
 * fairgate: the prompt's log-probabilities through the batcher
 * (fg_batch_plp.c; OpenAI's echo with logprobs).
 *
 * stories260K on the cpu backend, with an F32 cache: a prompt of 90
 * tokens asking for them (3 alternatives, 2 choices) beside a generating
 * request, 100 tokens a step, so that its prompt runs in chunks cut at
 * FG_BATCH_PLP_CHUNK positions; then the same prompt again, its blocks
 * in the prefix cache.  Each prompt position p of 1 .. 89 must come as
 * one event, in order, before choice 0's first token and never for
 * choice 1, with the log-softmax of the reference forward pass's logits
 * (in double, t/unit/backends/fg_test_ref.h) at p - 1 for the prompt's
 * token at p and for its 3 best, within 1e-4 (float logits and sums
 * against double); the second run's the same.  The sim backend, which
 * gives a sequence's last logits alone, refuses such a request at
 * submission.
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


#define PL_LEN      90
#define PL_TOP      3
#define PL_GEN      100


typedef struct {
    float       lp[2][PL_LEN];
    int32_t     top_id[2][PL_LEN][PL_TOP];
    float       top_lp[2][PL_LEN][PL_TOP];
    uint32_t    next[2];            /* the position expected next */
    uint32_t    tokens[2];          /* choice 0's generated */
    int         bad;                /* an event out of order or shape */
} pl_out_t;


static const int32_t  *pl_prompt;


static void
pl_emit(void *ctx, const fg_batch_event_t *ev)
{
    uint32_t   run, p;
    pl_out_t  *o;

    o = ctx;

    if (ev->id == PL_GEN) {
        o->bad |= ev->prompt_pos != 0;
        return;
    }

    run = ev->id == 2;

    if (ev->prompt_pos == 0) {
        o->tokens[run] += ev->choice == 0;
        return;
    }

    p = ev->prompt_pos;

    if (ev->choice != 0 || o->tokens[run] || p != o->next[run]
        || p >= PL_LEN || ev->lp == NULL || ev->token != pl_prompt[p]
        || ev->lp->n_top != PL_TOP || ev->finish != FG_FINISH_NONE)
    {
        o->bad = 1;
        return;
    }

    o->next[run] = p + 1;
    o->lp[run][p] = ev->lp->logprob;
    memcpy(o->top_id[run][p], ev->lp->top_id, sizeof(o->top_id[0][0]));
    memcpy(o->top_lp[run][p], ev->lp->top_lp, sizeof(o->top_lp[0][0]));
}


/* one run of the prompt, id 1 or 2, beside a generating request */
static int
pl_run(fg_test_rig_t *rig, uint64_t id)
{
    int             rc;
    char            err[256];
    uint32_t        steps;
    fg_batch_req_t  req;

    fg_test_batch_req(&req, PL_GEN, pl_prompt + 7, 20, 12, 1);
    rc = fg_batch_submit(rig->batch, &req, err, sizeof(err));
    ok_rc(rc, err, "run %u: a generating request beside it", (unsigned) id);

    fg_test_batch_req(&req, id, pl_prompt, PL_LEN, 3, 1);
    req.sampling.logprobs = 1;
    req.sampling.top_logprobs = PL_TOP;
    req.prompt_lp = 1;
    req.n = 2;
    rc = fg_batch_submit(rig->batch, &req, err, sizeof(err));
    ok_rc(rc, err, "run %u: the prompt's log-probabilities asked for",
          (unsigned) id);

    for (steps = 0; steps < 1000 && fg_batch_held(rig->batch); steps++) {
        if (fg_batch_step(rig->batch, err, sizeof(err)) < 0) {
            diag("step: %s", err);
            return -1;
        }
    }

    return fg_batch_held(rig->batch) == 0 ? 0 : -1;
}


/* the largest difference of run's values from the reference's */
static double
pl_worst(const ref_t *r, const double *logits, const pl_out_t *o,
    uint32_t run)
{
    double          m, sum, d, worst, want;
    uint32_t        p, v, k;
    const double   *row;

    worst = 0.0;

    for (p = 1; p < PL_LEN; p++) {
        row = logits + (size_t) (p - 1) * r->vocab;
        m = row[0];

        for (v = 1; v < r->vocab; v++) {
            m = row[v] > m ? row[v] : m;
        }

        sum = 0.0;

        for (v = 0; v < r->vocab; v++) {
            sum += exp(row[v] - m);
        }

        want = row[pl_prompt[p]] - m - log(sum);
        d = fabs(o->lp[run][p] - want);
        worst = d > worst ? d : worst;

        for (k = 0; k < PL_TOP; k++) {
            want = row[o->top_id[run][p][k]] - m - log(sum);
            d = fabs(o->top_lp[run][p][k] - want);
            worst = d > worst ? d : worst;

            /* best first: none left out above the last */
            if (k && o->top_lp[run][p][k] > o->top_lp[run][p][k - 1]) {
                worst = INFINITY;
            }
        }
    }

    return worst;
}


static void
test_stories(void)
{
    double             *logits, worst;
    uint32_t            run;
    ref_t               r;
    pl_out_t           *o;
    fg_test_rig_t       rig;
    fg_batch_conf_t     bc;
    fg_backend_conf_t   conf;
    static int32_t      p[PL_LEN];

    if (access(fg_test_stories(), R_OK) != 0) {
        ok(1, "stories260K # SKIP %s is not there", fg_test_stories());
        return;
    }

    if (ref_load(&r, fg_test_stories()) != 0) {
        ok(0, "the reference loads stories260K");
        return;
    }

    o = calloc(1, sizeof(pl_out_t));
    o->next[0] = o->next[1] = 1;
    kv_type = FG_K_F32;
    fg_test_prompt(p, PL_LEN, 5, r.vocab);
    pl_prompt = p;

    fg_test_backend_conf(&conf, fg_test_stories(), 64, 16, 4, 100, 1);
    conf.kv_type = FG_BACKEND_KV_F32;
    fg_test_batch_conf(&bc, 4, 100, 16, pl_emit, o);
    bc.prefix_cache = 1;

    if (fg_test_rig_open(&rig, &fg_backend_cpu, &conf, &bc) != 0) {
        ok(0, "a batcher on the cpu backend");
        free(o);
        ref_free(&r);
        return;
    }

    ok(pl_run(&rig, 1) == 0 && pl_run(&rig, 2) == 0,
       "both runs ended");
    ok(!o->bad, "each position one event, in order, choice 0's alone, "
       "before its first token");

    logits = malloc((size_t) PL_LEN * r.vocab * sizeof(double));
    ref_forward(&r, p, PL_LEN, logits, NULL);

    for (run = 0; run < 2; run++) {
        is_int(o->next[run], PL_LEN, "run %u: positions 1 .. %u reported",
               run + 1, PL_LEN - 1);
        is_int(o->tokens[run], 3, "run %u: then its 3 tokens", run + 1);

        worst = pl_worst(&r, logits, o, run);
        diag("run %u: largest difference %.2e", run + 1, worst);
        ok(worst < 1e-4, "run %u%s: the reference's log-softmax at each "
           "position, the token's and its %u best", run + 1,
           run ? " (its blocks cached)" : "", PL_TOP);
    }

    free(logits);
    fg_test_rig_close(&rig);
    free(o);
    ref_free(&r);
}


static void
test_sim(void)
{
    int                rc;
    char               err[256];
    int32_t            p[40];
    fg_test_rig_t      rig;
    fg_batch_req_t     req;
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;

    fg_test_prompt(p, 40, 9, 1000);
    fg_test_backend_sim(&conf, 64, 16, 4, 64, "linear:0,0", 1.0, 1000);
    fg_test_batch_conf(&bc, 4, 64, 16, NULL, NULL);

    if (fg_test_rig_open(&rig, &fg_backend_sim, &conf, &bc) != 0) {
        ok(0, "a batcher on the sim backend");
        return;
    }

    fg_test_batch_req(&req, 1, p, 40, 4, 1);
    req.sampling.logprobs = 1;
    req.prompt_lp = 1;
    rc = fg_batch_submit(rig.batch, &req, err, sizeof(err));
    is_int(rc, FG_BATCH_EINVAL, "sim: the prompt's log-probabilities "
           "refused: %s", err);
    ok(strstr(err, "no logits of a prompt") != NULL, "the reason says so");

    req.prompt_lp = 0;
    rc = fg_batch_submit(rig.batch, &req, err, sizeof(err));
    ok_rc(rc, err, "sim: the same request without them taken");

    fg_test_rig_close(&rig);
}


int
main(void)
{
    test_stories();
    test_sim();

    return done_testing();
}
