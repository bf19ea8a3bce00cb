
/*
 * fairgate: the batcher's sampling with the logits' adjustments and
 * log-probabilities, over the sim backend: a request with logit_bias,
 * the three penalties, min_p, top_k, a temperature and a seed samples the
 * same tokens, and reports the same log-probabilities, alone, in a batch
 * of others and after preemptions; a greedy one's log-probability is its
 * best alternative's; a bias of +100 makes a token the only choice, one
 * of -100 bans it; a request that asked for none gets none; a bias on an
 * id outside the vocabulary is refused.
 */


#include <string.h>

#include "fg_tap.h"
#include "fg_test_backend.h"
#include "fg_test_batch.h"
#include "fg_test_rig.h"
#include "fg_batch.h"


#define VOCAB       1000
#define MAX_REQ     8
#define MAX_OUT     64


typedef struct {
    int32_t         tokens[MAX_OUT];
    fg_sample_lp_t  lp[MAX_OUT];
    uint32_t        n;
    uint32_t        n_lp;
    uint32_t        finish;
} out_t;


static out_t  outs[MAX_REQ];

static const fg_sample_bias_t  bias[2] = { { 7, 3.0f }, { 8, -100.0f } };


static void
emit(void *ctx, const fg_batch_event_t *ev)
{
    out_t  *o;

    (void) ctx;

    o = &outs[ev->id % MAX_REQ];

    if (ev->token >= 0 && o->n < MAX_OUT) {
        if (ev->lp) {
            o->lp[o->n] = *ev->lp;
            o->n_lp++;
        }

        o->tokens[o->n++] = ev->token;
    }

    o->finish = ev->finish;
}


static int
rig_open(fg_test_rig_t *rig, uint32_t kv_blocks, uint32_t block_size)
{
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;

    memset(outs, 0, sizeof(outs));

    fg_test_backend_sim(&conf, kv_blocks, block_size, 8, 64,
                        "linear:0.0002,0.0005", 1e9, VOCAB);
    fg_test_batch_conf(&bc, 8, 64, 64, emit, NULL);

    return fg_test_rig_open(rig, &fg_backend_sim, &conf, &bc);
}


/* request i: every adjustment, sampled, with 4 alternatives */
static void
params_full(fg_sample_params_t *p, uint32_t i)
{
    fg_sample_params_init(p);
    p->temperature = 0.8f;
    p->seed = 11 + i;
    p->top_k = 50;
    p->min_p = 0.02f;
    p->frequency = 0.6f;
    p->presence = 0.3f;
    p->repetition = 1.2f;
    p->bias = bias;
    p->n_bias = 2;
    p->logprobs = 1;
    p->top_logprobs = 4;
}


static int
submit(fg_test_rig_t *rig, uint64_t id, uint32_t n_prompt,
    uint32_t max_tokens, const fg_sample_params_t *p)
{
    char            err[256];
    int32_t         prompt[256];
    fg_batch_req_t  req;

    fg_test_prompt(prompt, n_prompt, (uint32_t) id + 100, VOCAB);
    fg_test_batch_req(&req, id, prompt, n_prompt, max_tokens, 1);
    req.sampling = *p;

    return fg_batch_submit(rig->batch, &req, err, sizeof(err));
}


static void
run_all(fg_test_rig_t *rig)
{
    int   i;
    char  err[256];

    for (i = 0; i < 4096 && fg_batch_step(rig->batch, err, sizeof(err)) > 0;
         i++)
    {
        /* void */
    }
}


static int
same_out(const out_t *a, const out_t *b)
{
    return a->n == b->n && a->n_lp == b->n_lp
           && memcmp(a->tokens, b->tokens, a->n * sizeof(int32_t)) == 0
           && memcmp(a->lp, b->lp, a->n_lp * sizeof(fg_sample_lp_t)) == 0;
}


static void
test_invariance(void)
{
    int                 i, all_same, banned, shapes;
    uint32_t            k;
    out_t               alone[MAX_REQ];
    fg_test_rig_t       rig;
    fg_batch_stats_t    st;
    fg_sample_params_t  p;

    /* blocks of 4; each takes 10 + 14 - 1 positions, 6 blocks */
    for (i = 0; i < MAX_REQ; i++) {
        rig_open(&rig, 64, 4);
        params_full(&p, (uint32_t) i);
        submit(&rig, (uint64_t) i, 10, 14, &p);
        run_all(&rig);
        alone[i] = outs[i];
        fg_test_rig_close(&rig);
    }

    banned = 0;
    shapes = 1;

    for (i = 0; i < MAX_REQ; i++) {
        for (k = 0; k < alone[i].n; k++) {
            banned += alone[i].tokens[k] == 8;
            shapes &= alone[i].lp[k].n_top == 4
                      && alone[i].lp[k].top_lp[0] >= alone[i].lp[k].top_lp[3]
                      && alone[i].lp[k].logprob <= 0.0f;
        }
    }

    ok(alone[0].n == 14 && alone[0].n_lp == 14,
       "a token and its log-probabilities per event");
    ok(shapes, "4 alternatives each, best first, log-probabilities <= 0");
    is_int(banned, 0, "the token biased by -100 never sampled");

    /* all eight in a pool for two: preemptions, recomputes */
    rig_open(&rig, 12, 4);

    for (i = 0; i < MAX_REQ; i++) {
        params_full(&p, (uint32_t) i);
        submit(&rig, (uint64_t) i, 10, 14, &p);
    }

    run_all(&rig);
    fg_batch_stats(rig.batch, &st);

    all_same = 1;

    for (i = 0; i < MAX_REQ; i++) {
        all_same &= same_out(&outs[i], &alone[i]);
    }

    ok(st.preemptions > 0, "preempted %llu times",
       (unsigned long long) st.preemptions);
    ok(all_same, "each the same tokens and log-probabilities as alone");

    fg_test_rig_close(&rig);
}


static void
test_greedy_bias(void)
{
    int                 all7, best;
    char                err[256];
    int32_t             prompt[8];
    uint32_t            k;
    fg_test_rig_t       rig;
    fg_batch_req_t      req;
    fg_sample_params_t  p;
    fg_sample_bias_t    bad = { VOCAB, 1.0f };
    fg_sample_bias_t    up = { 7, 100.0f };

    /* greedy, logprobs, no adjustment; a second without logprobs */
    rig_open(&rig, 64, 4);
    fg_sample_params_init(&p);
    p.logprobs = 1;
    p.top_logprobs = 2;
    submit(&rig, 0, 10, 12, &p);
    fg_sample_params_init(&p);
    submit(&rig, 1, 10, 12, &p);
    run_all(&rig);

    best = 1;

    for (k = 0; k < outs[0].n; k++) {
        best &= outs[0].lp[k].top_id[0] == outs[0].tokens[k]
                && outs[0].lp[k].logprob == outs[0].lp[k].top_lp[0];
    }

    ok(outs[0].n == 12 && best, "greedy: the token is the best "
       "alternative, its log-probability the same");
    ok(outs[1].n == 12 && outs[1].n_lp == 0,
       "none asked for, none reported");

    fg_test_rig_close(&rig);

    rig_open(&rig, 64, 4);
    fg_sample_params_init(&p);
    p.bias = &up;
    p.n_bias = 1;
    submit(&rig, 2, 10, 12, &p);
    run_all(&rig);

    all7 = outs[2].n == 12;

    for (k = 0; k < outs[2].n; k++) {
        all7 &= outs[2].tokens[k] == 7;
    }

    ok(all7, "greedy with +100 on token 7: 7 every time");

    fg_test_prompt(prompt, 8, 1, VOCAB);
    fg_test_batch_req(&req, 3, prompt, 8, 4, 0);
    req.sampling.bias = &bad;
    req.sampling.n_bias = 1;

    ok(fg_batch_submit(rig.batch, &req, err, sizeof(err)) == FG_BATCH_EINVAL
       && strstr(err, "1000") != NULL,
       "a bias on an id outside the vocabulary refused: %s", err);

    fg_test_rig_close(&rig);
}


int
main(void)
{
    test_invariance();
    test_greedy_bias();

    return done_testing();
}
