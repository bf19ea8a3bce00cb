
/*
 * fairgate: latency and Andes's QoE, from a run's results.
 */


#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_qoe.h"
#include "fg_sim_latency.h"


#define FG_SIM_MAX_BINS  100000


void
fg_sim_latency_conf_init(fg_sim_latency_conf_t *conf)
{
    memset(conf, 0, sizeof(fg_sim_latency_conf_t));

    conf->reading_speed = 4.8;
    conf->prefill_rate = 5000.0;
    fg_cost_linear(&conf->cost, 1.0, 2.0);
}


/*
 * Token i came at times[i], or, without times, at the i-th of n instants
 * spread evenly over [first, finish]; fg_qoe.h does the sums.
 */
static double
fg_sim_qoe_core(double arrival, const double *times, size_t n, double first,
    double finish, double target, double speed)
{
    size_t           i;
    fg_qoe_t         q;
    fg_qoe_expect_t  e;

    e.ttft = target;
    e.speed = speed;
    fg_qoe_init(&q, &e, arrival);

    for (i = 0; i < n; i++) {
        fg_qoe_token(&q, times != NULL ? times[i]
                         : n > 1 ? first + (finish - first) * (double) i
                                           / (n - 1)
                         : first);
    }

    return fg_qoe_value(&q);
}


double
fg_sim_qoe(double arrival, const double *delivered, size_t n,
    double ttft_target, double reading_speed)
{
    return fg_sim_qoe_core(arrival, delivered, n, 0.0, 0.0, ttft_target,
                           reading_speed);
}


double
fg_sim_percentile(const double *sorted, size_t n, double p)
{
    size_t  k;

    if (n == 0) {
        return 0.0;
    }

    k = (size_t) ceil(p * (double) n);

    return sorted[k > 0 ? (k > n ? n : k) - 1 : 0];
}


int
fg_sim_cmp_double(const void *a, const void *b)
{
    double  x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}


/* the stats of the requests of client c, or of all when c is -1 */
/* p50, p90 and p99 of v over the served requests (of client c, or all) */
static void
fg_sim_latency_pcts(const fg_sim_trace_t *tr, const fg_sim_result_t *results,
    int64_t c, const double *v, double *buf, double *p50, double *p90,
    double *p99)
{
    size_t  i, k;

    for (i = 0, k = 0; i < tr->n; i++) {
        if ((c < 0 || tr->reqs[i].client == (uint32_t) c)
            && results[i].status == FG_SIM_OK)
        {
            buf[k++] = v[i];
        }
    }

    qsort(buf, k, sizeof(double), fg_sim_cmp_double);

    *p50 = fg_sim_percentile(buf, k, 0.50);
    *p90 = fg_sim_percentile(buf, k, 0.90);
    *p99 = fg_sim_percentile(buf, k, 0.99);
}


static void
fg_sim_latency_stats(fg_sim_latency_t *lat, const fg_sim_trace_t *tr,
    const fg_sim_result_t *results, int64_t c, double *buf,
    fg_sim_latency_stats_t *st)
{
    double               tds, dt, sum_tds;
    size_t               i, ntds;
    const fg_sim_req_t  *r;

    memset(st, 0, sizeof(fg_sim_latency_stats_t));

    sum_tds = 0.0;
    ntds = 0;

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];

        if (c >= 0 && r->client != (uint32_t) c) {
            continue;
        }

        st->sent++;
        st->qoe_mean += lat->qoe[i];
        st->qoe_good += lat->qoe[i] >= FG_SIM_QOE_GOOD;

        fg_sim_outcome_count(&st->count, results[i].status);

        if (results[i].status != FG_SIM_OK) {
            continue;
        }

        st->ttft_mean += lat->ttft[i];
        st->e2e_mean += lat->e2e[i];

        dt = results[i].finish - results[i].first_token;

        if (r->output_tokens > 1 && dt > 0.0) {
            tds = (r->output_tokens - 1) / dt;
            sum_tds += tds;
            ntds++;
        }
    }

    if (st->sent) {
        st->qoe_mean /= st->sent;
        st->qoe_good /= st->sent;
    }

    if (ntds) {
        st->tds_mean = sum_tds / ntds;
    }

    if (st->count.served == 0) {
        return;
    }

    st->ttft_mean /= st->count.served;
    st->e2e_mean /= st->count.served;

    fg_sim_latency_pcts(tr, results, c, lat->ttft, buf, &st->ttft_p50,
                        &st->ttft_p90, &st->ttft_p99);
    fg_sim_latency_pcts(tr, results, c, lat->e2e, buf, &st->e2e_p50,
                        &st->e2e_p90, &st->e2e_p99);
}


int
fg_sim_latency_compute(fg_sim_latency_t *lat, const fg_sim_trace_t *tr,
    const fg_sim_result_t *results, const fg_sim_token_times_t *times,
    const fg_sim_latency_conf_t *conf)
{
    double                  target, speed, *buf;
    size_t                  i, k;
    uint32_t                c;
    const fg_sim_req_t     *r;
    const fg_sim_result_t  *res;

    memset(lat, 0, sizeof(fg_sim_latency_t));

    lat->n = tr->n;
    lat->nclients = tr->nclients;
    lat->clients = calloc(tr->nclients + 1, sizeof(fg_sim_latency_stats_t));
    lat->ttft = calloc(tr->n + 1, sizeof(double));
    lat->e2e = calloc(tr->n + 1, sizeof(double));
    lat->qoe = calloc(tr->n + 1, sizeof(double));
    buf = calloc(tr->n + 1, sizeof(double));

    if (lat->clients == NULL || lat->ttft == NULL || lat->e2e == NULL
        || lat->qoe == NULL || buf == NULL)
    {
        free(buf);
        fg_sim_latency_free(lat);
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];
        res = &results[i];

        lat->ttft[i] = -1.0;
        lat->e2e[i] = -1.0;
        lat->qoe[i] = 0.0;

        if (res->status != FG_SIM_OK) {
            continue;
        }

        lat->ttft[i] = res->first_token - r->t;
        lat->e2e[i] = res->finish - r->t;

        target = conf->ttft_target > 0.0
                 ? conf->ttft_target
                 : fmax(r->input_tokens / conf->prefill_rate, 1.0);
        speed = conf->reading_speed;

        /* the request's own expectations first, as the simulator's */
        (void) fg_sim_req_expect(r, &target, &speed);

        k = times != NULL && i < times->n
            ? times->start[i + 1] - times->start[i] : 0;

        lat->qoe[i] = k > 0
            ? fg_sim_qoe_core(r->t, times->times + times->start[i], k, 0, 0,
                              target, speed)
            : fg_sim_qoe_core(r->t, NULL, r->output_tokens, res->first_token,
                              res->finish, target, speed);
    }

    fg_sim_latency_stats(lat, tr, results, -1, buf, &lat->all);

    for (c = 0; c < tr->nclients; c++) {
        fg_sim_latency_stats(lat, tr, results, c, buf, &lat->clients[c]);
    }

    free(buf);

    return 0;
}


void
fg_sim_latency_free(fg_sim_latency_t *lat)
{
    free(lat->clients);
    free(lat->ttft);
    free(lat->e2e);
    free(lat->qoe);

    memset(lat, 0, sizeof(fg_sim_latency_t));
}


json_t *
fg_sim_outcomes_json(json_t *head, uint64_t sent, const fg_sim_outcomes_t *o,
    json_t *tail)
{
    json_t  *counts;

    counts = json_pack("{sIsIsIsIsIsI}",
                       "sent", (json_int_t) sent,
                       "served", (json_int_t) o->served,
                       "rejected", (json_int_t) o->rejected,
                       "timeout", (json_int_t) o->timeout,
                       "errors", (json_int_t) o->errors,
                       "skipped", (json_int_t) o->skipped);

    if (head == NULL || counts == NULL || tail == NULL
        || json_object_update(head, counts) != 0
        || json_object_update(head, tail) != 0)
    {
        json_decref(head);
        head = NULL;
    }

    json_decref(counts);
    json_decref(tail);

    return head;
}


static json_t *
fg_sim_latency_stats_json(const fg_sim_latency_stats_t *st)
{
    return fg_sim_outcomes_json(json_object(), st->sent, &st->count,
                 json_pack("{s{sfsfsfsf}s{sfsfsfsf}sfsfsf}",
                     "ttft", "mean", st->ttft_mean, "p50", st->ttft_p50,
                     "p90", st->ttft_p90, "p99", st->ttft_p99,
                     "e2e", "mean", st->e2e_mean, "p50", st->e2e_p50,
                     "p90", st->e2e_p90, "p99", st->e2e_p99,
                     "tds_mean", st->tds_mean,
                     "qoe_mean", st->qoe_mean,
                     "qoe_good", st->qoe_good));
}


char *
fg_sim_latency_json(const fg_sim_latency_t *lat, const fg_sim_trace_t *tr,
    const fg_sim_latency_conf_t *conf)
{
    char      *text;
    json_t    *root, *clients, *target;
    uint32_t   c;

    root = json_object();
    clients = json_object();
    target = conf->ttft_target > 0.0 ? json_real(conf->ttft_target)
                                     : json_string("max(input/5000,1)");

    if (root == NULL || clients == NULL || target == NULL) {
        json_decref(root);
        json_decref(clients);
        json_decref(target);
        return NULL;
    }

    json_object_set_new(root, "reading_speed",
                        json_real(conf->reading_speed));
    json_object_set_new(root, "ttft_target", target);
    json_object_set_new(root, "all", fg_sim_latency_stats_json(&lat->all));

    for (c = 0; c < lat->nclients; c++) {
        json_object_set_new(clients, tr->clients[c].name,
                            fg_sim_latency_stats_json(&lat->clients[c]));
    }

    json_object_set_new(root, "clients", clients);

    text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    json_decref(root);

    return text;
}


/* what the series files are written from */
typedef struct {
    const fg_sim_latency_t       *lat;
    const fg_sim_trace_t         *tr;
    const fg_sim_result_t        *results;
    const fg_sim_latency_conf_t  *conf;
} fg_sim_latency_series_t;


/* service.dat: each client's service rate over time */
static int
fg_sim_latency_service(const fg_sim_latency_series_t *s, FILE *fp)
{
    double                        end, bin, h, l, r, *rate;
    size_t                        i, nbins, b, b0, b1;
    uint32_t                      c;
    const fg_sim_trace_t         *tr;
    const fg_sim_result_t        *res, *results;
    const fg_sim_latency_conf_t  *conf;

    tr = s->tr;
    results = s->results;
    conf = s->conf;
    end = 0.0;

    for (i = 0; i < tr->n; i++) {
        end = fmax(end, results[i].status == FG_SIM_OK ? results[i].finish
                                                       : tr->reqs[i].t);
    }

    bin = conf->bin > 0.0 ? conf->bin : fmax(end / 100.0, 1e-3);
    nbins = (size_t) fmin(ceil(end / bin) + 1, FG_SIM_MAX_BINS);
    bin = fmax(bin, end / (nbins - 1 > 0 ? nbins - 1 : 1));

    rate = calloc(nbins * (tr->nclients + 1), sizeof(double));
    if (rate == NULL) {
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        res = &results[i];

        if (res->status != FG_SIM_OK) {
            continue;
        }

        /* input as the VTC metric counts it: a prefix cache's hits free */
        c = tr->reqs[i].client;
        h = fg_cost_eval(&conf->cost, tr->reqs[i].input_tokens
                         - (res->cached_tokens < tr->reqs[i].input_tokens
                            ? res->cached_tokens : tr->reqs[i].input_tokens),
                         tr->reqs[i].output_tokens);

        b0 = (size_t) fmin(res->first_token / bin, nbins - 1);
        b1 = (size_t) fmin(res->finish / bin, nbins - 1);

        if (!(res->finish > res->first_token)) {
            rate[b0 * tr->nclients + c] += h / bin;
            continue;
        }

        for (b = b0; b <= b1; b++) {
            l = fmax(b * bin, res->first_token);
            r = fmin((b + 1) * bin, res->finish);

            if (r > l) {
                rate[b * tr->nclients + c] += h * (r - l)
                                              / (res->finish
                                                 - res->first_token)
                                              / bin;
            }
        }
    }

    fputs("# t", fp);

    for (c = 0; c < tr->nclients; c++) {
        fprintf(fp, " service:%s", tr->clients[c].name);
    }

    fputc('\n', fp);

    for (b = 0; b < nbins; b++) {
        fprintf(fp, "%.6f", (b + 0.5) * bin);

        for (c = 0; c < tr->nclients; c++) {
            fprintf(fp, " %.3f", rate[b * tr->nclients + c]);
        }

        fputc('\n', fp);
    }

    free(rate);

    return 0;
}


/* clients.txt: the clients' names, one a line, in their order */
static int
fg_sim_latency_clients(const fg_sim_latency_series_t *s, FILE *fp)
{
    uint32_t  c;

    for (c = 0; c < s->tr->nclients; c++) {
        fprintf(fp, "%s\n", s->tr->clients[c].name);
    }

    return 0;
}


/* response.dat: each served request's arrival, TTFT, e2e and QoE */
static int
fg_sim_latency_response(const fg_sim_latency_series_t *s, FILE *fp)
{
    size_t                   i, k;
    uint32_t                 c;
    const fg_sim_trace_t    *tr;
    const fg_sim_latency_t  *lat;

    tr = s->tr;
    lat = s->lat;

    /* blocks apart by two blank lines: gnuplot's "index c" */
    for (c = 0; c < tr->nclients; c++) {
        fprintf(fp, "# %s: arrival ttft e2e qoe\n", tr->clients[c].name);

        for (i = 0, k = 0; i < tr->n; i++) {
            if (tr->reqs[i].client == c
                && s->results[i].status == FG_SIM_OK)
            {
                fprintf(fp, "%.6f %.6f %.6f %.4f\n", tr->reqs[i].t,
                        lat->ttft[i], lat->e2e[i], lat->qoe[i]);
                k++;
            }
        }

        /* an empty block would shift gnuplot's index of the next ones */
        if (k == 0) {
            fputs("NaN NaN NaN NaN\n", fp);
        }

        fputs("\n\n", fp);
    }

    return 0;
}


/* cdf.dat: each client's TTFT and e2e distributions */
static int
fg_sim_latency_cdf(const fg_sim_latency_series_t *s, FILE *fp)
{
    double                  *ttft, *e2e;
    size_t                   i, k, j;
    uint32_t                 c;
    const fg_sim_trace_t    *tr;
    const fg_sim_latency_t  *lat;

    tr = s->tr;
    lat = s->lat;

    ttft = malloc((tr->n + 1) * sizeof(double));
    e2e = malloc((tr->n + 1) * sizeof(double));

    if (ttft == NULL || e2e == NULL) {
        free(ttft);
        free(e2e);
        return -1;
    }

    for (c = 0; c < tr->nclients; c++) {
        for (i = 0, k = 0; i < tr->n; i++) {
            if (tr->reqs[i].client == c
                && s->results[i].status == FG_SIM_OK)
            {
                ttft[k] = lat->ttft[i];
                e2e[k++] = lat->e2e[i];
            }
        }

        qsort(ttft, k, sizeof(double), fg_sim_cmp_double);
        qsort(e2e, k, sizeof(double), fg_sim_cmp_double);

        fprintf(fp, "# %s: fraction ttft e2e\n", tr->clients[c].name);

        for (j = 0; j < k; j++) {
            fprintf(fp, "%.6f %.6f %.6f\n", (double) (j + 1) / k, ttft[j],
                    e2e[j]);
        }

        if (k == 0) {
            fputs("NaN NaN NaN\n", fp);
        }

        fputs("\n\n", fp);
    }

    free(ttft);
    free(e2e);

    return 0;
}


/* the series files, each written by one function: 0, or -1 out of memory */
static const struct {
    const char  *name;
    int        (*write)(const fg_sim_latency_series_t *s, FILE *fp);
} fg_sim_latency_files[] = {
    { "clients.txt", fg_sim_latency_clients },
    { "service.dat", fg_sim_latency_service },
    { "response.dat", fg_sim_latency_response },
    { "cdf.dat", fg_sim_latency_cdf }
};


int
fg_sim_latency_write_series(const fg_sim_latency_t *lat,
    const fg_sim_trace_t *tr, const fg_sim_result_t *results,
    const fg_sim_latency_conf_t *conf, const char *dir, char *err,
    size_t size)
{
    FILE                     *fp;
    char                      path[4096];
    size_t                    i;
    fg_sim_latency_series_t   s;

    s.lat = lat;
    s.tr = tr;
    s.results = results;
    s.conf = conf;

    for (i = 0; i < sizeof(fg_sim_latency_files)
                    / sizeof(fg_sim_latency_files[0]); i++)
    {
        snprintf(path, sizeof(path), "%s/%s", dir,
                 fg_sim_latency_files[i].name);

        fp = fopen(path, "w");
        if (fp == NULL) {
            fg_sim_error(err, size, "%s: %s", path, strerror(errno));
            return -1;
        }

        if (fg_sim_latency_files[i].write(&s, fp) != 0) {
            fclose(fp);
            fg_sim_error(err, size, "out of memory");
            return -1;
        }

        if (ferror(fp) | fclose(fp)) {
            fg_sim_error(err, size, "%s: write error", path);
            return -1;
        }
    }

    return 0;
}
