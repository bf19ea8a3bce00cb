
/*
 * fairgate: fairgate-sim, the simulator's command line: run (the default),
 * gen and analyze, each with its table of options (fg_sim_opts.h).
 *
 * Exit status: 0 done, 1 the run failed (unreadable trace, write error),
 * 2 a usage error (unknown option, bad value).
 */


#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_sim_gen.h"
#include "fg_sim_metrics.h"
#include "fg_sim_models.h"
#include "fg_sim_opts.h"
#include "fg_sim_run.h"
#include "fg_sim_trace.h"


#define FG_SIM_PROG    "fairgate-sim"
#define FG_SIM_ERRLEN  1024


static const char  fg_sim_usage[] =
"usage:\n"
"  fairgate-sim --trace FILE --policy NAME --engine MODEL --out RESULTS\n"
"               [--kv-tokens N] [--merge-every N] [--seed N]\n"
"               [--cost linear|linear:WP,WQ|profiled] [--rpm N]\n"
"               [--queue-timeout S] [--predict-error E] [--series OUT.dat]\n"
"               [--weighted] [--oit [--oit-threshold F] [--oit-user-rpm N]\n"
"               [--oit-app-rpm N] [--oit-idle-timeout S]]\n"
"               [--open-loop-stages] [--prefix-cache] [--quantum Q]\n"
"               [--window N] [--engines N [--route NAME]]\n"
"               [--engine-sched fcfs|andes] [--order arrival|qoe]\n"
"               [--qoe-ttft S] [--qoe-speed V]\n"
"               [--models FILE --mux spatial|temporal|muxserve\n"
"                [--kv-head-blocks N]] (then --engine is not needed)\n"
"  fairgate-sim gen --suite NAME [--seed N] [--duration S] --out TRACE\n"
"               [--rate-scale X] [--intensity I] [--burst-fraction F]\n"
"               [--cycle S] [--groups G] [--prompts P]\n"
"               [--system-tokens N] [--question-tokens N]\n"
"               [--output-tokens N] [--clients C] [--attack-rate X]\n"
"               [--attack-prefix X] [--attack-groups N]\n"
"               [--models-n M] [--alpha A]\n"
"  fairgate-sim analyze --results FILE [--cost ...] [--series OUT.dat]\n"
"               [--weighted] [--models FILE]\n"
"\n"
"run: replays TRACE (JSON lines: t, client, input_tokens, output_tokens,\n"
"  optional max_output_tokens and weight) through the policy core in\n"
"  front of a simulated engine, writes one JSON line per request to\n"
"  RESULTS and prints the fairness figures (as analyze does).\n"
"  --policy         fcfs, rpm, lcf, vtc, vtc-predict, vtc-oracle, wsc,\n"
"                   lpm, dlpm (wsc: FairServe's weighted service counter,\n"
"                   one learning app profile per trace \"app\"; lpm:\n"
"                   longest cached prefix first; dlpm: deficit longest\n"
"                   prefix match)\n"
"  --engine         profile:FILE (timings as {input_len: {output_len:\n"
"                   [batch_size, prefill_s, decode_s]}}) or\n"
"                   linear:PREFILL,DECODE (s per input token, s per\n"
"                   running request and decode step) or\n"
"                   gpu[:STEP,PER_SEQ,PER_CTX,PREFILL] (s per step, per\n"
"                   running request, per context token, per input token)\n"
"  --kv-tokens      KV pool in tokens (10000)\n"
"  --merge-every    decode steps between merges of new requests (10)\n"
"  --seed           seed of --predict-error's draws (1)\n"
"  --cost           cost of service h(input, output) (linear = 1,2)\n"
"  --rpm            requests per 60 s and client, for --policy rpm\n"
"  --queue-timeout  cancel requests that waited longer, in seconds\n"
"  --predict-error  vtc-predict hints output x (1 + U(-E, E)), E in [0, 1]\n"
"  --series         per-client service and request rates over time\n"
"  --weighted       the weighted metric, as analyze --weighted (the\n"
"                   policies use the trace's weights either way)\n"
"  --oit            FairServe's OIT before enqueue: while the reserved\n"
"                   share of the KV pool exceeds --oit-threshold (0.9),\n"
"                   a request opening a new interaction over its user's\n"
"                   --oit-user-rpm, then its app's --oit-app-rpm (per\n"
"                   60 s; 0 or absent: no limit) is rejected; one that\n"
"                   continues an open interaction never is; interactions\n"
"                   idle --oit-idle-timeout seconds (60) are closed;\n"
"                   overloaded: a request waits in the queue, or the\n"
"                   running ones reserve --oit-threshold of the pool\n"
"  --open-loop-stages  every request at its trace time; by default a\n"
"                   request of an interaction waits for the outcome of\n"
"                   its lower stages, and is skipped when one failed\n"
"  --prefix-cache   engines keep finished requests' full blocks (16\n"
"                   tokens) in their pool, LRU; a request's prefix blocks\n"
"                   found there are cached (no prefill), and held once\n"
"  --quantum        dlpm's deficit quantum, cost units (2048)\n"
"  --window         lpm, dlpm: waiting requests one decision looks at\n"
"                   (128)\n"
"  --engines        engines of --kv-tokens each (1); the results name\n"
"                   the engine of each request, \"0\", \"1\" ...\n"
"  --route          the engine of a request: prefix (alias d2lpm: the\n"
"                   longest cached prefix, then the least load),\n"
"                   least-load, round-robin (prefix)\n"
"  --engine-sched   the engine's scheduler: fcfs, or andes (Andes's QoE\n"
"                   decision at merges under KV pressure, preemption by\n"
"                   recomputation; results say \"preemptions\")\n"
"  --order          which of a client's waiting requests the policy\n"
"                   serves first: arrival (the oldest), or qoe (Andes's\n"
"                   priority for one not yet served: the QoE it can\n"
"                   still gain per token of KV; docs/qoe.md)\n"
"  --qoe-ttft, --qoe-speed  andes, --order qoe: the TTFT target (1 s)\n"
"                   and reading speed (5 tokens/s) of requests without\n"
"                   them\n"
"  --models         several models on one GPU (docs/multi-model.md): a\n"
"                   JSON array of {name, layers, kv_heads, head_dim,\n"
"                   engine}; each request's trace \"model\" names one\n"
"  --mux            how they share it: spatial (fixed slices of the KV\n"
"                   pool and the GPU), temporal (one model's step at a\n"
"                   time), muxserve (quotas that adapt, ADBS)\n"
"  --kv-head-blocks the pool in head blocks (what --kv-tokens holds of\n"
"                   the largest model); the output gains per-model\n"
"                   throughput and SLO attainment\n"
"\n"
"gen: writes a synthetic trace of the VTC paper's evaluation, Andes's\n"
"  cyclic bursts or a multi-app trace (docs/load.md); suites:\n"
"  %s\n"
"  --seed (1) picks the phases and gaps; --duration stretches the suite;\n"
"  --rate-scale multiplies every rate (1).  bursts: --intensity, the\n"
"  burst's rate over the mean rate (2); --burst-fraction, the share of\n"
"  each cycle in burst (0.35); --cycle, its length in seconds (the\n"
"  whole duration).  shared-prefix: --groups (8) x --prompts (64)\n"
"  requests, each its group's system prompt of --system-tokens (2048,\n"
"  the trace's prefix) and a question of --question-tokens (128), with\n"
"  --output-tokens (256), shuffled over --clients (4), poisson over the\n"
"  duration; s1 adds a client \"attacker\" at --attack-rate (10) times\n"
"  a client's rate, s2 one whose prefixes are --attack-prefix (4) times\n"
"  as long, of --attack-groups (1) groups of its own.  multi-model:\n"
"  MuxServe's workload, --models-n (4) models m0 .., model i's rate\n"
"  proportional to (i + 1)^-alpha (--alpha, 1.3), 6 req/s in all,\n"
"  poisson, lengths uniform in [64, 512]; engine/tools/sim/models-4.json\n"
"  fits it.\n"
"\n"
"analyze: the VTC paper's service-difference metric of a results file:\n"
"  prints max_diff, avg_diff, var_diff, throughput, per-client totals.\n"
"  --weighted       divide each client's windowed service and request\n"
"                   rate by its weight (results' \"weight\", default 1)\n"
"                   before taking the difference, so serving clients in\n"
"                   proportion to their weights scores 0; the output\n"
"                   says \"weighted\": true, and --series gives the\n"
"                   divided rates.\n"
"  --models         the models file of the run: per-model throughput and\n"
"                   SLO attainment (latency within 5x alone)\n";


static void
fg_sim_print_usage(FILE *fp)
{
    char    suites[512];
    size_t  i, len;

    suites[0] = '\0';
    len = 0;

    for (i = 0; fg_sim_gen_suite(i) != NULL && len < sizeof(suites); i++) {
        len += snprintf(suites + len, sizeof(suites) - len, "%s%s",
                        i == 0 ? "" : i % 4 ? ", " : ",\n  ",
                        fg_sim_gen_suite(i));
    }

    fprintf(fp, fg_sim_usage, suites);
}


static void
fg_sim_die(int status, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    fg_sim_opts_vdie(FG_SIM_PROG, status, fmt, args);
}


static const char *
fg_sim_required(const char *value, const char *name)
{
    if (value == NULL) {
        fg_sim_die(2, "option --%s is required", name);
    }

    return value;
}


/* the command's options into values: exits 0 after the usage for --help */
static void
fg_sim_parse(int argc, char **argv, const struct option *opts,
    const char **values)
{
    if (fg_sim_opts_parse(FG_SIM_PROG, argc, argv, opts, values, NULL)) {
        fg_sim_print_usage(stdout);
        exit(0);
    }
}


/* prints the figures; writes the series when asked */
static void
fg_sim_report(const fg_sim_trace_t *tr, const fg_sim_result_t *results,
    const fg_cost_t *cost, const char *series, int weighted,
    const fg_sim_models_t *models)
{
    char              *text, err[FG_SIM_ERRLEN];
    fg_sim_metrics_t   m;

    if (fg_sim_metrics_compute(&m, tr, results, cost, weighted) != 0) {
        fg_sim_die(1, "out of memory");
    }

    if (series != NULL
        && fg_sim_metrics_write_series(&m, tr, series, err, sizeof(err))
           != 0)
    {
        fg_sim_die(1, "%s", err);
    }

    text = fg_sim_metrics_json(&m, tr);

    if (text != NULL && models != NULL) {
        text = fg_sim_models_report(text, models, tr, results);
    }

    if (text == NULL) {
        fg_sim_die(1, "out of memory");
    }

    printf("%s\n", text);

    free(text);
    fg_sim_metrics_free(&m);
}


enum {
    FG_GEN_SUITE, FG_GEN_SEED, FG_GEN_DURATION, FG_GEN_OUT, FG_GEN_SCALE,
    FG_GEN_INTENSITY, FG_GEN_FRACTION, FG_GEN_CYCLE, FG_GEN_GROUPS,
    FG_GEN_PROMPTS, FG_GEN_SYSTEM, FG_GEN_QUESTION, FG_GEN_OUTPUT,
    FG_GEN_CLIENTS, FG_GEN_ATTACK_RATE, FG_GEN_ATTACK_PREFIX,
    FG_GEN_ATTACK_GROUPS, FG_GEN_MODELS_N, FG_GEN_ALPHA, FG_GEN_N
};

static const struct option  fg_sim_gen_options[] = {
    FG_SIM_OPT_VALUE("suite", FG_GEN_SUITE),
    FG_SIM_OPT_VALUE("seed", FG_GEN_SEED),
    FG_SIM_OPT_VALUE("duration", FG_GEN_DURATION),
    FG_SIM_OPT_VALUE("out", FG_GEN_OUT),
    FG_SIM_OPT_VALUE("rate-scale", FG_GEN_SCALE),
    FG_SIM_OPT_VALUE("intensity", FG_GEN_INTENSITY),
    FG_SIM_OPT_VALUE("burst-fraction", FG_GEN_FRACTION),
    FG_SIM_OPT_VALUE("cycle", FG_GEN_CYCLE),
    FG_SIM_OPT_VALUE("groups", FG_GEN_GROUPS),
    FG_SIM_OPT_VALUE("prompts", FG_GEN_PROMPTS),
    FG_SIM_OPT_VALUE("system-tokens", FG_GEN_SYSTEM),
    FG_SIM_OPT_VALUE("question-tokens", FG_GEN_QUESTION),
    FG_SIM_OPT_VALUE("output-tokens", FG_GEN_OUTPUT),
    FG_SIM_OPT_VALUE("clients", FG_GEN_CLIENTS),
    FG_SIM_OPT_VALUE("attack-rate", FG_GEN_ATTACK_RATE),
    FG_SIM_OPT_VALUE("attack-prefix", FG_GEN_ATTACK_PREFIX),
    FG_SIM_OPT_VALUE("attack-groups", FG_GEN_ATTACK_GROUPS),
    FG_SIM_OPT_VALUE("models-n", FG_GEN_MODELS_N),
    FG_SIM_OPT_VALUE("alpha", FG_GEN_ALPHA),
    FG_SIM_OPT_HELP,
    FG_SIM_OPT_END
};


/* a count of the shared-prefix suites, when given, into *to */
static void
fg_sim_gen_count(const char **v, int opt, const char *name, uint32_t min,
    uint32_t max, uint32_t *to)
{
    if (v[opt] == NULL) {
        return;
    }

    if (!fg_sim_gen_is_prefix(v[FG_GEN_SUITE])) {
        fg_sim_die(2, "--%s goes with --suite shared-prefix, s1 or s2",
                   name);
    }

    *to = (uint32_t) fg_sim_opts_uint(FG_SIM_PROG, v[opt], name, min, max);
}


/* the shared-prefix suites' options into conf, each checked */
static void
fg_sim_gen_options_prefix(const char **v, fg_sim_gen_conf_t *conf)
{
    const char  *suite;

    suite = v[FG_GEN_SUITE];

    fg_sim_gen_count(v, FG_GEN_GROUPS, "groups", 1, 100000, &conf->groups);
    fg_sim_gen_count(v, FG_GEN_PROMPTS, "prompts", 1, 100000,
                     &conf->prompts);
    fg_sim_gen_count(v, FG_GEN_SYSTEM, "system-tokens", 0, 1000000,
                     &conf->system_tokens);
    fg_sim_gen_count(v, FG_GEN_QUESTION, "question-tokens", 1, 1000000,
                     &conf->question_tokens);
    fg_sim_gen_count(v, FG_GEN_OUTPUT, "output-tokens", 1, 1000000,
                     &conf->output_tokens);
    fg_sim_gen_count(v, FG_GEN_CLIENTS, "clients", 1, 100000,
                     &conf->clients);

    if (v[FG_GEN_ATTACK_RATE] != NULL) {
        if (strcmp(suite, "s1") != 0) {
            fg_sim_die(2, "--attack-rate goes with --suite s1");
        }

        conf->attack_rate = fg_sim_opts_number(FG_SIM_PROG,
                                               v[FG_GEN_ATTACK_RATE],
                                               "attack-rate", 1e-6, 1e4);
    }

    if (v[FG_GEN_ATTACK_PREFIX] != NULL) {
        if (strcmp(suite, "s2") != 0) {
            fg_sim_die(2, "--attack-prefix goes with --suite s2");
        }

        conf->attack_prefix = fg_sim_opts_number(FG_SIM_PROG,
                                                 v[FG_GEN_ATTACK_PREFIX],
                                                 "attack-prefix", 1, 1000);
    }

    if (v[FG_GEN_ATTACK_GROUPS] != NULL) {
        if (strcmp(suite, "s2") != 0) {
            fg_sim_die(2, "--attack-groups goes with --suite s2");
        }

        conf->attack_groups = (uint32_t) fg_sim_opts_uint(
                                  FG_SIM_PROG, v[FG_GEN_ATTACK_GROUPS],
                                  "attack-groups", 1, 100000);
    }
}


/* gen's options into conf, each checked */
static void
fg_sim_gen_options_conf(const char **v, fg_sim_gen_conf_t *conf)
{
    size_t  i;

    fg_sim_required(v[FG_GEN_SUITE], "suite");
    fg_sim_required(v[FG_GEN_OUT], "out");

    for (i = 0; fg_sim_gen_suite(i) != NULL; i++) {
        if (strcmp(v[FG_GEN_SUITE], fg_sim_gen_suite(i)) == 0) {
            break;
        }
    }

    if (fg_sim_gen_suite(i) == NULL) {
        fg_sim_die(2, "--suite: unknown suite \"%s\"", v[FG_GEN_SUITE]);
    }

    if ((v[FG_GEN_INTENSITY] || v[FG_GEN_FRACTION] || v[FG_GEN_CYCLE])
        && strcmp(v[FG_GEN_SUITE], "bursts") != 0)
    {
        fg_sim_die(2, "--intensity, --burst-fraction and --cycle go with "
                   "--suite bursts");
    }

    fg_sim_gen_conf_init(conf);

    if (v[FG_GEN_SEED] != NULL) {
        conf->seed = fg_sim_opts_uint(FG_SIM_PROG, v[FG_GEN_SEED], "seed", 0,
                                      UINT64_MAX);
    }

    if (v[FG_GEN_DURATION] != NULL) {
        conf->duration = fg_sim_opts_number(FG_SIM_PROG, v[FG_GEN_DURATION],
                                            "duration", 1, 1e6);
    }

    if (v[FG_GEN_SCALE] != NULL) {
        conf->rate_scale = fg_sim_opts_number(FG_SIM_PROG, v[FG_GEN_SCALE],
                                              "rate-scale", 1e-6, 1e4);
    }

    if (v[FG_GEN_INTENSITY] != NULL) {
        conf->intensity = fg_sim_opts_number(FG_SIM_PROG,
                                             v[FG_GEN_INTENSITY],
                                             "intensity", 1e-6, 1e6);
    }

    if (v[FG_GEN_FRACTION] != NULL) {
        conf->burst_fraction = fg_sim_opts_number(FG_SIM_PROG,
                                                  v[FG_GEN_FRACTION],
                                                  "burst-fraction", 1e-6,
                                                  1 - 1e-6);
    }

    if (v[FG_GEN_CYCLE] != NULL) {
        conf->cycle = fg_sim_opts_number(FG_SIM_PROG, v[FG_GEN_CYCLE],
                                         "cycle", 1, 1e6);
    }

    fg_sim_gen_options_prefix(v, conf);

    if ((v[FG_GEN_MODELS_N] || v[FG_GEN_ALPHA])
        && strcmp(v[FG_GEN_SUITE], "multi-model") != 0)
    {
        fg_sim_die(2, "--models-n and --alpha go with --suite multi-model");
    }

    if (v[FG_GEN_MODELS_N] != NULL) {
        conf->models_n = (uint32_t) fg_sim_opts_uint(FG_SIM_PROG,
                                                     v[FG_GEN_MODELS_N],
                                                     "models-n", 1,
                                                     FG_MUX_MAX_MODELS);
    }

    if (v[FG_GEN_ALPHA] != NULL) {
        conf->alpha = fg_sim_opts_number(FG_SIM_PROG, v[FG_GEN_ALPHA],
                                         "alpha", 0, 10);
    }

    if (conf->intensity * conf->burst_fraction > 1.0) {
        fg_sim_die(2, "--intensity %g times --burst-fraction %g exceeds 1: "
                   "the rate between bursts would be negative",
                   conf->intensity, conf->burst_fraction);
    }
}


static int
fg_sim_main_gen(int argc, char **argv)
{
    char               err[FG_SIM_ERRLEN];
    const char        *v[FG_GEN_N] = { NULL };
    fg_sim_trace_t     tr;
    fg_sim_gen_conf_t  conf;

    fg_sim_parse(argc, argv, fg_sim_gen_options, v);
    fg_sim_gen_options_conf(v, &conf);

    fg_sim_trace_init(&tr);

    if (fg_sim_gen_conf(&tr, v[FG_GEN_SUITE], &conf, err, sizeof(err)) != 0
        || fg_sim_trace_write(&tr, v[FG_GEN_OUT], err, sizeof(err)) != 0)
    {
        fg_sim_die(1, "%s", err);
    }

    fg_sim_trace_free(&tr);

    return 0;
}


enum {
    FG_ANALYZE_RESULTS, FG_ANALYZE_COST, FG_ANALYZE_SERIES,
    FG_ANALYZE_WEIGHTED, FG_ANALYZE_MODELS, FG_ANALYZE_N
};

static const struct option  fg_sim_analyze_options[] = {
    FG_SIM_OPT_VALUE("results", FG_ANALYZE_RESULTS),
    FG_SIM_OPT_VALUE("cost", FG_ANALYZE_COST),
    FG_SIM_OPT_VALUE("series", FG_ANALYZE_SERIES),
    FG_SIM_OPT_FLAG("weighted", FG_ANALYZE_WEIGHTED),
    FG_SIM_OPT_VALUE("models", FG_ANALYZE_MODELS),
    FG_SIM_OPT_HELP,
    FG_SIM_OPT_END
};


static int
fg_sim_main_analyze(int argc, char **argv)
{
    char              err[FG_SIM_ERRLEN];
    fg_cost_t         cost;
    const char       *v[FG_ANALYZE_N] = { NULL };
    fg_sim_trace_t    tr;
    fg_sim_models_t   models;
    fg_sim_result_t  *results;

    fg_sim_parse(argc, argv, fg_sim_analyze_options, v);

    fg_sim_required(v[FG_ANALYZE_RESULTS], "results");
    cost = fg_sim_opts_cost(FG_SIM_PROG, v[FG_ANALYZE_COST]);

    fg_sim_trace_init(&tr);

    if (fg_sim_results_read(&tr, &results, v[FG_ANALYZE_RESULTS], err,
                            sizeof(err))
        != 0)
    {
        fg_sim_die(1, "%s", err);
    }

    if (v[FG_ANALYZE_MODELS] != NULL
        && fg_sim_models_read(&models, v[FG_ANALYZE_MODELS], err,
                              sizeof(err))
           != 0)
    {
        fg_sim_die(1, "%s", err);
    }

    fg_sim_report(&tr, results, &cost, v[FG_ANALYZE_SERIES],
                  v[FG_ANALYZE_WEIGHTED] != NULL,
                  v[FG_ANALYZE_MODELS] != NULL ? &models : NULL);

    if (v[FG_ANALYZE_MODELS] != NULL) {
        fg_sim_models_free(&models);
    }

    free(results);
    fg_sim_trace_free(&tr);

    return 0;
}


enum {
    FG_RUN_TRACE, FG_RUN_POLICY, FG_RUN_ENGINE, FG_RUN_KV, FG_RUN_MERGE,
    FG_RUN_SEED, FG_RUN_COST, FG_RUN_RPM, FG_RUN_TIMEOUT, FG_RUN_PREDICT,
    FG_RUN_OUT, FG_RUN_SERIES, FG_RUN_WEIGHTED, FG_RUN_OIT,
    FG_RUN_OIT_THRESHOLD, FG_RUN_OIT_USER, FG_RUN_OIT_APP, FG_RUN_OIT_IDLE,
    FG_RUN_OPEN_LOOP, FG_RUN_PREFIX_CACHE, FG_RUN_QUANTUM, FG_RUN_WINDOW,
    FG_RUN_ENGINES, FG_RUN_ROUTE, FG_RUN_ENGINE_SCHED, FG_RUN_QOE_TTFT,
    FG_RUN_QOE_SPEED, FG_RUN_ORDER, FG_RUN_MODELS, FG_RUN_MUX,
    FG_RUN_HEAD_BLOCKS, FG_RUN_N
};

static const struct option  fg_sim_run_options[] = {
    FG_SIM_OPT_VALUE("trace", FG_RUN_TRACE),
    FG_SIM_OPT_VALUE("policy", FG_RUN_POLICY),
    FG_SIM_OPT_VALUE("engine", FG_RUN_ENGINE),
    FG_SIM_OPT_VALUE("kv-tokens", FG_RUN_KV),
    FG_SIM_OPT_VALUE("merge-every", FG_RUN_MERGE),
    FG_SIM_OPT_VALUE("seed", FG_RUN_SEED),
    FG_SIM_OPT_VALUE("cost", FG_RUN_COST),
    FG_SIM_OPT_VALUE("rpm", FG_RUN_RPM),
    FG_SIM_OPT_VALUE("queue-timeout", FG_RUN_TIMEOUT),
    FG_SIM_OPT_VALUE("predict-error", FG_RUN_PREDICT),
    FG_SIM_OPT_VALUE("out", FG_RUN_OUT),
    FG_SIM_OPT_VALUE("series", FG_RUN_SERIES),
    FG_SIM_OPT_FLAG("weighted", FG_RUN_WEIGHTED),
    FG_SIM_OPT_FLAG("oit", FG_RUN_OIT),
    FG_SIM_OPT_VALUE("oit-threshold", FG_RUN_OIT_THRESHOLD),
    FG_SIM_OPT_VALUE("oit-user-rpm", FG_RUN_OIT_USER),
    FG_SIM_OPT_VALUE("oit-app-rpm", FG_RUN_OIT_APP),
    FG_SIM_OPT_VALUE("oit-idle-timeout", FG_RUN_OIT_IDLE),
    FG_SIM_OPT_FLAG("open-loop-stages", FG_RUN_OPEN_LOOP),
    FG_SIM_OPT_FLAG("prefix-cache", FG_RUN_PREFIX_CACHE),
    FG_SIM_OPT_VALUE("quantum", FG_RUN_QUANTUM),
    FG_SIM_OPT_VALUE("window", FG_RUN_WINDOW),
    FG_SIM_OPT_VALUE("engines", FG_RUN_ENGINES),
    FG_SIM_OPT_VALUE("route", FG_RUN_ROUTE),
    FG_SIM_OPT_VALUE("engine-sched", FG_RUN_ENGINE_SCHED),
    FG_SIM_OPT_VALUE("qoe-ttft", FG_RUN_QOE_TTFT),
    FG_SIM_OPT_VALUE("qoe-speed", FG_RUN_QOE_SPEED),
    FG_SIM_OPT_VALUE("order", FG_RUN_ORDER),
    FG_SIM_OPT_VALUE("models", FG_RUN_MODELS),
    FG_SIM_OPT_VALUE("mux", FG_RUN_MUX),
    FG_SIM_OPT_VALUE("kv-head-blocks", FG_RUN_HEAD_BLOCKS),
    FG_SIM_OPT_HELP,
    FG_SIM_OPT_END
};


/* --oit and the options that go with it into conf */
static void
fg_sim_run_options_oit(const char **v, fg_sim_conf_t *conf,
    fg_oit_t *oit_stats)
{
    if (v[FG_RUN_OIT] == NULL
        && (v[FG_RUN_OIT_THRESHOLD] || v[FG_RUN_OIT_USER]
            || v[FG_RUN_OIT_APP] || v[FG_RUN_OIT_IDLE]))
    {
        fg_sim_die(2, "--oit-threshold, --oit-user-rpm, --oit-app-rpm and "
                   "--oit-idle-timeout go with --oit");
    }

    if (v[FG_RUN_OIT] == NULL) {
        return;
    }

    conf->oit = 1;
    conf->oit_stats = oit_stats;

    if (v[FG_RUN_OIT_THRESHOLD] != NULL) {
        conf->oit_threshold = fg_sim_opts_number(FG_SIM_PROG,
                                                 v[FG_RUN_OIT_THRESHOLD],
                                                 "oit-threshold", 1e-6, 1);
    }

    if (v[FG_RUN_OIT_USER] != NULL) {
        conf->oit_user_rpm = fg_sim_opts_uint(FG_SIM_PROG, v[FG_RUN_OIT_USER],
                                              "oit-user-rpm", 0, UINT32_MAX);
    }

    if (v[FG_RUN_OIT_APP] != NULL) {
        conf->oit_app_rpm = fg_sim_opts_uint(FG_SIM_PROG, v[FG_RUN_OIT_APP],
                                             "oit-app-rpm", 0, UINT32_MAX);
    }

    if (v[FG_RUN_OIT_IDLE] != NULL) {
        conf->oit_idle_timeout = fg_sim_opts_number(FG_SIM_PROG,
                                                    v[FG_RUN_OIT_IDLE],
                                                    "oit-idle-timeout", 1e-6,
                                                    1e9);
    }
}


/* the prefix cache, lpm and dlpm's options, the engines and the route */
static void
fg_sim_run_options_locality(const char **v, fg_sim_conf_t *conf)
{
    int  prefix_policy;

    conf->prefix_cache = v[FG_RUN_PREFIX_CACHE] != NULL;
    prefix_policy = conf->policy == FG_POLICY_LPM
                    || conf->policy == FG_POLICY_DLPM;

    if (v[FG_RUN_QUANTUM] != NULL) {
        if (conf->policy != FG_POLICY_DLPM) {
            fg_sim_die(2, "--quantum goes with --policy dlpm");
        }

        conf->quantum = fg_sim_opts_number(FG_SIM_PROG, v[FG_RUN_QUANTUM],
                                           "quantum", 1e-6, 1e11);
    }

    if (v[FG_RUN_WINDOW] != NULL) {
        if (!prefix_policy) {
            fg_sim_die(2, "--window goes with --policy lpm or dlpm");
        }

        conf->window = (uint32_t) fg_sim_opts_uint(FG_SIM_PROG,
                                                   v[FG_RUN_WINDOW],
                                                   "window", 1,
                                                   FG_SCHED_MAX_WINDOW);
    }

    if (v[FG_RUN_ENGINES] != NULL) {
        conf->engines = (uint32_t) fg_sim_opts_uint(FG_SIM_PROG,
                                                    v[FG_RUN_ENGINES],
                                                    "engines", 1,
                                                    FG_SCHED_MAX_ENGINES);
    }

    if (v[FG_RUN_ROUTE] != NULL) {
        if (v[FG_RUN_ENGINES] == NULL) {
            fg_sim_die(2, "--route goes with --engines");
        }

        if (fg_sched_route_parse(&conf->route, v[FG_RUN_ROUTE]) != 0) {
            fg_sim_die(2, "--route: unknown route \"%s\" (prefix, d2lpm, "
                       "least-load, round-robin)", v[FG_RUN_ROUTE]);
        }
    }
}


/* the engine's scheduler, and the expectations it gives those without */
static void
fg_sim_run_options_sched(const char **v, fg_sim_conf_t *conf)
{
    const char  *s;

    s = v[FG_RUN_ENGINE_SCHED];

    if (s != NULL && strcmp(s, "andes") == 0) {
        conf->engine_sched = FG_SIM_SCHED_ANDES;

    } else if (s != NULL && strcmp(s, "fcfs") != 0) {
        fg_sim_die(2, "--engine-sched: unknown scheduler \"%s\" (fcfs, "
                   "andes)", s);
    }

    s = v[FG_RUN_ORDER];

    if (s != NULL && strcmp(s, "qoe") == 0) {
        conf->order = FG_ORDER_QOE;

    } else if (s != NULL && strcmp(s, "arrival") != 0) {
        fg_sim_die(2, "--order: unknown order \"%s\" (arrival, qoe)", s);
    }

    if (conf->engine_sched != FG_SIM_SCHED_ANDES
        && conf->order != FG_ORDER_QOE
        && (v[FG_RUN_QOE_TTFT] != NULL || v[FG_RUN_QOE_SPEED] != NULL))
    {
        fg_sim_die(2, "--qoe-ttft and --qoe-speed go with --engine-sched "
                   "andes or --order qoe");
    }

    if (v[FG_RUN_QOE_TTFT] != NULL) {
        conf->qoe_ttft = fg_sim_opts_number(FG_SIM_PROG, v[FG_RUN_QOE_TTFT],
                                            "qoe-ttft", 1e-6, 1e6);
    }

    if (v[FG_RUN_QOE_SPEED] != NULL) {
        conf->qoe_speed = fg_sim_opts_number(FG_SIM_PROG,
                                             v[FG_RUN_QOE_SPEED],
                                             "qoe-speed", 1e-6, 1e6);
    }
}


/* run's options into conf, each checked; conf->model is created last */
static void
fg_sim_run_options_conf(const char **v, fg_sim_conf_t *conf,
    fg_oit_t *oit_stats)
{
    char  err[FG_SIM_ERRLEN];

    fg_sim_required(v[FG_RUN_TRACE], "trace");
    fg_sim_required(v[FG_RUN_POLICY], "policy");
    fg_sim_required(v[FG_RUN_OUT], "out");

    if (v[FG_RUN_MODELS] == NULL) {
        fg_sim_required(v[FG_RUN_ENGINE], "engine");
    }

    fg_sim_conf_init(conf);

    conf->open_loop_stages = v[FG_RUN_OPEN_LOOP] != NULL;

    if (fg_sched_policy_parse(&conf->policy, v[FG_RUN_POLICY]) != 0) {
        fg_sim_die(2, "--policy: unknown policy \"%s\" (fcfs, rpm, lcf, "
                   "vtc, vtc-predict, vtc-oracle, wsc, lpm, dlpm)",
                   v[FG_RUN_POLICY]);
    }

    fg_sim_run_options_oit(v, conf, oit_stats);
    fg_sim_run_options_locality(v, conf);
    fg_sim_run_options_sched(v, conf);

    conf->cost = fg_sim_opts_cost(FG_SIM_PROG, v[FG_RUN_COST]);

    if (v[FG_RUN_KV] != NULL) {
        conf->kv_tokens = fg_sim_opts_uint(FG_SIM_PROG, v[FG_RUN_KV],
                                           "kv-tokens", 1, UINT32_MAX);
    }

    if (v[FG_RUN_MERGE] != NULL) {
        conf->merge_every = fg_sim_opts_uint(FG_SIM_PROG, v[FG_RUN_MERGE],
                                             "merge-every", 1, 1000000);
    }

    if (v[FG_RUN_SEED] != NULL) {
        conf->seed = fg_sim_opts_uint(FG_SIM_PROG, v[FG_RUN_SEED], "seed", 0,
                                      UINT64_MAX);
    }

    if ((v[FG_RUN_RPM] != NULL) != (conf->policy == FG_POLICY_RPM)) {
        fg_sim_die(2, "--rpm goes with --policy rpm, and only with it");
    }

    if (v[FG_RUN_RPM] != NULL) {
        conf->rpm_limit = fg_sim_opts_uint(FG_SIM_PROG, v[FG_RUN_RPM], "rpm",
                                           1, UINT32_MAX);
    }

    if (v[FG_RUN_TIMEOUT] != NULL) {
        conf->queue_timeout = fg_sim_opts_number(FG_SIM_PROG,
                                                 v[FG_RUN_TIMEOUT],
                                                 "queue-timeout", 1e-6, 1e9);
    }

    if (v[FG_RUN_PREDICT] != NULL) {
        if (conf->policy != FG_POLICY_VTC_PREDICT) {
            fg_sim_die(2, "--predict-error goes with --policy vtc-predict");
        }

        conf->predict_error = fg_sim_opts_number(FG_SIM_PROG,
                                                 v[FG_RUN_PREDICT],
                                                 "predict-error", 0, 1);
    }

    if (v[FG_RUN_ENGINE] == NULL) {
        return;
    }

    conf->model = fg_step_model_create(v[FG_RUN_ENGINE], err, sizeof(err));
    if (conf->model == NULL) {
        fg_sim_die(2, "--engine: %s", err);
    }
}


/* --models, --mux, --kv-head-blocks into conf, with models filled */
static void
fg_sim_run_options_mux(const char **v, fg_sim_conf_t *conf,
    fg_sim_models_t *models, fg_sim_mux_stats_t *stats)
{
    char  err[FG_SIM_ERRLEN];

    if (v[FG_RUN_MODELS] == NULL) {
        if (v[FG_RUN_MUX] != NULL || v[FG_RUN_HEAD_BLOCKS] != NULL) {
            fg_sim_die(2, "--mux and --kv-head-blocks go with --models");
        }

        return;
    }

    if (v[FG_RUN_MUX] == NULL) {
        fg_sim_die(2, "--models needs --mux (spatial, temporal, muxserve)");
    }

    if (strcmp(v[FG_RUN_MUX], "spatial") == 0) {
        conf->mux = FG_MUX_SPATIAL;

    } else if (strcmp(v[FG_RUN_MUX], "temporal") == 0) {
        conf->mux = FG_MUX_TEMPORAL;

    } else if (strcmp(v[FG_RUN_MUX], "muxserve") == 0) {
        conf->mux = FG_MUX_MUXSERVE;

    } else {
        fg_sim_die(2, "--mux: unknown \"%s\" (spatial, temporal, muxserve)",
                   v[FG_RUN_MUX]);
    }

    if (v[FG_RUN_HEAD_BLOCKS] != NULL) {
        conf->kv_head_blocks = fg_sim_opts_uint(FG_SIM_PROG,
                                                v[FG_RUN_HEAD_BLOCKS],
                                                "kv-head-blocks", 1,
                                                UINT32_MAX);
    }

    if (fg_sim_models_read(models, v[FG_RUN_MODELS], err, sizeof(err)) != 0)
    {
        fg_sim_die(2, "--models: %s", err);
    }

    conf->models = models;
    conf->mux_stats = stats;
}


/* what the results do not say: requests the pool could never take, OIT,
 * the prefix caches' evictions */
static void
fg_sim_run_notes(const fg_sim_trace_t *tr, const fg_sim_conf_t *conf,
    const fg_oit_t *oit_stats)
{
    size_t                       i, too_big;
    const fg_sim_cache_stats_t  *cs;

    /* a pool too small for the trace rejects quietly: say so */
    too_big = 0;

    if (conf->models != NULL) {
        fg_sim_mux_notes(conf->models, conf->mux_stats);
    }

    for (i = 0; conf->models == NULL && i < tr->n; i++) {
        if ((uint64_t) tr->reqs[i].input_tokens
            + tr->reqs[i].max_output_tokens > conf->kv_tokens)
        {
            too_big++;
        }
    }

    if (too_big) {
        fprintf(stderr, "fairgate-sim: %zu of %zu requests rejected: input "
                "+ max output exceeds the KV pool (%" PRIu64 " tokens)\n",
                too_big, tr->n, conf->kv_tokens);
    }

    if (conf->oit) {
        fprintf(stderr, "fairgate-sim: oit: %" PRIu64 " admitted, %" PRIu64
                " continued, %" PRIu64 " throttled\n", oit_stats->admitted,
                oit_stats->continued, oit_stats->throttled);
    }

    for (i = 0; conf->prefix_cache && i < conf->engines; i++) {
        cs = &conf->cache_stats[i];
        fprintf(stderr, "fairgate-sim: engine %zu: prefix cache hit %" PRIu64
                " of %" PRIu64 " input tokens, %" PRIu64 " blocks evicted\n",
                i, cs->hit_tokens, cs->query_tokens, cs->evictions);
    }
}


/* the engines' names in the results, "0", "1" ...: strings of the trace */
static uint32_t *
fg_sim_engine_names(fg_sim_trace_t *tr, uint32_t n)
{
    char       name[16];
    int64_t    s;
    uint32_t   e, *names;

    names = calloc(n, sizeof(uint32_t));
    if (names == NULL) {
        return NULL;
    }

    for (e = 0; e < n; e++) {
        snprintf(name, sizeof(name), "%u", e);

        s = fg_sim_trace_str(tr, name);
        if (s < 0) {
            free(names);
            return NULL;
        }

        names[e] = (uint32_t) s;
    }

    return names;
}


static int
fg_sim_main_run(int argc, char **argv)
{
    char                   err[FG_SIM_ERRLEN];
    size_t                 i;
    double                *arrivals;
    uint32_t              *names;
    fg_oit_t               oit_stats;
    const char            *v[FG_RUN_N] = { NULL };
    fg_sim_conf_t          conf;
    fg_sim_trace_t         tr;
    fg_sim_result_t       *results;
    fg_sim_models_t        models;
    fg_sim_mux_stats_t     mux_stats;
    fg_sim_cache_stats_t   cache_stats[FG_SCHED_MAX_ENGINES];

    fg_sim_parse(argc, argv, fg_sim_run_options, v);
    fg_sim_run_options_conf(v, &conf, &oit_stats);
    fg_sim_run_options_mux(v, &conf, &models, &mux_stats);

    fg_sim_trace_init(&tr);

    if (fg_sim_trace_read(&tr, v[FG_RUN_TRACE], err, sizeof(err)) != 0) {
        fg_sim_die(1, "%s", err);
    }

    results = calloc(tr.n, sizeof(fg_sim_result_t));
    arrivals = calloc(tr.n ? tr.n : 1, sizeof(double));
    if (results == NULL || arrivals == NULL) {
        fg_sim_die(1, "out of memory");
    }

    conf.arrivals = arrivals;
    conf.cache_stats = cache_stats;

    /* several engines: the results say which served each request */
    names = NULL;

    if (v[FG_RUN_ENGINES] != NULL) {
        names = fg_sim_engine_names(&tr, conf.engines);
        if (names == NULL) {
            fg_sim_die(1, "out of memory");
        }

        conf.engine_names = names;
    }

    if (fg_sim_run(&conf, &tr, results, err, sizeof(err)) != 0) {
        fg_sim_die(1, "%s", err);
    }

    /* the results say when requests arrived, as fairgate-load's do */
    for (i = 0; i < tr.n; i++) {
        tr.reqs[i].t = arrivals[i];
    }

    free(arrivals);

    if (fg_sim_results_write(&tr, results, v[FG_RUN_OUT], err, sizeof(err))
        != 0)
    {
        fg_sim_die(1, "%s", err);
    }

    fg_sim_run_notes(&tr, &conf, &oit_stats);

    fg_sim_report(&tr, results, &conf.cost, v[FG_RUN_SERIES],
                  v[FG_RUN_WEIGHTED] != NULL, conf.models);

    free(results);
    free(names);
    fg_sim_trace_free(&tr);

    if (conf.model != NULL) {
        fg_step_model_destroy(conf.model);
    }

    if (conf.models != NULL) {
        fg_sim_models_free(&models);
    }

    return 0;
}


int
main(int argc, char **argv)
{
    if (argc < 2) {
        fg_sim_print_usage(stderr);
        return 2;
    }

    /* a subcommand's name stands as its argv[0] */
    if (strcmp(argv[1], "gen") == 0) {
        return fg_sim_main_gen(argc - 1, argv + 1);
    }

    if (strcmp(argv[1], "analyze") == 0) {
        return fg_sim_main_analyze(argc - 1, argv + 1);
    }

    return fg_sim_main_run(argc, argv);
}
