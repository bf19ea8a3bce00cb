
/*
 * fairgate: fairgate-load, the load generator and trace replayer: its
 * command line, run (the default) and analyze, each with its table of
 * options (fg_sim_opts.h).
 *
 * Exit status: 0 done (whatever became of the requests), 1 the run failed
 * (unreadable trace, results not written), 2 a usage error.
 */


#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fg_load_req.h"
#include "fg_load_results.h"
#include "fg_load_run.h"
#include "fg_sim_latency.h"
#include "fg_sim_metrics.h"
#include "fg_sim_opts.h"
#include "fg_sim_trace.h"


#define FG_LOAD_PROG      "fairgate-load"
#define FG_LOAD_ERRLEN    1024
#define FG_LOAD_HEADERS   64


static volatile sig_atomic_t  fg_load_stop;


static const char  fg_load_usage[] =
"usage:\n"
"  fairgate-load --trace FILE --url URL --out RESULTS [--time-scale X]\n"
"               [--model NAME] [--stream on|off] [--no-ignore-eos]\n"
"               [--key-prefix P] [--header 'Name: value' ...]\n"
"               [--token-times] [--max-seconds S] [--request-timeout S]\n"
"               [--max-connections N] [--open-loop-stages] [--quiet]\n"
"               [--ttft-target S] [--tokens-per-s N]\n"
"  fairgate-load analyze --results FILE [--reading-speed S]\n"
"               [--ttft-target S] [--time-scale X] [--cost ...]\n"
"               [--weighted] [--series-dir DIR] [--bin S]\n"
"\n"
"run: sends each request of TRACE (the project's trace format, see\n"
"  docs/load.md) to URL (an OpenAI chat completions endpoint: the URL as\n"
"  given, nothing else is ever asked) at its time t x the time scale from\n"
"  the start, as a chat request of about input_tokens prompt tokens and\n"
"  max_tokens output_tokens; writes one JSON line per request sent to\n"
"  RESULTS (the project's results format) and a summary to stdout.\n"
"  --time-scale       run seconds per trace second (1; 0.1 runs 10x faster)\n"
"  --model            the body's \"model\" (default)\n"
"  --stream           for lines without \"stream\" (on)\n"
"  --no-ignore-eos    leave \"ignore_eos\": true out of the body\n"
"  --key-prefix       lines without \"key\" send Authorization: Bearer\n"
"                     P<client>\n"
"  --header           one more header on every request (repeatable)\n"
"  --token-times      each output token's time in the results\n"
"  --max-seconds      stop then: the requests in flight are timeouts, the\n"
"                     rest not sent (last arrival + request timeout x the\n"
"                     most stages of an interaction + 10)\n"
"  --request-timeout  give a request up after S seconds (600)\n"
"  --max-connections  connections at once (1024); more requests wait\n"
"  --open-loop-stages every request at its time; by default a request of\n"
"                     an interaction (\"interaction\" and \"stage\") waits\n"
"                     for the outcome of its lower stages, and is skipped\n"
"                     (not sent, status skipped) when one of them failed\n"
"  --quiet            no progress line (there is one when stderr is a\n"
"                     terminal)\n"
"  --ttft-target      Andes's TTFT target, seconds, for streamed lines\n"
"                     without expectations (1 with --tokens-per-s)\n"
"  --tokens-per-s     their reading speed: each streamed request's QoE is\n"
"                     measured, \"qoe\" in the results\n"
"\n"
"analyze: figures of a results file (fairgate-load's or fairgate-sim's):\n"
"  \"fairness\", the VTC service difference, throughput, interactions\n"
"  aborted, tokens wasted and users served as fairgate-sim analyze, and\n"
"  \"latency\": TTFT and end-to-end latency (mean, p50, p90, p99), token\n"
"  delivery speed and Andes's QoE, over all and per client.\n"
"  --reading-speed    tokens/s a reader reads (4.8)\n"
"  --ttft-target      seconds (Andes's max(input / 5000, 1) by default)\n"
"  --time-scale       the run's time scale: times are divided by it\n"
"  --cost, --weighted as fairgate-sim analyze\n"
"  --series-dir       write gnuplot data there\n"
"                     (engine/tools/load/latency-report.sh plots it)\n"
"  --bin              seconds per bin of the service series (span / 100)\n";


static void
fg_load_die(int status, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    fg_sim_opts_vdie(FG_LOAD_PROG, status, fmt, args);
}


/* the command's options into values: exits 0 after the usage for --help */
static void
fg_load_parse(int argc, char **argv, const struct option *opts,
    const char **values, fg_sim_opt_list_t *list)
{
    if (fg_sim_opts_parse(FG_LOAD_PROG, argc, argv, opts, values, list)) {
        fputs(fg_load_usage, stdout);
        exit(0);
    }
}


static double
fg_load_number(const char *text, const char *name, double min, double max)
{
    return fg_sim_opts_number(FG_LOAD_PROG, text, name, min, max);
}


static void
fg_load_on_signal(int sig)
{
    (void) sig;

    fg_load_stop = 1;
}


/* the URL must parse, be http or https, and name a host */
static void
fg_load_check_url(const char *url)
{
    int     ok;
    char   *scheme, *host;
    CURLU  *u;

    u = curl_url();
    scheme = host = NULL;

    ok = u != NULL
         && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK
         && curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK
         && curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK
         && (strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0);

    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);

    if (!ok) {
        fg_load_die(2, "--url: \"%s\" is not an http:// or https:// URL",
                    url);
    }
}


enum {
    FG_RUN_TRACE, FG_RUN_URL, FG_RUN_OUT, FG_RUN_SCALE, FG_RUN_MODEL,
    FG_RUN_STREAM, FG_RUN_NO_EOS, FG_RUN_PREFIX, FG_RUN_TIMES,
    FG_RUN_MAX_SECONDS, FG_RUN_TIMEOUT, FG_RUN_CONNECTIONS, FG_RUN_QUIET,
    FG_RUN_OPEN_LOOP, FG_RUN_TTFT, FG_RUN_SPEED, FG_RUN_N
};

static const struct option  fg_load_run_options[] = {
    FG_SIM_OPT_VALUE("trace", FG_RUN_TRACE),
    FG_SIM_OPT_VALUE("url", FG_RUN_URL),
    FG_SIM_OPT_VALUE("out", FG_RUN_OUT),
    FG_SIM_OPT_VALUE("time-scale", FG_RUN_SCALE),
    FG_SIM_OPT_VALUE("model", FG_RUN_MODEL),
    FG_SIM_OPT_VALUE("stream", FG_RUN_STREAM),
    FG_SIM_OPT_FLAG("no-ignore-eos", FG_RUN_NO_EOS),
    FG_SIM_OPT_VALUE("key-prefix", FG_RUN_PREFIX),
    FG_SIM_OPT_REPEAT("header"),
    FG_SIM_OPT_FLAG("token-times", FG_RUN_TIMES),
    FG_SIM_OPT_VALUE("max-seconds", FG_RUN_MAX_SECONDS),
    FG_SIM_OPT_VALUE("request-timeout", FG_RUN_TIMEOUT),
    FG_SIM_OPT_VALUE("max-connections", FG_RUN_CONNECTIONS),
    FG_SIM_OPT_FLAG("quiet", FG_RUN_QUIET),
    FG_SIM_OPT_FLAG("open-loop-stages", FG_RUN_OPEN_LOOP),
    FG_SIM_OPT_VALUE("ttft-target", FG_RUN_TTFT),
    FG_SIM_OPT_VALUE("tokens-per-s", FG_RUN_SPEED),
    FG_SIM_OPT_HELP,
    FG_SIM_OPT_END
};


/* the request options (fg_load_req_conf_t) into conf, each checked */
static void
fg_load_run_options_req(const char **v, fg_load_req_conf_t *req)
{
    size_t       i;
    const char  *model, *stream, *prefix;

    model = v[FG_RUN_MODEL];
    stream = v[FG_RUN_STREAM];
    prefix = v[FG_RUN_PREFIX];

    if (model != NULL) {
        if (*model == '\0') {
            fg_load_die(2, "--model: empty");
        }

        req->model = model;
    }

    if (stream != NULL) {
        if (strcmp(stream, "on") != 0 && strcmp(stream, "off") != 0) {
            fg_load_die(2, "--stream: \"%s\" is not on or off", stream);
        }

        req->stream = strcmp(stream, "on") == 0;
    }

    req->ignore_eos = v[FG_RUN_NO_EOS] == NULL;

    if (prefix != NULL) {
        for (i = 0; prefix[i]; i++) {
            if (prefix[i] <= 0x20 || prefix[i] >= 0x7f) {
                fg_load_die(2, "--key-prefix: a key is visible ASCII");
            }
        }

        req->key_prefix = prefix;
    }
}


/* each --header checked, as libcurl's list (freed by the caller) */
static struct curl_slist *
fg_load_run_options_headers(const fg_sim_opt_list_t *list)
{
    size_t              i;
    struct curl_slist  *headers, *more;

    headers = NULL;

    for (i = 0; i < list->n; i++) {
        if (fg_load_req_header_ok(list->values[i]) != 0) {
            fg_load_die(2, "--header: \"%s\" is not \"Name: value\" (a "
                        "token, a colon, no control characters)",
                        list->values[i]);
        }

        more = curl_slist_append(headers, list->values[i]);
        if (more == NULL) {
            fg_load_die(1, "out of memory");
        }

        headers = more;
    }

    return headers;
}


/* run's options into conf, each checked */
static void
fg_load_run_options_conf(const char **v, const fg_sim_opt_list_t *headers,
    fg_load_conf_t *conf)
{
    if (v[FG_RUN_TRACE] == NULL || v[FG_RUN_URL] == NULL
        || v[FG_RUN_OUT] == NULL)
    {
        fg_load_die(2, "option --%s is required",
                    v[FG_RUN_TRACE] == NULL ? "trace"
                    : v[FG_RUN_URL] == NULL ? "url" : "out");
    }

    fg_load_conf_init(conf);
    fg_load_check_url(v[FG_RUN_URL]);
    conf->url = v[FG_RUN_URL];

    if (v[FG_RUN_SCALE] != NULL) {
        conf->time_scale = fg_load_number(v[FG_RUN_SCALE], "time-scale",
                                          1e-6, 1e6);
    }

    fg_load_run_options_req(v, &conf->req);
    conf->req.time_scale = conf->time_scale;

    conf->req.headers = fg_load_run_options_headers(headers);
    conf->token_times = v[FG_RUN_TIMES] != NULL;

    if (v[FG_RUN_TIMEOUT] != NULL) {
        conf->request_timeout = fg_load_number(v[FG_RUN_TIMEOUT],
                                               "request-timeout", 1e-3, 1e6);
    }

    if (v[FG_RUN_CONNECTIONS] != NULL) {
        conf->max_connections = (long) fg_load_number(v[FG_RUN_CONNECTIONS],
                                                      "max-connections", 1,
                                                      100000);
    }

    if (v[FG_RUN_MAX_SECONDS] != NULL) {
        conf->max_seconds = fg_load_number(v[FG_RUN_MAX_SECONDS],
                                           "max-seconds", 1e-3, 1e7);
    }

    if (v[FG_RUN_TTFT] != NULL) {
        conf->qoe.ttft = fg_load_number(v[FG_RUN_TTFT], "ttft-target", 1e-6,
                                        1e6);
    }

    if (v[FG_RUN_SPEED] != NULL) {
        conf->qoe.speed = fg_load_number(v[FG_RUN_SPEED], "tokens-per-s",
                                         1e-6, 1e6);
    }

    conf->progress = v[FG_RUN_QUIET] == NULL && isatty(STDERR_FILENO);
    conf->open_loop_stages = v[FG_RUN_OPEN_LOOP] != NULL;
    conf->stop = &fg_load_stop;
}


/*
 * Without --max-seconds: the last arrival, then as long as a request may
 * take for each stage that may wait for the one before to time out.
 */
static double
fg_load_max_seconds(const fg_sim_trace_t *tr, const fg_load_conf_t *conf,
    const uint32_t *stages)
{
    size_t    i;
    double    last;
    uint32_t  deepest;

    last = tr->reqs[tr->n - 1].t * conf->time_scale;

    deepest = 1;

    for (i = 0; !conf->open_loop_stages && i < tr->n; i++) {
        if (tr->reqs[i].interaction != 0
            && stages[tr->reqs[i].interaction] > deepest)
        {
            deepest = stages[tr->reqs[i].interaction];
        }
    }

    return last + conf->request_timeout * deepest + 10.0;
}


/* what the process needs for a run: descriptors, and signals that stop it */
static void
fg_load_process_setup(void)
{
    struct rlimit  rl;

    /* a connection a request in flight, and then some */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
    }

    signal(SIGINT, fg_load_on_signal);
    signal(SIGTERM, fg_load_on_signal);
    signal(SIGPIPE, SIG_IGN);
}


static void
fg_load_print_summary(const fg_sim_trace_t *tr, const fg_load_summary_t *sum,
    const char *out)
{
    FILE  *fp;

    if (sum->unsent || sum->cut) {
        fprintf(stderr, "fairgate-load: stopped after %.1f s%s: %zu "
                "requests in flight given up (timeout), %zu not sent (no "
                "line in the results)\n", sum->elapsed,
                fg_load_stop ? " by a signal" : " (--max-seconds)", sum->cut,
                sum->unsent);
    }

    /* stdout may be the results */
    fp = strcmp(out, "-") == 0 ? stderr : stdout;

    fprintf(fp, "{\"requests\": %zu, \"sent\": %zu, \"served\": %" PRIu64
            ", \"rejected\": %" PRIu64 ", \"timeout\": %" PRIu64
            ", \"errors\": %" PRIu64 ", \"skipped\": %" PRIu64
            ", \"not_sent\": %zu, \"elapsed\": %.3f, "
            "\"arrival_lag_max\": %.6f, \"arrival_lag_p99\": %.6f, "
            "\"arrival_lag_mean\": %.6f}\n",
            tr->n, sum->sent, sum->count.served, sum->count.rejected,
            sum->count.timeout, sum->count.errors, sum->count.skipped,
            sum->unsent, sum->elapsed,
            sum->lag_max, sum->lag_p99,
            sum->lag_mean);
}


static int
fg_load_main_run(int argc, char **argv)
{
    char                err[FG_LOAD_ERRLEN];
    uint32_t           *stages;
    const char         *v[FG_RUN_N] = { NULL }, *bad;
    const char         *header_values[FG_LOAD_HEADERS];
    fg_sim_trace_t      tr;
    fg_load_conf_t      conf;
    fg_load_result_t   *res;
    fg_load_summary_t   sum;
    fg_sim_opt_list_t   headers = { header_values, 0, FG_LOAD_HEADERS };

    fg_load_parse(argc, argv, fg_load_run_options, v, &headers);
    fg_load_run_options_conf(v, &headers, &conf);

    fg_sim_trace_init(&tr);

    if (fg_sim_trace_read(&tr, v[FG_RUN_TRACE], err, sizeof(err)) != 0) {
        fg_load_die(1, "%s", err);
    }

    bad = fg_load_req_bad_client(&tr);
    if (bad != NULL) {
        fg_load_die(1, "%s: client \"%s\" holds a control character: it "
                    "cannot go in a header", v[FG_RUN_TRACE], bad);
    }

    /* X-Fairgate-Stages: each interaction's, from the whole trace */
    stages = fg_load_req_stages(&tr);
    if (stages == NULL) {
        fg_load_die(1, "out of memory");
    }

    conf.req.stages = stages;

    if (conf.max_seconds < 0.0) {
        conf.max_seconds = fg_load_max_seconds(&tr, &conf, stages);
    }

    fg_load_process_setup();

    res = calloc(tr.n, sizeof(fg_load_result_t));
    if (res == NULL) {
        fg_load_die(1, "out of memory");
    }

    if (fg_load_run(&conf, &tr, res, &sum, err, sizeof(err)) != 0
        || fg_load_results_write(&tr, res, conf.time_scale, conf.token_times,
                                 v[FG_RUN_OUT], err, sizeof(err))
           != 0)
    {
        fg_load_die(1, "%s", err);
    }

    fg_load_print_summary(&tr, &sum, v[FG_RUN_OUT]);

    fg_load_results_free(res, tr.n);
    curl_slist_free_all(conf.req.headers);
    free(stages);
    fg_sim_trace_free(&tr);

    return 0;
}


enum {
    FG_ANALYZE_RESULTS, FG_ANALYZE_SPEED, FG_ANALYZE_TARGET,
    FG_ANALYZE_SCALE, FG_ANALYZE_COST, FG_ANALYZE_WEIGHTED,
    FG_ANALYZE_DIR, FG_ANALYZE_BIN, FG_ANALYZE_N
};

static const struct option  fg_load_analyze_options[] = {
    FG_SIM_OPT_VALUE("results", FG_ANALYZE_RESULTS),
    FG_SIM_OPT_VALUE("reading-speed", FG_ANALYZE_SPEED),
    FG_SIM_OPT_VALUE("ttft-target", FG_ANALYZE_TARGET),
    FG_SIM_OPT_VALUE("time-scale", FG_ANALYZE_SCALE),
    FG_SIM_OPT_VALUE("cost", FG_ANALYZE_COST),
    FG_SIM_OPT_FLAG("weighted", FG_ANALYZE_WEIGHTED),
    FG_SIM_OPT_VALUE("series-dir", FG_ANALYZE_DIR),
    FG_SIM_OPT_VALUE("bin", FG_ANALYZE_BIN),
    FG_SIM_OPT_HELP,
    FG_SIM_OPT_END
};


/* analyze's options into lconf (its cost too), each checked */
static void
fg_load_analyze_options_conf(const char **v, fg_sim_latency_conf_t *lconf)
{
    struct stat  st;
    const char  *dir;

    if (v[FG_ANALYZE_RESULTS] == NULL) {
        fg_load_die(2, "option --results is required");
    }

    fg_sim_latency_conf_init(lconf);

    if (v[FG_ANALYZE_SPEED] != NULL) {
        lconf->reading_speed = fg_load_number(v[FG_ANALYZE_SPEED],
                                              "reading-speed", 1e-3, 1e6);
    }

    if (v[FG_ANALYZE_TARGET] != NULL) {
        lconf->ttft_target = fg_load_number(v[FG_ANALYZE_TARGET],
                                            "ttft-target", 1e-6, 1e6);
    }

    if (v[FG_ANALYZE_BIN] != NULL) {
        lconf->bin = fg_load_number(v[FG_ANALYZE_BIN], "bin", 1e-3, 1e6);
    }

    lconf->cost = fg_sim_opts_cost(FG_LOAD_PROG, v[FG_ANALYZE_COST]);

    dir = v[FG_ANALYZE_DIR];

    if (dir != NULL && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fg_load_die(2, "--series-dir: \"%s\" is not a directory", dir);
    }
}


/* --time-scale: the run's times divided by it, back on the trace's clock */
static void
fg_load_scale_times(fg_sim_trace_t *tr, fg_sim_result_t *results,
    fg_sim_token_times_t *times, double scale)
{
    size_t  i;

    for (i = 0; i < tr->n; i++) {
        tr->reqs[i].t /= scale;

        if (results[i].status == FG_SIM_OK) {
            results[i].first_token /= scale;
            results[i].finish /= scale;
        }
    }

    for (i = 0; times->n > 0 && i < times->start[times->n]; i++) {
        times->times[i] /= scale;
    }
}


/* {"fairness": fairgate-sim analyze's figures, "latency": ...} on stdout */
static void
fg_load_analyze_print(const fg_sim_metrics_t *m, const fg_sim_latency_t *lat,
    const fg_sim_trace_t *tr, const fg_sim_latency_conf_t *lconf)
{
    char    *text;
    json_t  *root, *part;

    root = json_object();

    text = fg_sim_metrics_json(m, tr);
    part = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_object_set_new(root, "fairness", part);

    text = fg_sim_latency_json(lat, tr, lconf);
    part = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_object_set_new(root, "latency", part);

    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER
                            | JSON_REAL_PRECISION(10));
    if (text == NULL) {
        fg_load_die(1, "out of memory");
    }

    printf("%s\n", text);

    free(text);
    json_decref(root);
}


static int
fg_load_main_analyze(int argc, char **argv)
{
    char                   err[FG_LOAD_ERRLEN];
    const char            *v[FG_ANALYZE_N] = { NULL };
    fg_sim_trace_t         tr;
    fg_sim_result_t       *results;
    fg_sim_metrics_t       m;
    fg_sim_latency_t       lat;
    fg_sim_token_times_t   times;
    fg_sim_latency_conf_t  lconf;

    fg_load_parse(argc, argv, fg_load_analyze_options, v, NULL);
    fg_load_analyze_options_conf(v, &lconf);

    fg_sim_trace_init(&tr);

    if (fg_sim_results_read_times(&tr, &results, &times,
                                  v[FG_ANALYZE_RESULTS], err, sizeof(err))
        != 0)
    {
        fg_load_die(1, "%s", err);
    }

    if (v[FG_ANALYZE_SCALE] != NULL) {
        fg_load_scale_times(&tr, results, &times,
                            fg_load_number(v[FG_ANALYZE_SCALE], "time-scale",
                                           1e-6, 1e6));
    }

    if (fg_sim_metrics_compute(&m, &tr, results, &lconf.cost,
                               v[FG_ANALYZE_WEIGHTED] != NULL)
        != 0
        || fg_sim_latency_compute(&lat, &tr, results, &times, &lconf) != 0)
    {
        fg_load_die(1, "out of memory");
    }

    if (v[FG_ANALYZE_DIR] != NULL
        && fg_sim_latency_write_series(&lat, &tr, results, &lconf,
                                       v[FG_ANALYZE_DIR], err, sizeof(err))
           != 0)
    {
        fg_load_die(1, "%s", err);
    }

    fg_load_analyze_print(&m, &lat, &tr, &lconf);

    fg_sim_metrics_free(&m);
    fg_sim_latency_free(&lat);
    fg_sim_token_times_free(&times);
    free(results);
    fg_sim_trace_free(&tr);

    return 0;
}


int
main(int argc, char **argv)
{
    int  rc;

    if (argc < 2) {
        fputs(fg_load_usage, stderr);
        return 2;
    }

    /* a subcommand's name stands as its argv[0] */
    if (strcmp(argv[1], "analyze") == 0) {
        return fg_load_main_analyze(argc - 1, argv + 1);
    }

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fg_load_die(1, "curl_global_init() failed");
    }

    rc = fg_load_main_run(argc, argv);

    curl_global_cleanup();

    return rc;
}
