
/*
 * fairgate: the VTC paper's fairness metric, from a run's results.
 */


#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_sim_latency.h"
#include "fg_sim_metrics.h"


/* the cached part of a request's input, as its result says */
static uint32_t
fg_sim_metrics_cached(const fg_sim_req_t *req, const fg_sim_result_t *res)
{
    if (res->status != FG_SIM_OK) {
        return 0;
    }

    return res->cached_tokens < req->input_tokens ? res->cached_tokens
                                                  : req->input_tokens;
}


/* the part of a served request's cost that falls in [l, r) */
static double
fg_sim_metrics_part(double cost, const fg_sim_result_t *res, double l,
    double r)
{
    double  overlap;

    if (res->finish > res->first_token) {
        overlap = fmin(r, res->finish) - fmax(l, res->first_token);
        return overlap > 0.0
               ? cost * overlap / (res->finish - res->first_token) : 0.0;
    }

    /* served in an instant: whole, where it happened */
    return res->first_token >= l && res->first_token < r ? cost : 0.0;
}


/* each client's share of the service in the windows */
static void
fg_sim_metrics_shares(fg_sim_metrics_t *m)
{
    double    total, *own;
    size_t    k;
    uint32_t  c;

    total = 0.0;

    for (c = 0; c < m->nclients; c++) {
        own = &m->clients[c].share;
        *own = 0.0;

        for (k = 0; k < FG_SIM_TICKS; k++) {
            *own += m->service[k * m->nclients + c];
        }

        total += *own;
    }

    for (c = 0; total > 0.0 && c < m->nclients; c++) {
        m->clients[c].share /= total;
    }
}


/* a served request's input, its cache hits, latency, and engine */
static void
fg_sim_metrics_served(fg_sim_metrics_t *m, const fg_sim_req_t *req,
    const fg_sim_result_t *res, double h)
{
    uint32_t                cached;
    fg_sim_client_stats_t  *c;
    fg_sim_engine_stats_t  *e;

    c = &m->clients[req->client];
    cached = fg_sim_metrics_cached(req, res);

    c->input_tokens += req->input_tokens;
    c->output_tokens += req->output_tokens;
    c->cached_tokens += cached;
    c->service += h;

    /* sums here, means once every request is in */
    c->ttft_mean += res->first_token - req->t;
    c->e2e_mean += res->finish - req->t;

    m->input_tokens += req->input_tokens;
    m->cached_tokens += cached;

    if (res->finish > m->last_finish) {
        m->last_finish = res->finish;
    }

    if (m->engines != NULL && res->engine != 0) {
        e = &m->engines[res->engine];
        e->served++;
        e->input_tokens += req->input_tokens;
        e->cached_tokens += cached;
    }
}


static void
fg_sim_metrics_tally(fg_sim_metrics_t *m, const fg_sim_trace_t *tr,
    const fg_sim_result_t *results, const fg_cost_t *cost)
{
    double                  h, l, r;
    size_t                  i, k, at;
    const fg_sim_req_t     *req;
    const fg_sim_result_t  *res;
    fg_sim_client_stats_t  *c;

    for (i = 0; i < tr->n; i++) {
        req = &tr->reqs[i];
        res = &results[i];
        c = &m->clients[req->client];

        /* input as DLPM charges it: the cached part is free */
        h = fg_cost_eval(cost,
                         req->input_tokens - fg_sim_metrics_cached(req, res),
                         req->output_tokens);

        c->sent++;

        fg_sim_outcome_count(&c->count, res->status);

        if (res->status == FG_SIM_OK) {
            fg_sim_metrics_served(m, req, res, h);
        }

        for (k = 0; k < FG_SIM_TICKS; k++) {
            l = m->centre[k] - FG_SIM_WINDOW / 2;
            r = m->centre[k] + FG_SIM_WINDOW / 2;
            at = k * m->nclients + req->client;

            if (req->t >= l && req->t < r) {
                m->rate[at] += h / FG_SIM_WINDOW;
            }

            if (res->status == FG_SIM_OK) {
                m->service[at] += fg_sim_metrics_part(h, res, l, r)
                                  / FG_SIM_WINDOW;
            }
        }
    }
}


/* whether user u (a string index, or nstrs + 1 + client) is abusive */
static int
fg_sim_metrics_abusive(const fg_sim_trace_t *tr, size_t u)
{
    size_t       len, n;
    const char  *name;

    name = u <= tr->nstrs ? fg_sim_trace_str_get(tr, (uint32_t) u)
                          : tr->clients[u - tr->nstrs - 1].name;
    len = strlen(name);
    n = sizeof(FG_SIM_ABUSIVE_SUFFIX) - 1;

    return len >= n && strcmp(name + len - n, FG_SIM_ABUSIVE_SUFFIX) == 0;
}


/*
 * What fg_sim_metrics_interactions() learns of each interaction and user,
 * indexed alike: strings 1 to nstrs, then clients without a user.
 */
typedef struct {
    size_t     n;
    uint8_t   *seen;         /* an interaction's, then a user's */
    uint8_t   *failed;       /* the interaction has a request not ok */
    uint64_t  *tokens;       /* served to the interaction */
    uint8_t   *served;       /* the user has a request ok */
    uint8_t   *ufailed;      /* ... one not ok */
    uint8_t   *uinter;       /* ... an interaction */
    uint8_t   *uaborted;     /* ... an interaction aborted */
    uint8_t   *udone;        /* ... an interaction completed */
} fg_sim_tally_t;


static void
fg_sim_tally_free(fg_sim_tally_t *t)
{
    free(t->seen);
    free(t->failed);
    free(t->served);
    free(t->ufailed);
    free(t->uinter);
    free(t->uaborted);
    free(t->udone);
    free(t->tokens);
}


static int
fg_sim_tally_init(fg_sim_tally_t *t, const fg_sim_trace_t *tr)
{
    size_t  n;

    n = (size_t) tr->nstrs + 1 + tr->nclients;

    t->n = n;
    t->seen = calloc(n, 1);
    t->failed = calloc(n, 1);
    t->served = calloc(n, 1);
    t->ufailed = calloc(n, 1);
    t->uinter = calloc(n, 1);
    t->uaborted = calloc(n, 1);
    t->udone = calloc(n, 1);
    t->tokens = calloc(n, sizeof(uint64_t));

    if (t->seen == NULL || t->failed == NULL || t->served == NULL
        || t->ufailed == NULL || t->uinter == NULL || t->uaborted == NULL
        || t->udone == NULL || t->tokens == NULL)
    {
        fg_sim_tally_free(t);
        return -1;
    }

    return 0;
}


/* the user of a request: its "user", else its client */
static size_t
fg_sim_tally_user(const fg_sim_trace_t *tr, const fg_sim_req_t *r)
{
    return r->user != 0 ? r->user : (size_t) tr->nstrs + 1 + r->client;
}


/* interactions: any request not ok aborts it */
static void
fg_sim_tally_interactions(fg_sim_tally_t *t, const fg_sim_trace_t *tr,
    const fg_sim_result_t *results)
{
    size_t               i;
    const fg_sim_req_t  *r;

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];

        if (r->interaction == 0) {
            continue;
        }

        t->seen[r->interaction] = 1;

        if (results[i].status == FG_SIM_OK) {
            t->tokens[r->interaction] += (uint64_t) r->input_tokens
                                         + r->output_tokens;

        } else {
            t->failed[r->interaction] = 1;
        }
    }
}


/* users: requests, and the interactions they sent */
static void
fg_sim_tally_requests(fg_sim_tally_t *t, fg_sim_metrics_t *m,
    const fg_sim_trace_t *tr, const fg_sim_result_t *results)
{
    size_t                 i, u;
    const fg_sim_req_t    *r;
    fg_sim_group_stats_t  *g[2];

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];
        u = fg_sim_tally_user(tr, r);

        g[0] = &m->all;
        g[1] = fg_sim_metrics_abusive(tr, u) ? &m->abusive : &m->normal;

        g[0]->requests++;
        g[1]->requests++;

        if (results[i].status == FG_SIM_OK) {
            g[0]->requests_ok++;
            g[1]->requests_ok++;
            t->served[u] = 1;

        } else {
            t->ufailed[u] = 1;
        }

        if (r->interaction == 0 || t->seen[r->interaction] != 1) {
            continue;
        }

        /* once an interaction: its first request counts it */
        t->seen[r->interaction] = 2;
        t->uinter[u] = 1;

        g[0]->interactions++;
        g[1]->interactions++;

        if (t->failed[r->interaction]) {
            t->uaborted[u] = 1;
            g[0]->interactions_aborted++;
            g[1]->interactions_aborted++;
            g[0]->tokens_wasted += t->tokens[r->interaction];
            g[1]->tokens_wasted += t->tokens[r->interaction];

        } else {
            t->udone[u] = 1;
            g[0]->interactions_completed++;
            g[1]->interactions_completed++;
        }
    }
}


/* each user once, into all and its group */
static void
fg_sim_tally_users(fg_sim_tally_t *t, fg_sim_metrics_t *m,
    const fg_sim_trace_t *tr)
{
    size_t                 i, u;
    fg_sim_group_stats_t  *g[2];

    memset(t->seen, 0, t->n);

    for (i = 0; i < tr->n; i++) {
        t->seen[fg_sim_tally_user(tr, &tr->reqs[i])] = 1;
    }

    for (u = 0; u < t->n; u++) {
        if (!t->seen[u]) {
            continue;
        }

        g[0] = &m->all;
        g[1] = fg_sim_metrics_abusive(tr, u) ? &m->abusive : &m->normal;

        for (i = 0; i < 2; i++) {
            g[i]->users++;
            g[i]->users_served += t->served[u];
            g[i]->users_ok_requests += !t->ufailed[u];
            g[i]->users_with_interactions += t->uinter[u];
            g[i]->users_ok_interactions += t->uinter[u] && !t->uaborted[u];
            g[i]->users_completing += t->udone[u];
        }
    }
}


/* interactions and users, by the trace's string indices */
static int
fg_sim_metrics_interactions(fg_sim_metrics_t *m, const fg_sim_trace_t *tr,
    const fg_sim_result_t *results)
{
    fg_sim_tally_t  t;

    if (fg_sim_tally_init(&t, tr) != 0) {
        return -1;
    }

    fg_sim_tally_interactions(&t, tr, results);
    fg_sim_tally_requests(&t, m, tr, results);
    fg_sim_tally_users(&t, m, tr);

    fg_sim_tally_free(&t);

    return 0;
}


static int
fg_sim_metrics_qoe(fg_sim_qoe_stats_t *st, const fg_sim_trace_t *tr,
    const fg_sim_result_t *results)
{
    size_t   i, n;
    double  *v;

    v = malloc((tr->n + 1) * sizeof(double));
    if (v == NULL) {
        return -1;
    }

    n = 0;

    for (i = 0; i < tr->n; i++) {
        st->preempt_requests += results[i].has_preemptions;
        st->preemptions += results[i].preemptions;

        if (results[i].has_qoe) {
            v[n++] = results[i].qoe;
            st->mean += results[i].qoe;
            st->share_095 += results[i].qoe >= FG_SIM_QOE_GOOD;
        }
    }

    if (n > 0) {
        qsort(v, n, sizeof(double), fg_sim_cmp_double);

        st->requests = n;
        st->mean /= n;
        st->share_095 /= n;
        st->p10 = fg_sim_percentile(v, n, 0.10);
        st->p50 = fg_sim_percentile(v, n, 0.50);
        st->p90 = fg_sim_percentile(v, n, 0.90);
    }

    free(v);

    return 0;
}


int
fg_sim_metrics_compute(fg_sim_metrics_t *m, const fg_sim_trace_t *tr,
    const fg_sim_result_t *results, const fg_cost_t *cost, int weighted)
{
    double    best, sum, d, s, w, tokens;
    size_t    i, k;
    uint32_t  c;

    memset(m, 0, sizeof(fg_sim_metrics_t));

    m->weighted = weighted ? 1 : 0;
    m->nclients = tr->nclients;
    m->clients = calloc(tr->nclients, sizeof(fg_sim_client_stats_t));
    m->service = calloc(FG_SIM_TICKS * tr->nclients, sizeof(double));
    m->rate = calloc(FG_SIM_TICKS * tr->nclients, sizeof(double));

    if (m->clients == NULL || m->service == NULL || m->rate == NULL) {
        fg_sim_metrics_free(m);
        return -1;
    }

    if (tr->n == 0) {
        return 0;
    }

    for (i = 0; i < tr->n && m->engines == NULL; i++) {
        if (results[i].engine != 0) {
            m->engines = calloc((size_t) tr->nstrs + 1,
                                sizeof(fg_sim_engine_stats_t));
            if (m->engines == NULL) {
                fg_sim_metrics_free(m);
                return -1;
            }
        }
    }

    m->first_arrival = tr->reqs[0].t;

    for (i = 0; i < tr->n; i++) {
        m->first_arrival = fmin(m->first_arrival, tr->reqs[i].t);
        m->last_arrival = fmax(m->last_arrival, tr->reqs[i].t);
    }

    for (k = 0; k < FG_SIM_TICKS; k++) {
        m->centre[k] = FG_SIM_WARMUP
                       + (double) k * m->last_arrival / FG_SIM_TICKS;
    }

    fg_sim_metrics_tally(m, tr, results, cost);

    for (c = 0; c < m->nclients; c++) {
        if (m->clients[c].count.served > 0) {
            m->clients[c].ttft_mean /= m->clients[c].count.served;
            m->clients[c].e2e_mean /= m->clients[c].count.served;
        }
    }

    if (m->input_tokens > 0) {
        m->cache_hit_rate = (double) m->cached_tokens / m->input_tokens;
    }

    /* in place: the series then shows what diff was computed from */
    for (c = 0; weighted && c < m->nclients; c++) {
        w = tr->clients[c].weight;

        for (k = 0; k < FG_SIM_TICKS; k++) {
            m->service[k * m->nclients + c] /= w;
            m->rate[k * m->nclients + c] /= w;
        }
    }

    fg_sim_metrics_shares(m);

    sum = 0.0;

    for (k = 0; k < FG_SIM_TICKS; k++) {
        best = 0.0;

        for (c = 0; c < m->nclients; c++) {
            best = fmax(best, m->service[k * m->nclients + c]);
        }

        d = 0.0;

        for (c = 0; c < m->nclients; c++) {
            s = m->service[k * m->nclients + c];
            d += fmin(best - s, fabs(m->rate[k * m->nclients + c] - s));
        }

        m->diff[k] = d;
        m->max_diff = k == 0 ? d : fmax(m->max_diff, d);
        sum += d;
    }

    m->avg_diff = sum / FG_SIM_TICKS;

    for (k = 0; k < FG_SIM_TICKS; k++) {
        d = m->diff[k] - m->avg_diff;
        m->var_diff += d * d / FG_SIM_TICKS;
    }

    tokens = 0.0;

    for (c = 0; c < m->nclients; c++) {
        tokens += (double) m->clients[c].input_tokens
                  + (double) m->clients[c].output_tokens;
    }

    if (m->last_finish > m->first_arrival) {
        m->throughput = tokens / (m->last_finish - m->first_arrival);
    }

    if (fg_sim_metrics_interactions(m, tr, results) != 0
        || fg_sim_metrics_qoe(&m->qoe, tr, results) != 0)
    {
        fg_sim_metrics_free(m);
        return -1;
    }

    return 0;
}


void
fg_sim_metrics_free(fg_sim_metrics_t *m)
{
    free(m->clients);
    free(m->service);
    free(m->rate);
    free(m->engines);

    m->clients = NULL;
    m->service = NULL;
    m->rate = NULL;
    m->engines = NULL;
}


static double
fg_sim_metrics_share(uint64_t a, uint64_t b)
{
    return b ? (double) a / b : 0.0;
}


/* a group's counts, in the JSON's order */
static const struct {
    const char  *name;
    size_t       offset;
} fg_sim_group_counts[] = {
    { "requests", offsetof(fg_sim_group_stats_t, requests) },
    { "requests_ok", offsetof(fg_sim_group_stats_t, requests_ok) },

    /* the top level's, from the group of all users */
#define FG_SIM_TOP_COUNTS  2
    { "interactions", offsetof(fg_sim_group_stats_t, interactions) },
    { "interactions_completed",
      offsetof(fg_sim_group_stats_t, interactions_completed) },
    { "interactions_aborted",
      offsetof(fg_sim_group_stats_t, interactions_aborted) },
    { "tokens_wasted", offsetof(fg_sim_group_stats_t, tokens_wasted) },
    { "users", offsetof(fg_sim_group_stats_t, users) },
    { "users_served", offsetof(fg_sim_group_stats_t, users_served) },
#define FG_SIM_TOP_COUNTS_END  8

    { "users_ok_requests",
      offsetof(fg_sim_group_stats_t, users_ok_requests) },
    { "users_with_interactions",
      offsetof(fg_sim_group_stats_t, users_with_interactions) },
    { "users_ok_interactions",
      offsetof(fg_sim_group_stats_t, users_ok_interactions) },
    { "users_completing", offsetof(fg_sim_group_stats_t, users_completing) }
};

#define FG_SIM_GROUP_COUNTS                                                   \
    (sizeof(fg_sim_group_counts) / sizeof(fg_sim_group_counts[0]))


/* FairServe's Table 3: each share a count over another */
static const struct {
    const char  *name;
    size_t       part;
    size_t       whole;
} fg_sim_group_shares[] = {
    { "service_requests", offsetof(fg_sim_group_stats_t, requests_ok),
      offsetof(fg_sim_group_stats_t, requests) },
    { "service_interactions",
      offsetof(fg_sim_group_stats_t, interactions_completed),
      offsetof(fg_sim_group_stats_t, interactions) },
    { "served_users_requests",
      offsetof(fg_sim_group_stats_t, users_ok_requests),
      offsetof(fg_sim_group_stats_t, users) },
    { "served_users_interactions",
      offsetof(fg_sim_group_stats_t, users_ok_interactions),
      offsetof(fg_sim_group_stats_t, users_with_interactions) }
};


static uint64_t
fg_sim_group_count(const fg_sim_group_stats_t *g, size_t offset)
{
    return *(const uint64_t *) ((const char *) g + offset);
}


/* the group's counts from..to into obj */
static void
fg_sim_metrics_counts_json(json_t *obj, const fg_sim_group_stats_t *g,
    size_t from, size_t to)
{
    size_t  i;

    for (i = from; i < to; i++) {
        json_object_set_new(obj, fg_sim_group_counts[i].name,
                            json_integer((json_int_t) fg_sim_group_count(
                                         g, fg_sim_group_counts[i].offset)));
    }
}


/* the group's shares into obj */
static void
fg_sim_metrics_shares_json(json_t *obj, const fg_sim_group_stats_t *g)
{
    size_t  i;

    for (i = 0; i < sizeof(fg_sim_group_shares)
                    / sizeof(fg_sim_group_shares[0]); i++)
    {
        json_object_set_new(obj, fg_sim_group_shares[i].name,
                            json_real(fg_sim_metrics_share(
                                fg_sim_group_count(
                                    g, fg_sim_group_shares[i].part),
                                fg_sim_group_count(
                                    g, fg_sim_group_shares[i].whole))));
    }
}


/* a group's counts, then Table 3's shares */
static json_t *
fg_sim_metrics_group_json(const fg_sim_group_stats_t *g)
{
    json_t  *obj;

    obj = json_object();
    if (obj == NULL) {
        return NULL;
    }

    fg_sim_metrics_counts_json(obj, g, 0, FG_SIM_GROUP_COUNTS);
    fg_sim_metrics_shares_json(obj, g);

    return obj;
}


/* each engine named in the results: what it served, its hit rate */
static json_t *
fg_sim_metrics_engines_json(const fg_sim_metrics_t *m,
    const fg_sim_trace_t *tr)
{
    json_t                       *engines, *e;
    uint32_t                      i;
    const fg_sim_engine_stats_t  *st;

    engines = json_object();

    for (i = 1; engines != NULL && i < tr->nstrs; i++) {
        st = &m->engines[i];

        if (st->served == 0) {
            continue;
        }

        e = json_pack("{sIsIsIsf}", "served", (json_int_t) st->served,
                      "input_tokens", (json_int_t) st->input_tokens,
                      "cached_tokens", (json_int_t) st->cached_tokens,
                      "cache_hit_rate", fg_sim_metrics_share(
                                            st->cached_tokens,
                                            st->input_tokens));

        if (json_object_set_new(engines, tr->strs[i], e) != 0) {
            json_decref(engines);
            return NULL;
        }
    }

    return engines;
}


char *
fg_sim_metrics_json(const fg_sim_metrics_t *m, const fg_sim_trace_t *tr)
{
    char                         *text;
    json_t                       *root, *clients, *c;
    uint32_t                      i;
    const fg_sim_group_stats_t   *g;
    const fg_sim_client_stats_t  *st;

    root = json_object();
    clients = json_object();

    if (root == NULL || clients == NULL) {
        json_decref(root);
        json_decref(clients);
        return NULL;
    }

    json_object_set_new(root, "requests", json_integer(tr->n));
    json_object_set_new(root, "weighted", json_boolean(m->weighted));
    json_object_set_new(root, "max_diff", json_real(m->max_diff));
    json_object_set_new(root, "avg_diff", json_real(m->avg_diff));
    json_object_set_new(root, "var_diff", json_real(m->var_diff));
    json_object_set_new(root, "throughput", json_real(m->throughput));
    json_object_set_new(root, "input_tokens",
                        json_integer((json_int_t) m->input_tokens));
    json_object_set_new(root, "cached_tokens",
                        json_integer((json_int_t) m->cached_tokens));
    json_object_set_new(root, "cache_hit_rate", json_real(m->cache_hit_rate));
    g = &m->all;
    fg_sim_metrics_counts_json(root, g, FG_SIM_TOP_COUNTS,
                               FG_SIM_TOP_COUNTS_END);
    json_object_set_new(root, "users_served_share",
                        json_real(g->users ? (double) g->users_served
                                             / g->users : 0.0));
    fg_sim_metrics_shares_json(root, g);
    json_object_set_new(root, "first_arrival", json_real(m->first_arrival));
    json_object_set_new(root, "last_arrival", json_real(m->last_arrival));
    json_object_set_new(root, "last_finish", json_real(m->last_finish));
    json_object_set_new(root, "all", fg_sim_metrics_group_json(&m->all));
    json_object_set_new(root, "normal",
                        fg_sim_metrics_group_json(&m->normal));
    json_object_set_new(root, "abusive",
                        fg_sim_metrics_group_json(&m->abusive));

    for (i = 0; i < m->nclients; i++) {
        st = &m->clients[i];

        c = fg_sim_outcomes_json(
                json_pack("{sf}", "weight", tr->clients[i].weight),
                st->sent, &st->count,
                json_pack("{sIsIsIsIsfsfsfsf}",
                      "input_tokens", (json_int_t) st->input_tokens,
                      "output_tokens", (json_int_t) st->output_tokens,
                      "served_tokens",
                      (json_int_t) (st->input_tokens + st->output_tokens),
                      "cached_tokens", (json_int_t) st->cached_tokens,
                      "service", st->service,
                      "ttft_mean", st->ttft_mean,
                      "e2e_mean", st->e2e_mean,
                      "share", st->share));

        json_object_set_new(clients, tr->clients[i].name, c);
    }

    json_object_set_new(root, "clients", clients);

    if (m->qoe.requests > 0) {
        json_object_set_new(root, "qoe_requests",
                            json_integer((json_int_t) m->qoe.requests));
        json_object_set_new(root, "qoe_mean", json_real(m->qoe.mean));
        json_object_set_new(root, "qoe_share_095",
                            json_real(m->qoe.share_095));
        json_object_set_new(root, "qoe_p10", json_real(m->qoe.p10));
        json_object_set_new(root, "qoe_p50", json_real(m->qoe.p50));
        json_object_set_new(root, "qoe_p90", json_real(m->qoe.p90));
    }

    if (m->qoe.preempt_requests > 0) {
        json_object_set_new(root, "preemptions",
                            json_integer((json_int_t) m->qoe.preemptions));
    }

    if (m->engines != NULL
        && json_object_set_new(root, "engines", fg_sim_metrics_engines_json(
                                                    m, tr))
           != 0)
    {
        json_decref(root);
        return NULL;
    }

    text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);

    return text;
}


int
fg_sim_metrics_write_series(const fg_sim_metrics_t *m,
    const fg_sim_trace_t *tr, const char *path, char *err, size_t size)
{
    FILE      *fp;
    size_t     k;
    uint32_t   c;

    fp = fg_sim_write_open(path, err, size);
    if (fp == NULL) {
        return -1;
    }

    fputs("# t", fp);

    for (c = 0; c < m->nclients; c++) {
        fprintf(fp, " service:%s", tr->clients[c].name);
    }

    for (c = 0; c < m->nclients; c++) {
        fprintf(fp, " rate:%s", tr->clients[c].name);
    }

    fputs(" diff", fp);

    if (m->weighted) {
        /* after the names: scripts that count columns by name still work */
        fputs(" (weighted: service and rate divided by the client's weight)",
              fp);
    }

    fputc('\n', fp);

    for (k = 0; k < FG_SIM_TICKS; k++) {
        fprintf(fp, "%.3f", m->centre[k]);

        for (c = 0; c < m->nclients; c++) {
            fprintf(fp, " %.3f", m->service[k * m->nclients + c]);
        }

        for (c = 0; c < m->nclients; c++) {
            fprintf(fp, " %.3f", m->rate[k * m->nclients + c]);
        }

        fprintf(fp, " %.3f\n", m->diff[k]);
    }

    return fg_sim_write_close(fp, path, err, size);
}
