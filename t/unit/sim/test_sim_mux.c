
/*
 * fairgate: several models on one simulated GPU (engine/tools/sim/fg_sim_mux.c,
 * fg_sim_models.c, gen's multi-model suite): the models file and its
 * errors, each request's model, gen's power law, and small timelines
 * worked by hand for each way to share the GPU.
 *
 * The timelines' models are linear (no per-step cost): a has 1 layer and
 * 1 KV head (a token block takes 2 head blocks), prefill 0.01 s a token,
 * decode 0.1 s a request and step; b has 2 layers (4 head blocks),
 * 0.02 s and 0.2 s.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_test_file.h"
#include "fg_test_sim.h"
#include "fg_sim_gen.h"
#include "fg_sim_models.h"


static const char  two_models[] =
    "[{\"name\": \"a\", \"layers\": 1, \"kv_heads\": 1, \"head_dim\": 64,"
    "  \"engine\": \"linear:0.01,0.1\"},"
    " {\"name\": \"b\", \"layers\": 2, \"kv_heads\": 1, \"head_dim\": 64,"
    "  \"engine\": \"linear:0.02,0.2\"}]";


static void
models_fail(const char *text, const char *want, const char *what)
{
    int               rc;
    char              err[512];
    fg_sim_models_t   ms;

    err[0] = '\0';
    rc = fg_sim_models_read(&ms, file("bad.json", text), err, sizeof(err));

    ok(rc != 0 && strstr(err, "bad.json: ") != NULL
       && strstr(err, want) != NULL,
       "%s: refused saying \"%s\"", what, want);

    if (rc == 0) {
        fg_sim_models_free(&ms);

    } else if (strstr(err, want) == NULL) {
        diag("got: %s", err);
    }
}


static void
test_models_file(void)
{
    int               rc;
    char              err[512];
    fg_sim_models_t   ms;

    rc = fg_sim_models_read(&ms, file("two.json", two_models), err,
                            sizeof(err));
    ok(rc == 0 && ms.n == 2 && strcmp(ms.m[1].name, "b") == 0
       && ms.m[0].unit == 2 && ms.m[1].unit == 4 && ms.m[1].head_dim == 64
       && fg_sim_models_max_unit(&ms) == 4,
       "a models file read: names, shapes, units of 2 x layers x kv_heads");
    if (rc != 0) {
        diag("%s", err);
        return;
    }

    fg_sim_models_free(&ms);

    rc = fg_sim_models_read(&ms, "engine/tools/sim/models-4.json", err,
                            sizeof(err));
    ok(rc == 0 && ms.n == 4, "engine/tools/sim/models-4.json reads");
    if (rc == 0) {
        fg_sim_models_free(&ms);
    }

    models_fail("{\"name\": \"a\"}", "an array of 1 to 8 models",
                "an object");
    models_fail("[]", "an array of 1 to 8 models", "no model");
    models_fail("[1, 2, 3, 4, 5, 6, 7, 8, 9]", "an array of 1 to 8 models",
                "nine models");
    models_fail("[{\"name\": \"a\", \"layers\": 1, \"kv_heads\": 1, "
                "\"head_dim\": 64}]", "\"name\" and \"engine\"",
                "no engine");
    models_fail("[{\"name\": \"a\", \"layers\": 0, \"kv_heads\": 1, "
                "\"head_dim\": 64, \"engine\": \"linear:1,1\"}]",
                "model 0: \"layers\" must be an integer", "no layers");
    models_fail("[{\"name\": \"a\", \"layers\": 1, \"kv_heads\": 1.5, "
                "\"head_dim\": 64, \"engine\": \"linear:1,1\"}]",
                "\"kv_heads\" must be an integer", "fractional heads");
    models_fail("[{\"name\": \"a\", \"layers\": 1, \"kv_heads\": 1, "
                "\"engine\": \"linear:1,1\"}]",
                "\"head_dim\" must be an integer", "no head size");
    models_fail("[{\"name\": \"a\", \"layers\": 1, \"kv_heads\": 1, "
                "\"head_dim\": 64, \"engine\": \"warp:9\"}]",
                "model 0: \"engine\": ", "an unknown step model");
    models_fail("[{\"name\": \"a\", \"layers\": 1, \"kv_heads\": 1, "
                "\"head_dim\": 64, \"engine\": \"linear:1,1\"}, "
                "{\"name\": \"a\", \"layers\": 1, \"kv_heads\": 1, "
                "\"head_dim\": 64, \"engine\": \"linear:1,1\"}]",
                "model 1: \"a\" named twice", "a name twice");
    models_fail("[{\"name\": \"a\",", "bad.json: ", "not JSON");
}


/* the run of text's trace with the two models; 0 or -1 with err */
static int
run_two(const char *text, fg_mux_mode_e mode, uint64_t pool,
    fg_sim_trace_t *tr, fg_sim_result_t **res, fg_sim_mux_stats_t *st,
    char *err, size_t size)
{
    int               rc;
    fg_sim_conf_t     conf;
    fg_sim_models_t   ms;

    fg_sim_trace_init(tr);
    *res = NULL;

    if (fg_sim_models_read(&ms, file("two.json", two_models), err, size)
        != 0)
    {
        return -1;
    }

    rc = fg_sim_trace_read(tr, file("mux.jsonl", text), err, size);

    if (rc == 0) {
        *res = calloc(tr->n, sizeof(fg_sim_result_t));
        fg_sim_conf_init(&conf);
        conf.policy = FG_POLICY_FCFS;
        conf.models = &ms;
        conf.mux = mode;
        conf.kv_head_blocks = pool;
        conf.mux_stats = st;
        rc = fg_sim_run(&conf, tr, *res, err, size);
    }

    fg_sim_models_free(&ms);

    return rc;
}


static int
near(double a, double b)
{
    return fabs(a - b) < 1e-9;
}


static const char  one_each[] =
    "{\"t\": 0, \"client\": \"x\", \"input_tokens\": 10, "
    "\"output_tokens\": 2, \"model\": \"a\"}\n"
    "{\"t\": 0, \"client\": \"y\", \"input_tokens\": 10, "
    "\"output_tokens\": 2, \"model\": \"b\"}\n";


/*
 * One request of each model at 0, 10 tokens in, 2 out.  temporal: a's
 * prefill 0.1 s (0 - 0.1), b's 0.2 (0.1 - 0.3), a's decode (0.3 - 0.4),
 * b's (0.4 - 0.6).  spatial, pool 1200: equal rates, quotas by rate x
 * unit, 400 and 800, a third and two thirds of the GPU: a's prefill
 * 0.1 x 3, decode 0.1 x 3; b's 0.2 x 1.5, 0.2 x 1.5: both 0.3 and 0.6.
 * muxserve: round 1 a's prefill alone (0.1); round 2 b's prefill (0.2)
 * beside a's decode (0.1): 0.2; round 3 b's decode: 0.2.
 */
static void
test_timelines(void)
{
    int                 rc, i;
    char                err[512];
    fg_sim_trace_t      tr;
    fg_sim_result_t    *res;

    static const struct {
        fg_mux_mode_e   mode;
        const char     *name;
        double          t[4];          /* a first, a end, b first, b end */
    } want[] = {
        { FG_MUX_TEMPORAL, "temporal", { 0.1, 0.4, 0.3, 0.6 } },
        { FG_MUX_SPATIAL,  "spatial",  { 0.3, 0.6, 0.3, 0.6 } },
        { FG_MUX_MUXSERVE, "muxserve", { 0.1, 0.3, 0.3, 0.5 } },
    };

    for (i = 0; i < 3; i++) {
        rc = run_two(one_each, want[i].mode, 1200, &tr, &res, NULL, err,
                     sizeof(err));

        ok(rc == 0 && res[0].status == FG_SIM_OK
           && near(res[0].first_token, want[i].t[0])
           && near(res[0].finish, want[i].t[1])
           && near(res[1].first_token, want[i].t[2])
           && near(res[1].finish, want[i].t[3]),
           "%s: a %g - %g, b %g - %g", want[i].name, want[i].t[0],
           want[i].t[1], want[i].t[2], want[i].t[3]);

        if (rc != 0) {
            diag("%s", err);

        } else if (!near(res[1].finish, want[i].t[3])
                   || !near(res[0].finish, want[i].t[1]))
        {
            diag("got a %.9g - %.9g, b %.9g - %.9g", res[0].first_token,
                 res[0].finish, res[1].first_token, res[1].finish);
        }

        free(res);
        fg_sim_trace_free(&tr);
    }
}


/*
 * temporal's round-robin: a's request of 3 tokens and b's of 2 take turns,
 * a step each: a's decode never comes before b has had its turn.
 */
static void
test_round_robin(void)
{
    int                 rc;
    char                err[512];
    fg_sim_trace_t      tr;
    fg_sim_result_t    *res;

    rc = run_two("{\"t\": 0, \"client\": \"x\", \"input_tokens\": 10, "
                 "\"output_tokens\": 3, \"model\": \"a\"}\n"
                 "{\"t\": 0, \"client\": \"y\", \"input_tokens\": 10, "
                 "\"output_tokens\": 2, \"model\": \"b\"}\n",
                 FG_MUX_TEMPORAL, 1200, &tr, &res, NULL, err, sizeof(err));

    /* a 0 - 0.1, b 0.1 - 0.3, a 0.3 - 0.4, b 0.4 - 0.6, a 0.6 - 0.7 */
    ok(rc == 0 && near(res[0].first_token, 0.1) && near(res[0].finish, 0.7)
       && near(res[1].finish, 0.6),
       "temporal: a, b, a, b, a, each a step in turn");

    if (rc == 0 && !near(res[0].finish, 0.7)) {
        diag("got a %.9g, b %.9g", res[0].finish, res[1].finish);
    }

    free(res);
    fg_sim_trace_free(&tr);
}


/*
 * Two requests of a at 0, 200 in and 2 out: 13 token blocks, 26 head
 * blocks each; two tiny ones of b (equal rates).  Pool 120: spatial's
 * quotas 40 and 80: a's second waits for its first though the pool has
 * room.  a's share a third: prefill 2 s x 3 (0 - 6), decode 0.3 (6.3),
 * then the second's prefill (12.3) and decode (12.6).  temporal's whole
 * pool takes both at once.
 */
static void
test_quota_waits(void)
{
    int                 rc;
    char                err[512];
    fg_sim_trace_t      tr;
    fg_sim_result_t    *res;

    static const char  text[] =
        "{\"t\": 0, \"client\": \"x\", \"input_tokens\": 200, "
        "\"output_tokens\": 2, \"model\": \"a\"}\n"
        "{\"t\": 0, \"client\": \"x\", \"input_tokens\": 200, "
        "\"output_tokens\": 2, \"model\": \"a\"}\n"
        "{\"t\": 0, \"client\": \"y\", \"input_tokens\": 10, "
        "\"output_tokens\": 2, \"model\": \"b\"}\n"
        "{\"t\": 0, \"client\": \"y\", \"input_tokens\": 10, "
        "\"output_tokens\": 2, \"model\": \"b\"}\n";

    rc = run_two(text, FG_MUX_SPATIAL, 120, &tr, &res, NULL, err,
                 sizeof(err));

    ok(rc == 0 && near(res[0].first_token, 6.0) && near(res[0].finish, 6.3)
       && near(res[1].first_token, 12.3) && near(res[1].finish, 12.6),
       "spatial: a model over its quota waits (a's second starts when its "
       "first ends)");

    if (rc == 0 && !near(res[1].first_token, 12.3)) {
        diag("got %.9g %.9g %.9g %.9g", res[0].first_token, res[0].finish,
             res[1].first_token, res[1].finish);
    }

    free(res);
    fg_sim_trace_free(&tr);

    rc = run_two(text, FG_MUX_TEMPORAL, 120, &tr, &res, NULL, err,
                 sizeof(err));

    ok(rc == 0 && near(res[0].first_token, 4.0)
       && near(res[1].first_token, 4.0),
       "temporal: the whole pool, both of a in one merge (4 s)");

    free(res);
    fg_sim_trace_free(&tr);

    /* 1200 head blocks of b hold 300 token blocks: 4800 tokens */
    rc = run_two("{\"t\": 0, \"client\": \"x\", \"input_tokens\": 5000, "
                 "\"output_tokens\": 2, \"model\": \"b\"}\n",
                 FG_MUX_MUXSERVE, 1200, &tr, &res, NULL, err, sizeof(err));

    ok(rc == 0 && res[0].status == FG_SIM_REJECTED,
       "a request over the pool is rejected on arrival");

    free(res);
    fg_sim_trace_free(&tr);
}


/*
 * muxserve: six requests of a (26 head blocks each) at 0, six tiny ones
 * of b at 0: quotas 40 and 80, one of a at a time; by the first
 * adaptation (8 s) a has its next request lacking 12 and b uses nothing:
 * a takes from b, and two of a run at once.
 */
static void
test_adapting(void)
{
    int                  rc, i;
    char                 err[512], text[4096];
    size_t               len;
    fg_sim_trace_t       tr;
    fg_sim_result_t     *res;
    fg_sim_mux_stats_t   st;

    len = 0;

    for (i = 0; i < 12; i++) {
        len += snprintf(text + len, sizeof(text) - len,
                        "{\"t\": 0, \"client\": \"%s\", \"input_tokens\": "
                        "%d, \"output_tokens\": 2, \"model\": \"%s\"}\n",
                        i < 6 ? "x" : "y", i < 6 ? 200 : 10,
                        i < 6 ? "a" : "b");
    }

    rc = run_two(text, FG_MUX_MUXSERVE, 120, &tr, &res, &st, err,
                 sizeof(err));

    ok(rc == 0 && st.pool == 120 && st.quota0[0] == 40
       && st.quota0[1] == 80 && st.adaptations >= 1,
       "muxserve: quotas 40 and 80 at first, adapted in the run (%u)",
       st.adaptations);
    ok(rc == 0 && st.quota_max[0] >= 52 && st.quota_min[1] <= 68,
       "a, busy, took from b, spare: a up to %llu, b down to %llu",
       (unsigned long long) st.quota_max[0],
       (unsigned long long) st.quota_min[1]);

    for (i = 0; rc == 0 && i < 12 && res[i].status == FG_SIM_OK; i++) {
        /* void */
    }

    ok(rc == 0 && i == 12, "every request served");

    /* before 8 s one of a at a time: 2 s of prefill each */
    ok(rc == 0 && near(res[0].first_token, 2.0)
       && res[1].first_token > res[0].finish - 1e-9,
       "before the adaptation a's second waits for its first");

    /* after it (9.4 s) a's fifth's prefill (2 s) runs while its fourth
     * holds its blocks */
    ok(rc == 0 && res[4].first_token - 2.0 < res[3].finish - 1e-9
       && res[4].first_token > 8.0,
       "after it two of a hold blocks at once (%g - %g, %g - %g)",
       rc == 0 ? res[3].first_token : 0, rc == 0 ? res[3].finish : 0,
       rc == 0 ? res[4].first_token : 0, rc == 0 ? res[4].finish : 0);

    free(res);
    fg_sim_trace_free(&tr);
}


static void
test_unknown_model(void)
{
    int                 rc;
    char                err[512];
    fg_sim_trace_t      tr;
    fg_sim_result_t    *res;

    err[0] = '\0';
    rc = run_two("{\"t\": 0, \"client\": \"x\", \"input_tokens\": 10, "
                 "\"output_tokens\": 2, \"model\": \"a\"}\n"
                 "{\"t\": 1, \"client\": \"x\", \"input_tokens\": 10, "
                 "\"output_tokens\": 2, \"model\": \"zz\"}\n",
                 FG_MUX_MUXSERVE, 1200, &tr, &res, NULL, err, sizeof(err));

    ok(rc != 0 && strstr(err, "request 1: model \"zz\" is not in the models "
                              "file") != NULL,
       "a request of a model not in the file: a clear error");
    if (rc == 0 || strstr(err, "zz") == NULL) {
        diag("got: %s", rc ? err : "success");
    }

    free(res);
    fg_sim_trace_free(&tr);
}


/* model i's requests in proportion to (i + 1)^-alpha */
static void
test_gen_power_law(void)
{
    int                 rc, good;
    char                err[256], name[8];
    double              sum, share, want;
    size_t              i, count[4];
    uint32_t            k;
    fg_sim_trace_t      tr;
    fg_sim_gen_conf_t   conf;

    fg_sim_gen_conf_init(&conf);
    conf.duration = 3000;
    conf.alpha = 1.7;
    conf.seed = 7;

    ok(fabs(fg_sim_gen_mux_rate(&conf, 0) + fg_sim_gen_mux_rate(&conf, 1)
            + fg_sim_gen_mux_rate(&conf, 2) + fg_sim_gen_mux_rate(&conf, 3)
            - FG_SIM_GEN_MUX_RATE) < 1e-9
       && fabs(fg_sim_gen_mux_rate(&conf, 0) / fg_sim_gen_mux_rate(&conf, 1)
               - pow(2.0, 1.7)) < 1e-9,
       "rates: 6 req/s in all, the first 2^alpha times the second");

    fg_sim_trace_init(&tr);
    rc = fg_sim_gen_conf(&tr, "multi-model", &conf, err, sizeof(err));

    memset(count, 0, sizeof(count));
    good = rc == 0;

    for (i = 0; good && i < tr.n; i++) {
        snprintf(name, sizeof(name), "m%u", tr.reqs[i].client);
        good = tr.reqs[i].client < 4 && tr.reqs[i].model != 0
               && strcmp(fg_sim_trace_str_get(&tr, tr.reqs[i].model), name)
                  == 0
               && tr.reqs[i].input_tokens >= 64
               && tr.reqs[i].input_tokens <= 512
               && tr.reqs[i].output_tokens >= 64
               && tr.reqs[i].output_tokens <= 512;
        count[tr.reqs[i].client]++;
    }

    ok(good && tr.n > 15000, "multi-model: %zu requests, each its model's "
       "client, lengths in [64, 512]", tr.n);

    sum = 0.0;

    for (k = 0; k < 4; k++) {
        sum += pow(k + 1.0, -1.7);
    }

    for (k = 0; k < 4; k++) {
        share = (double) count[k] / (tr.n ? tr.n : 1);
        want = pow(k + 1.0, -1.7) / sum;
        ok(fabs(share - want) < 0.1 * want, "m%u: %.4f of requests, "
           "(i + 1)^-alpha says %.4f", k, share, want);
    }

    fg_sim_trace_free(&tr);
}

/*
 * The per-model figures of a temporal run of one_each: a served 0 - 0.4
 * (alone 0.1 + 0.1 = 0.2: 2x, within the SLO), b 0 - 0.6 (alone 0.4:
 * 1.5x); the arrivals' span is 0, so no throughput; then b's finish moved
 * to 3 s (7.5x alone) misses its SLO.
 */
static void
test_figures(void)
{
    int                 rc;
    char                err[512];
    json_t             *j, *a, *b, *all;
    fg_sim_trace_t      tr;
    fg_sim_models_t     ms;
    fg_sim_result_t    *res;

    rc = run_two(one_each, FG_MUX_TEMPORAL, 1200, &tr, &res, NULL, err,
                 sizeof(err));
    if (rc != 0
        || fg_sim_models_read(&ms, file("two.json", two_models), err,
                              sizeof(err))
           != 0)
    {
        ok(0, "the run: %s", err);
        return;
    }

    ok(near(fg_sim_models_alone(&ms.m[0], &tr.reqs[0]), 0.2)
       && near(fg_sim_models_alone(&ms.m[1], &tr.reqs[1]), 0.4),
       "alone: prefill, then each further token at batch 1");
    ok(fg_sim_models_need(&ms.m[1], &tr.reqs[1]) == 4,
       "12 tokens take one token block: b's unit, 4 head blocks");

    j = fg_sim_models_json(&ms, &tr, res);
    a = json_array_get(json_object_get(j, "models"), 0);
    all = json_object_get(j, "all");

    ok(json_integer_value(json_object_get(a, "requests")) == 1
       && json_real_value(json_object_get(a, "slo_attainment")) == 1.0
       && json_integer_value(json_object_get(all, "served")) == 2
       && json_real_value(json_object_get(all, "slo_attainment")) == 1.0,
       "both within 5x alone");
    json_decref(j);

    res[1].finish = 3.0;
    j = fg_sim_models_json(&ms, &tr, res);
    b = json_array_get(json_object_get(j, "models"), 1);
    all = json_object_get(j, "all");

    ok(json_real_value(json_object_get(b, "slo_attainment")) == 0.0
       && json_real_value(json_object_get(all, "slo_attainment")) == 0.5,
       "b at 7.5x alone misses it: half of all");
    json_decref(j);

    fg_sim_models_free(&ms);
    free(res);
    fg_sim_trace_free(&tr);
}


int
main(void)
{
    fg_test_dir_make("mux");

    test_models_file();
    test_timelines();
    test_round_robin();
    test_quota_waits();
    test_adapting();
    test_unknown_model();
    test_figures();
    test_gen_power_law();

    fg_test_dir_remove();

    return done_testing();
}
