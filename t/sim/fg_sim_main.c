
/*
 * fairgate: fairgate-sim, the simulator's command line.
 *
 * Exit status: 0 done, 1 the run failed (unreadable trace, write error),
 * 2 a usage error (unknown option, bad value).
 */


#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_sim_gen.h"
#include "fg_sim_metrics.h"
#include "fg_sim_opts.h"
#include "fg_sim_run.h"
#include "fg_sim_trace.h"


#define FG_SIM_ERRLEN  1024


static const char  fg_sim_usage[] =
"usage:\n"
"  fairgate-sim --trace FILE --policy NAME --engine MODEL --out RESULTS\n"
"               [--kv-tokens N] [--merge-every N] [--seed N]\n"
"               [--cost linear|linear:WP,WQ|profiled] [--rpm N]\n"
"               [--queue-timeout S] [--predict-error E] [--series OUT.dat]\n"
"               [--weighted] [--oit [--oit-threshold F] [--oit-user-rpm N]\n"
"               [--oit-app-rpm N] [--oit-idle-timeout S]]\n"
"               [--open-loop-stages]\n"
"  fairgate-sim gen --suite NAME [--seed N] [--duration S] --out TRACE\n"
"               [--rate-scale X] [--intensity I] [--burst-fraction F]\n"
"               [--cycle S]\n"
"  fairgate-sim analyze --results FILE [--cost ...] [--series OUT.dat]\n"
"               [--weighted]\n"
"\n"
"run: replays TRACE (JSON lines: t, client, input_tokens, output_tokens,\n"
"  optional max_output_tokens and weight) through the policy core in\n"
"  front of a simulated engine, writes one JSON line per request to\n"
"  RESULTS and prints the fairness figures (as analyze does).\n"
"  --policy         fcfs, rpm, lcf, vtc, vtc-predict, vtc-oracle, wsc\n"
"                   (wsc: FairServe's weighted service counter, one\n"
"                   learning app profile per trace \"app\")\n"
"  --engine         profile:FILE (timings as {input_len: {output_len:\n"
"                   [batch_size, prefill_s, decode_s]}}) or\n"
"                   linear:PREFILL,DECODE (s per input token, s per\n"
"                   running request and decode step)\n"
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
"\n"
"gen: writes a synthetic trace of the VTC paper's evaluation, Andes's\n"
"  cyclic bursts or a multi-app trace (docs/load.md); suites:\n"
"  %s\n"
"  --seed (1) picks the phases and gaps; --duration stretches the suite;\n"
"  --rate-scale multiplies every rate (1).  bursts: --intensity, the\n"
"  burst's rate over the mean rate (2); --burst-fraction, the share of\n"
"  each cycle in burst (0.35); --cycle, its length in seconds (the\n"
"  whole duration).\n"
"\n"
"analyze: the VTC paper's service-difference metric of a results file:\n"
"  prints max_diff, avg_diff, var_diff, throughput, per-client totals.\n"
"  --weighted       divide each client's windowed service and request\n"
"                   rate by its weight (results' \"weight\", default 1)\n"
"                   before taking the difference, so serving clients in\n"
"                   proportion to their weights scores 0; the output\n"
"                   says \"weighted\": true, and --series gives the\n"
"                   divided rates.\n";


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
    fg_sim_opts_vdie("fairgate-sim", status, fmt, args);
}


static const char *
fg_sim_required(const char *value, const char *name)
{
    if (value == NULL) {
        fg_sim_die(2, "option --%s is required", name);
    }

    return value;
}


static uint64_t
fg_sim_uint(const char *text, const char *name, uint64_t min, uint64_t max)
{
    char                *end;
    unsigned long long   v;

    errno = 0;
    v = strtoull(text, &end, 10);

    if (*text < '0' || *text > '9' || *end != '\0' || errno != 0
        || v < min || v > max)
    {
        fg_sim_die(2, "--%s: \"%s\" is not an integer in [%" PRIu64 ", %"
                   PRIu64 "]", name, text, min, max);
    }

    return v;
}


static double
fg_sim_seconds(const char *text, const char *name, double min, double max)
{
    char    *end;
    double   v;

    v = strtod(text, &end);

    if (end == text || *end != '\0' || !(v >= min && v <= max)) {
        fg_sim_die(2, "--%s: \"%s\" is not a number in [%g, %g]", name,
                   text, min, max);
    }

    return v;
}


static fg_cost_t
fg_sim_cost(const char *text)
{
    fg_cost_t  cost;

    if (text == NULL) {
        text = "linear";
    }

    if (fg_cost_parse(&cost, text) != 0) {
        fg_sim_die(2, "--cost: \"%s\" is not linear, linear:WP,WQ (both "
                   "> 0) or profiled", text);
    }

    return cost;
}


/* prints the figures; writes the series when asked */
static void
fg_sim_report(const fg_sim_trace_t *tr, const fg_sim_result_t *results,
    const fg_cost_t *cost, const char *series, int weighted)
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
    if (text == NULL) {
        fg_sim_die(1, "out of memory");
    }

    printf("%s\n", text);

    free(text);
    fg_sim_metrics_free(&m);
}


static int
fg_sim_main_gen(int argc, char **argv)
{
    char               err[FG_SIM_ERRLEN];
    size_t             i;
    const char        *suite, *seed_s, *duration_s, *out, *scale, *intensity,
                      *fraction, *cycle;
    fg_sim_trace_t     tr;
    fg_sim_gen_conf_t  conf;
    fg_sim_opt_t       opts[] = {
        { "suite", &suite, 0 }, { "seed", &seed_s, 0 },
        { "duration", &duration_s, 0 }, { "out", &out, 0 },
        { "rate-scale", &scale, 0 }, { "intensity", &intensity, 0 },
        { "burst-fraction", &fraction, 0 }, { "cycle", &cycle, 0 },
        { NULL, NULL, 0 }
    };

    suite = seed_s = duration_s = out = scale = intensity = fraction = cycle
          = NULL;

    if (fg_sim_opts_parse("fairgate-sim", argc, argv, opts, NULL)) {
        fg_sim_print_usage(stdout);
        exit(0);
    }

    fg_sim_required(suite, "suite");
    fg_sim_required(out, "out");

    for (i = 0; fg_sim_gen_suite(i) != NULL; i++) {
        if (strcmp(suite, fg_sim_gen_suite(i)) == 0) {
            break;
        }
    }

    if (fg_sim_gen_suite(i) == NULL) {
        fg_sim_die(2, "--suite: unknown suite \"%s\"", suite);
    }

    if ((intensity || fraction || cycle) && strcmp(suite, "bursts") != 0) {
        fg_sim_die(2, "--intensity, --burst-fraction and --cycle go with "
                   "--suite bursts");
    }

    fg_sim_gen_conf_init(&conf);

    if (seed_s != NULL) {
        conf.seed = fg_sim_uint(seed_s, "seed", 0, UINT64_MAX);
    }

    if (duration_s != NULL) {
        conf.duration = fg_sim_seconds(duration_s, "duration", 1, 1e6);
    }

    if (scale != NULL) {
        conf.rate_scale = fg_sim_seconds(scale, "rate-scale", 1e-6, 1e4);
    }

    if (intensity != NULL) {
        conf.intensity = fg_sim_seconds(intensity, "intensity", 1e-6, 1e6);
    }

    if (fraction != NULL) {
        conf.burst_fraction = fg_sim_seconds(fraction, "burst-fraction",
                                             1e-6, 1 - 1e-6);
    }

    if (cycle != NULL) {
        conf.cycle = fg_sim_seconds(cycle, "cycle", 1, 1e6);
    }

    if (conf.intensity * conf.burst_fraction > 1.0) {
        fg_sim_die(2, "--intensity %g times --burst-fraction %g exceeds 1: "
                   "the rate between bursts would be negative",
                   conf.intensity, conf.burst_fraction);
    }

    fg_sim_trace_init(&tr);

    if (fg_sim_gen_conf(&tr, suite, &conf, err, sizeof(err)) != 0
        || fg_sim_trace_write(&tr, out, err, sizeof(err)) != 0)
    {
        fg_sim_die(1, "%s", err);
    }

    fg_sim_trace_free(&tr);

    return 0;
}


static int
fg_sim_main_analyze(int argc, char **argv)
{
    char              err[FG_SIM_ERRLEN];
    fg_cost_t         cost;
    const char       *path, *cost_s, *series, *weighted;
    fg_sim_trace_t    tr;
    fg_sim_result_t  *results;
    fg_sim_opt_t      opts[] = {
        { "results", &path, 0 }, { "cost", &cost_s, 0 },
        { "series", &series, 0 }, { "weighted", &weighted, 1 },
        { NULL, NULL, 0 }
    };

    path = cost_s = series = weighted = NULL;

    if (fg_sim_opts_parse("fairgate-sim", argc, argv, opts, NULL)) {
        fg_sim_print_usage(stdout);
        exit(0);
    }

    fg_sim_required(path, "results");
    cost = fg_sim_cost(cost_s);

    fg_sim_trace_init(&tr);

    if (fg_sim_results_read(&tr, &results, path, err, sizeof(err)) != 0) {
        fg_sim_die(1, "%s", err);
    }

    fg_sim_report(&tr, results, &cost, series, weighted != NULL);

    free(results);
    fg_sim_trace_free(&tr);

    return 0;
}


static int
fg_sim_main_run(int argc, char **argv)
{
    char              err[FG_SIM_ERRLEN];
    size_t            i, too_big;
    const char       *trace, *policy, *engine, *kv, *merge, *seed, *cost_s,
                     *rpm, *timeout, *predict, *out, *series, *weighted,
                     *oit, *oit_thr, *oit_user, *oit_app, *oit_idle,
                     *open_loop;
    double           *arrivals;
    fg_oit_t          oit_stats;
    fg_sim_conf_t     conf;
    fg_sim_trace_t    tr;
    fg_sim_result_t  *results;
    fg_sim_opt_t      opts[] = {
        { "trace", &trace, 0 }, { "policy", &policy, 0 },
        { "engine", &engine, 0 }, { "kv-tokens", &kv, 0 },
        { "merge-every", &merge, 0 }, { "seed", &seed, 0 },
        { "cost", &cost_s, 0 }, { "rpm", &rpm, 0 },
        { "queue-timeout", &timeout, 0 }, { "predict-error", &predict, 0 },
        { "out", &out, 0 }, { "series", &series, 0 },
        { "weighted", &weighted, 1 }, { "oit", &oit, 1 },
        { "oit-threshold", &oit_thr, 0 }, { "oit-user-rpm", &oit_user, 0 },
        { "oit-app-rpm", &oit_app, 0 },
        { "oit-idle-timeout", &oit_idle, 0 },
        { "open-loop-stages", &open_loop, 1 }, { NULL, NULL, 0 }
    };

    trace = policy = engine = kv = merge = seed = cost_s = rpm = timeout
          = predict = out = series = weighted = NULL;
    oit = oit_thr = oit_user = oit_app = oit_idle = open_loop = NULL;

    if (fg_sim_opts_parse("fairgate-sim", argc, argv, opts, NULL)) {
        fg_sim_print_usage(stdout);
        exit(0);
    }

    fg_sim_required(trace, "trace");
    fg_sim_required(policy, "policy");
    fg_sim_required(engine, "engine");
    fg_sim_required(out, "out");

    fg_sim_conf_init(&conf);

    conf.open_loop_stages = open_loop != NULL;

    if (fg_sched_policy_parse(&conf.policy, policy) != 0) {
        fg_sim_die(2, "--policy: unknown policy \"%s\" (fcfs, rpm, lcf, "
                   "vtc, vtc-predict, vtc-oracle, wsc)", policy);
    }

    if (oit == NULL && (oit_thr || oit_user || oit_app || oit_idle)) {
        fg_sim_die(2, "--oit-threshold, --oit-user-rpm, --oit-app-rpm and "
                   "--oit-idle-timeout go with --oit");
    }

    if (oit != NULL) {
        conf.oit = 1;
        conf.oit_stats = &oit_stats;

        if (oit_thr != NULL) {
            conf.oit_threshold = fg_sim_seconds(oit_thr, "oit-threshold",
                                                1e-6, 1);
        }

        if (oit_user != NULL) {
            conf.oit_user_rpm = fg_sim_uint(oit_user, "oit-user-rpm", 0,
                                            UINT32_MAX);
        }

        if (oit_app != NULL) {
            conf.oit_app_rpm = fg_sim_uint(oit_app, "oit-app-rpm", 0,
                                           UINT32_MAX);
        }

        if (oit_idle != NULL) {
            conf.oit_idle_timeout = fg_sim_seconds(oit_idle,
                                                   "oit-idle-timeout", 1e-6,
                                                   1e9);
        }
    }

    conf.cost = fg_sim_cost(cost_s);

    if (kv != NULL) {
        conf.kv_tokens = fg_sim_uint(kv, "kv-tokens", 1, UINT32_MAX);
    }

    if (merge != NULL) {
        conf.merge_every = fg_sim_uint(merge, "merge-every", 1, 1000000);
    }

    if (seed != NULL) {
        conf.seed = fg_sim_uint(seed, "seed", 0, UINT64_MAX);
    }

    if ((rpm != NULL) != (conf.policy == FG_POLICY_RPM)) {
        fg_sim_die(2, "--rpm goes with --policy rpm, and only with it");
    }

    if (rpm != NULL) {
        conf.rpm_limit = fg_sim_uint(rpm, "rpm", 1, UINT32_MAX);
    }

    if (timeout != NULL) {
        conf.queue_timeout = fg_sim_seconds(timeout, "queue-timeout", 1e-6,
                                            1e9);
    }

    if (predict != NULL) {
        if (conf.policy != FG_POLICY_VTC_PREDICT) {
            fg_sim_die(2, "--predict-error goes with --policy vtc-predict");
        }

        conf.predict_error = fg_sim_seconds(predict, "predict-error", 0, 1);
    }

    conf.model = fg_step_model_create(engine, err, sizeof(err));
    if (conf.model == NULL) {
        fg_sim_die(2, "--engine: %s", err);
    }

    fg_sim_trace_init(&tr);

    if (fg_sim_trace_read(&tr, trace, err, sizeof(err)) != 0) {
        fg_sim_die(1, "%s", err);
    }

    results = calloc(tr.n, sizeof(fg_sim_result_t));
    arrivals = calloc(tr.n ? tr.n : 1, sizeof(double));
    if (results == NULL || arrivals == NULL) {
        fg_sim_die(1, "out of memory");
    }

    conf.arrivals = arrivals;

    if (fg_sim_run(&conf, &tr, results, err, sizeof(err)) != 0) {
        fg_sim_die(1, "%s", err);
    }

    /* the results say when requests arrived, as fairgate-load's do */
    for (i = 0; i < tr.n; i++) {
        tr.reqs[i].t = arrivals[i];
    }

    free(arrivals);

    if (fg_sim_results_write(&tr, results, out, err, sizeof(err)) != 0) {
        fg_sim_die(1, "%s", err);
    }

    /* a pool too small for the trace rejects quietly: say so */
    too_big = 0;

    for (i = 0; i < tr.n; i++) {
        if ((uint64_t) tr.reqs[i].input_tokens + tr.reqs[i].max_output_tokens
            > conf.kv_tokens)
        {
            too_big++;
        }
    }

    if (too_big) {
        fprintf(stderr, "fairgate-sim: %zu of %zu requests rejected: input "
                "+ max output exceeds the KV pool (%" PRIu64 " tokens)\n",
                too_big, tr.n, conf.kv_tokens);
    }

    if (conf.oit) {
        fprintf(stderr, "fairgate-sim: oit: %" PRIu64 " admitted, %" PRIu64
                " continued, %" PRIu64 " throttled\n", oit_stats.admitted,
                oit_stats.continued, oit_stats.throttled);
    }

    fg_sim_report(&tr, results, &conf.cost, series, weighted != NULL);

    free(results);
    fg_sim_trace_free(&tr);
    fg_step_model_destroy(conf.model);

    return 0;
}


int
main(int argc, char **argv)
{
    if (argc < 2) {
        fg_sim_print_usage(stderr);
        return 2;
    }

    if (strcmp(argv[1], "gen") == 0) {
        return fg_sim_main_gen(argc - 2, argv + 2);
    }

    if (strcmp(argv[1], "analyze") == 0) {
        return fg_sim_main_analyze(argc - 2, argv + 2);
    }

    return fg_sim_main_run(argc - 1, argv + 1);
}
