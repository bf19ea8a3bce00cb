
/*
 * fairgate: fairgate-load, the load generator and trace replayer.
 *
 * Exit status: 0 done (whatever became of the requests), 1 the run failed
 * (unreadable trace, results not written), 2 a usage error.
 */


#include <errno.h>
#include <inttypes.h>
#include <math.h>
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


#define FG_LOAD_ERRLEN    1024
#define FG_LOAD_HEADERS   64


typedef fg_sim_opt_t  fg_load_opt_t;


static volatile sig_atomic_t  fg_load_stop;

static const char            *fg_load_headers[FG_LOAD_HEADERS];
static size_t                 fg_load_nheaders;


static const char  fg_load_usage[] =
"usage:\n"
"  fairgate-load --trace FILE --url URL --out RESULTS [--time-scale X]\n"
"               [--model NAME] [--stream on|off] [--no-ignore-eos]\n"
"               [--key-prefix P] [--header 'Name: value' ...]\n"
"               [--token-times] [--max-seconds S] [--request-timeout S]\n"
"               [--max-connections N] [--open-loop-stages] [--quiet]\n"
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
"  --series-dir       write gnuplot data there (t/load/latency-report.sh\n"
"                     plots it)\n"
"  --bin              seconds per bin of the service series (span / 100)\n";


static void
fg_load_die(int status, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    fg_sim_opts_vdie("fairgate-load", status, fmt, args);
}


/* --header may come again and again; every other option at most once */
static void
fg_load_parse_opts(int argc, char **argv, fg_load_opt_t *opts)
{
    fg_sim_opt_list_t  headers;

    headers.values = fg_load_headers;
    headers.n = fg_load_nheaders;
    headers.max = FG_LOAD_HEADERS;

    if (fg_sim_opts_parse("fairgate-load", argc, argv, opts, &headers)) {
        fputs(fg_load_usage, stdout);
        exit(0);
    }

    fg_load_nheaders = headers.n;
}


static double
fg_load_number(const char *text, const char *name, double min, double max)
{
    char    *end;
    double   v;

    v = strtod(text, &end);

    if (end == text || *end != '\0' || !(v >= min && v <= max)) {
        fg_load_die(2, "--%s: \"%s\" is not a number in [%g, %g]", name,
                    text, min, max);
    }

    return v;
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


/* client names go in X-User headers: no control characters */
static void
fg_load_check_clients(const fg_sim_trace_t *tr, const char *path)
{
    uint32_t              c;
    const unsigned char  *p;

    for (c = 0; c < tr->nclients; c++) {
        for (p = (const unsigned char *) tr->clients[c].name; *p; p++) {
            if (*p < 0x20 || *p == 0x7f) {
                fg_load_die(1, "%s: client \"%s\" holds a control "
                            "character: it cannot go in a header", path,
                            tr->clients[c].name);
            }
        }
    }
}


static int
fg_load_main_run(int argc, char **argv)
{
    FILE               *fp;
    char                err[FG_LOAD_ERRLEN];
    size_t              i;
    double              last;
    uint32_t            deepest;
    uint32_t           *stages;
    const char         *trace, *url, *out, *scale, *model, *stream, *no_eos,
                       *prefix, *times, *max_s, *timeout, *conns, *quiet,
                       *open_loop;
    struct rlimit       rl;
    fg_sim_trace_t      tr;
    fg_load_conf_t      conf;
    fg_load_result_t   *res;
    fg_load_summary_t   sum;
    struct curl_slist  *headers, *more;
    fg_load_opt_t       opts[] = {
        { "trace", &trace, 0 }, { "url", &url, 0 }, { "out", &out, 0 },
        { "time-scale", &scale, 0 }, { "model", &model, 0 },
        { "stream", &stream, 0 }, { "no-ignore-eos", &no_eos, 1 },
        { "key-prefix", &prefix, 0 }, { "header", NULL, 0 },
        { "token-times", &times, 1 }, { "max-seconds", &max_s, 0 },
        { "request-timeout", &timeout, 0 },
        { "max-connections", &conns, 0 }, { "quiet", &quiet, 1 },
        { "open-loop-stages", &open_loop, 1 }, { NULL, NULL, 0 }
    };

    trace = url = out = scale = model = stream = no_eos = prefix = times
          = max_s = timeout = conns = quiet = open_loop = NULL;

    fg_load_parse_opts(argc, argv, opts);

    if (trace == NULL || url == NULL || out == NULL) {
        fg_load_die(2, "option --%s is required",
                    trace == NULL ? "trace" : url == NULL ? "url" : "out");
    }

    fg_load_conf_init(&conf);
    fg_load_check_url(url);
    conf.url = url;

    if (scale != NULL) {
        conf.time_scale = fg_load_number(scale, "time-scale", 1e-6, 1e6);
    }

    if (model != NULL) {
        if (*model == '\0') {
            fg_load_die(2, "--model: empty");
        }

        conf.req.model = model;
    }

    if (stream != NULL) {
        if (strcmp(stream, "on") != 0 && strcmp(stream, "off") != 0) {
            fg_load_die(2, "--stream: \"%s\" is not on or off", stream);
        }

        conf.req.stream = strcmp(stream, "on") == 0;
    }

    conf.req.ignore_eos = no_eos == NULL;

    if (prefix != NULL) {
        for (i = 0; prefix[i]; i++) {
            if (prefix[i] <= 0x20 || prefix[i] >= 0x7f) {
                fg_load_die(2, "--key-prefix: a key is visible ASCII");
            }
        }

        conf.req.key_prefix = prefix;
    }

    headers = NULL;

    for (i = 0; i < fg_load_nheaders; i++) {
        if (fg_load_req_header_ok(fg_load_headers[i]) != 0) {
            fg_load_die(2, "--header: \"%s\" is not \"Name: value\" (a "
                        "token, a colon, no control characters)",
                        fg_load_headers[i]);
        }

        more = curl_slist_append(headers, fg_load_headers[i]);
        if (more == NULL) {
            fg_load_die(1, "out of memory");
        }

        headers = more;
    }

    conf.req.headers = headers;
    conf.token_times = times != NULL;

    if (timeout != NULL) {
        conf.request_timeout = fg_load_number(timeout, "request-timeout",
                                              1e-3, 1e6);
    }

    if (conns != NULL) {
        conf.max_connections = (long) fg_load_number(conns,
                                                     "max-connections", 1,
                                                     100000);
    }

    if (max_s != NULL) {
        conf.max_seconds = fg_load_number(max_s, "max-seconds", 1e-3, 1e7);
    }

    conf.progress = quiet == NULL && isatty(STDERR_FILENO);
    conf.open_loop_stages = open_loop != NULL;
    conf.stop = &fg_load_stop;

    fg_sim_trace_init(&tr);

    if (fg_sim_trace_read(&tr, trace, err, sizeof(err)) != 0) {
        fg_load_die(1, "%s", err);
    }

    fg_load_check_clients(&tr, trace);

    /* X-Fairgate-Stages: each interaction's, from the whole trace */
    stages = fg_load_req_stages(&tr);
    if (stages == NULL) {
        fg_load_die(1, "out of memory");
    }

    conf.req.stages = stages;

    last = tr.reqs[tr.n - 1].t * conf.time_scale;

    /* each stage may wait for the one before to time out */
    deepest = 1;

    for (i = 0; !conf.open_loop_stages && i < tr.n; i++) {
        if (tr.reqs[i].interaction != 0
            && stages[tr.reqs[i].interaction] > deepest)
        {
            deepest = stages[tr.reqs[i].interaction];
        }
    }

    if (conf.max_seconds < 0.0) {
        conf.max_seconds = last + conf.request_timeout * deepest + 10.0;
    }

    /* a connection a request in flight, and then some */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
    }

    signal(SIGINT, fg_load_on_signal);
    signal(SIGTERM, fg_load_on_signal);
    signal(SIGPIPE, SIG_IGN);

    res = calloc(tr.n, sizeof(fg_load_result_t));
    if (res == NULL) {
        fg_load_die(1, "out of memory");
    }

    if (fg_load_run(&conf, &tr, res, &sum, err, sizeof(err)) != 0
        || fg_load_results_write(&tr, res, conf.time_scale, conf.token_times,
                                 out, err, sizeof(err))
           != 0)
    {
        fg_load_die(1, "%s", err);
    }

    if (sum.unsent || sum.cut) {
        fprintf(stderr, "fairgate-load: stopped after %.1f s%s: %zu "
                "requests in flight given up (timeout), %zu not sent (no "
                "line in the results)\n", sum.elapsed,
                fg_load_stop ? " by a signal" : " (--max-seconds)", sum.cut,
                sum.unsent);
    }

    /* stdout may be the results */
    fp = strcmp(out, "-") == 0 ? stderr : stdout;

    fprintf(fp, "{\"requests\": %zu, \"sent\": %zu, \"served\": %zu, "
            "\"rejected\": %zu, \"timeout\": %zu, \"errors\": %zu, "
            "\"skipped\": %zu, \"not_sent\": %zu, \"elapsed\": %.3f, "
            "\"arrival_lag_max\": %.6f, \"arrival_lag_p99\": %.6f, "
            "\"arrival_lag_mean\": %.6f}\n",
            tr.n, sum.sent, sum.served, sum.rejected, sum.timeout,
            sum.errors, sum.skipped, sum.unsent, sum.elapsed, sum.lag_max,
            sum.lag_p99,
            sum.lag_mean);

    fg_load_results_free(res, tr.n);
    curl_slist_free_all(headers);
    free(stages);
    fg_sim_trace_free(&tr);

    return 0;
}


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


static int
fg_load_main_analyze(int argc, char **argv)
{
    char                   err[FG_LOAD_ERRLEN], *text;
    json_t                *root, *part;
    fg_cost_t              cost;
    const char            *path, *speed, *target, *scale, *cost_s,
                          *weighted, *dir, *bin;
    struct stat            st;
    fg_sim_trace_t         tr;
    fg_sim_result_t       *results;
    fg_sim_metrics_t       m;
    fg_sim_latency_t       lat;
    fg_sim_token_times_t   times;
    fg_sim_latency_conf_t  lconf;
    fg_load_opt_t          opts[] = {
        { "results", &path, 0 }, { "reading-speed", &speed, 0 },
        { "ttft-target", &target, 0 }, { "time-scale", &scale, 0 },
        { "cost", &cost_s, 0 }, { "weighted", &weighted, 1 },
        { "series-dir", &dir, 0 }, { "bin", &bin, 0 },
        { NULL, NULL, 0 }
    };

    path = speed = target = scale = cost_s = weighted = dir = bin = NULL;

    fg_load_parse_opts(argc, argv, opts);

    if (fg_load_nheaders > 0) {
        fg_load_die(2, "unknown option \"--header\"");
    }

    if (path == NULL) {
        fg_load_die(2, "option --results is required");
    }

    fg_sim_latency_conf_init(&lconf);

    if (speed != NULL) {
        lconf.reading_speed = fg_load_number(speed, "reading-speed", 1e-3,
                                             1e6);
    }

    if (target != NULL) {
        lconf.ttft_target = fg_load_number(target, "ttft-target", 1e-6, 1e6);
    }

    if (bin != NULL) {
        lconf.bin = fg_load_number(bin, "bin", 1e-3, 1e6);
    }

    if (fg_cost_parse(&cost, cost_s ? cost_s : "linear") != 0) {
        fg_load_die(2, "--cost: \"%s\" is not linear, linear:WP,WQ (both "
                    "> 0) or profiled", cost_s);
    }

    lconf.cost = cost;

    if (dir != NULL && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fg_load_die(2, "--series-dir: \"%s\" is not a directory", dir);
    }

    fg_sim_trace_init(&tr);

    if (fg_sim_results_read_times(&tr, &results, &times, path, err,
                                  sizeof(err))
        != 0)
    {
        fg_load_die(1, "%s", err);
    }

    if (scale != NULL) {
        fg_load_scale_times(&tr, results, &times,
                            fg_load_number(scale, "time-scale", 1e-6, 1e6));
    }

    if (fg_sim_metrics_compute(&m, &tr, results, &cost, weighted != NULL)
        != 0
        || fg_sim_latency_compute(&lat, &tr, results, &times, &lconf) != 0)
    {
        fg_load_die(1, "out of memory");
    }

    if (dir != NULL
        && fg_sim_latency_write_series(&lat, &tr, results, &lconf, dir, err,
                                       sizeof(err))
           != 0)
    {
        fg_load_die(1, "%s", err);
    }

    root = json_object();

    text = fg_sim_metrics_json(&m, &tr);
    part = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_object_set_new(root, "fairness", part);

    text = fg_sim_latency_json(&lat, &tr, &lconf);
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

    if (strcmp(argv[1], "analyze") == 0) {
        return fg_load_main_analyze(argc - 2, argv + 2);
    }

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fg_load_die(1, "curl_global_init() failed");
    }

    rc = fg_load_main_run(argc - 1, argv + 1);

    curl_global_cleanup();

    return rc;
}
