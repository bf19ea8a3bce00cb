
/*
 * fairgate: the status page as Prometheus text: the zones' families, a
 * table of what each sample reads from a zone's snapshot or a tenant's,
 * and the histograms (queue wait, the streams' QoE) written by hand;
 * the tenants' quota windows (ngx_http_fairgate_status_quota.c);
 * the engines' own prefix caches, from the load each publishes; then
 * Redis's (redis/ngx_http_fairgate_redis_status.c).  Each family is
 * written whole, every zone's samples under one HELP and TYPE, as the
 * format wants.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_status.h"
#include "ngx_http_fairgate_local.h"
#include "ngx_http_fairgate_prom.h"
#include "ngx_http_fairgate_redis.h"


#define ngx_http_fairgate_family(name, type, help, per, label)               \
    ngx_string(name), ngx_string(type), ngx_string(help),                     \
    NGX_HTTP_FAIRGATE_PROM_ ## per, ngx_string(label)

/* a sample of a zone, or of a user or an app: its label's value, its field */
#define ngx_http_fairgate_zone_sample(value, field, format)                   \
    { ngx_string(value), offsetof(ngx_http_fairgate_snap_t, field),           \
      NGX_HTTP_FAIRGATE_PROM_ ## format }

#define ngx_http_fairgate_tenant_sample(value, field, format)                 \
    { ngx_string(value), offsetof(ngx_http_fairgate_snap_tenant_t, field),    \
      NGX_HTTP_FAIRGATE_PROM_ ## format }

#define ngx_http_fairgate_engine_sample(value, field, format)                 \
    { ngx_string(value), offsetof(ngx_http_fairgate_zengine_t, field),        \
      NGX_HTTP_FAIRGATE_PROM_ ## format }

#define ngx_http_fairgate_load_sample(value, field)                           \
    { ngx_string(value), offsetof(fg_shm_load_t, field),                      \
      NGX_HTTP_FAIRGATE_PROM_U64 }


static ngx_int_t ngx_http_fairgate_status_prom_family(
    ngx_http_fairgate_prom_t *w, ngx_http_fairgate_prom_family_t *f,
    ngx_http_fairgate_snap_t *sn);
static ngx_int_t ngx_http_fairgate_status_prom_engines(
    ngx_http_fairgate_prom_t *w, ngx_http_fairgate_prom_family_t *f,
    ngx_http_fairgate_snap_t *sn);
static ngx_int_t ngx_http_fairgate_status_prom_tenants(
    ngx_http_fairgate_prom_t *w, ngx_http_fairgate_prom_family_t *f,
    ngx_http_fairgate_snap_t *sn, ngx_http_fairgate_prom_label_t *l);
static ngx_int_t ngx_http_fairgate_status_prom_histogram(
    ngx_http_fairgate_prom_t *w, ngx_http_fairgate_snap_t *sn);
static ngx_int_t ngx_http_fairgate_status_prom_qoe(
    ngx_http_fairgate_prom_t *w, ngx_str_t *family,
    ngx_http_fairgate_prom_label_t *l, ngx_uint_t n,
    ngx_http_fairgate_qoe_stats_t *qs);
static ngx_int_t ngx_http_fairgate_status_prom_flush(void *data,
    ngx_chain_t *full);
static ngx_int_t ngx_http_fairgate_status_prom_zones(
    ngx_http_fairgate_prom_t *w, ngx_http_fairgate_snap_t *snaps,
    ngx_uint_t n);
static ngx_int_t ngx_http_fairgate_status_prom_caches(ngx_http_request_t *r,
    ngx_http_fairgate_prom_t *w);


static ngx_http_fairgate_prom_family_t  ngx_http_fairgate_status_families[] = {

    { ngx_http_fairgate_family("fairgate_requests_total", "counter",
          "Requests of a zone by what became of them.", ZONE, "event"),
      { ngx_http_fairgate_zone_sample("enqueued", st.enqueued, U64),
        ngx_http_fairgate_zone_sample("admitted", st.admitted, U64),
        ngx_http_fairgate_zone_sample("finished", st.finished, U64),
        ngx_http_fairgate_zone_sample("cancelled", st.cancelled, U64),
        ngx_http_fairgate_zone_sample("rejected", st.rejected, U64),
        ngx_http_fairgate_zone_sample("throttled", sh.throttled, U64),
        ngx_http_fairgate_zone_sample("queue_full", sh.queue_full, U64),
        ngx_http_fairgate_zone_sample("timed_out", sh.timed_out, U64),
        ngx_http_fairgate_zone_sample("reclaimed", sh.reclaimed, U64),
        ngx_http_fairgate_zone_sample("handoffs", sh.handoffs, U64) } },

    { ngx_http_fairgate_family("fairgate_tokens_total", "counter",
          "Tokens of finished requests, settled.", ZONE, "direction"),
      { ngx_http_fairgate_zone_sample("in", sh.tokens_in, U64),
        ngx_http_fairgate_zone_sample("out", sh.tokens_out, U64) } },

    { ngx_http_fairgate_family("fairgate_cached_tokens_total", "counter",
          "Prompt tokens the engines found in their prefix caches.", ZONE,
          ""),
      { ngx_http_fairgate_zone_sample("", sh.cached_tokens, U64) } },

    { ngx_http_fairgate_family("fairgate_waiting", "gauge",
          "Requests waiting in the queue.", ZONE, ""),
      { ngx_http_fairgate_zone_sample("", st.waiting, U64) } },

    { ngx_http_fairgate_family("fairgate_running", "gauge",
          "Requests in flight to the upstream.", ZONE, ""),
      { ngx_http_fairgate_zone_sample("", sh.running, UINT) } },

    { ngx_http_fairgate_family("fairgate_running_tokens", "gauge",
          "Tokens reserved by requests in flight.", ZONE, ""),
      { ngx_http_fairgate_zone_sample("", sh.running_tokens, U64) } },

    { ngx_http_fairgate_family("fairgate_tenants", "gauge",
          "Users and apps the zone holds.", ZONE, "kind"),
      { ngx_http_fairgate_zone_sample("user", sh.users, UINT),
        ngx_http_fairgate_zone_sample("app", sh.apps, UINT) } },

    { ngx_http_fairgate_family("fairgate_interactions_total", "counter",
          "Agent interactions by what became of their requests.", ZONE,
          "event"),
      { ngx_http_fairgate_zone_sample("opened", sh.oit.opened, U64),
        ngx_http_fairgate_zone_sample("completed", sh.oit.completed, U64),
        ngx_http_fairgate_zone_sample("aborted", sh.oit.aborted, U64),
        ngx_http_fairgate_zone_sample("expired", sh.oit.expired, U64),
        ngx_http_fairgate_zone_sample("continued", sh.oit.continued, U64),
        ngx_http_fairgate_zone_sample("untracked", sh.oit.untracked, U64),
        ngx_http_fairgate_zone_sample("throttled", sh.oit.throttled, U64) } },

    { ngx_http_fairgate_family("fairgate_interactions_open", "gauge",
          "Agent interactions under way.", ZONE, ""),
      { ngx_http_fairgate_zone_sample("", sh.oit.open, U32) } },

    { ngx_http_fairgate_family("fairgate_tokens_wasted_total", "counter",
          "Tokens spent on interactions later cut.", ZONE, ""),
      { ngx_http_fairgate_zone_sample("", sh.oit.tokens_wasted, U64) } },

    { ngx_http_fairgate_family("fairgate_overloaded", "gauge",
          "1 if OIT last found the zone overloaded.", ZONE, ""),
      { ngx_http_fairgate_zone_sample("", sh.overloaded, UINT) } },

    { ngx_http_fairgate_family("fairgate_users_total", "counter",
          "Users seen, and those served at least once, since the zone was "
          "made.", ZONE, "event"),
      { ngx_http_fairgate_zone_sample("seen", sh.users_seen, U64),
        ngx_http_fairgate_zone_sample("served", sh.users_served, U64) } },

    { ngx_http_fairgate_family("fairgate_queue_wait_seconds", "histogram",
          "Time from arrival to dispatch.", HISTOGRAM, ""),
      { { ngx_null_string, 0, NGX_HTTP_FAIRGATE_PROM_END } } },

    { ngx_http_fairgate_family("fairgate_qoe", "histogram",
          "Andes QoE of the streams with expectations, as delivered.", QOE,
          ""),
      { { ngx_null_string, 0, NGX_HTTP_FAIRGATE_PROM_END } } },

    { ngx_http_fairgate_family("fairgate_user_service_total", "counter",
          "Cost of the service a user received, unweighted.", USER, ""),
      { ngx_http_fairgate_tenant_sample("", service, FIXED3) } },

    { ngx_http_fairgate_family("fairgate_user_counter", "gauge",
          "A user's virtual counter: weighted service, lifted.", USER, ""),
      { ngx_http_fairgate_tenant_sample("", counter, FIXED3) } },

    { ngx_http_fairgate_family("fairgate_user_deficit", "gauge",
          "A user's deficit under dlpm: it may be served while above 0.",
          USER, ""),
      { ngx_http_fairgate_tenant_sample("", deficit, FIXED3) } },

    { ngx_http_fairgate_family("fairgate_user_cached_tokens_total",
          "counter", "A user's prompt tokens found in a prefix cache.", USER,
          ""),
      { ngx_http_fairgate_tenant_sample("", cached_tokens, U64) } },

    { ngx_http_fairgate_family("fairgate_user_waiting", "gauge",
          "A user's requests waiting in the queue.", USER, ""),
      { ngx_http_fairgate_tenant_sample("", waiting, U64) } },

    { ngx_http_fairgate_family("fairgate_user_running", "gauge",
          "A user's requests in flight.", USER, ""),
      { ngx_http_fairgate_tenant_sample("", running, U64) } },

    { ngx_http_fairgate_family("fairgate_user_requests_total", "counter",
          "A user's requests by what became of them.", USER, "event"),
      { ngx_http_fairgate_tenant_sample("enqueued", enqueued, U64),
        ngx_http_fairgate_tenant_sample("admitted", admitted, U64),
        ngx_http_fairgate_tenant_sample("finished", finished, U64),
        ngx_http_fairgate_tenant_sample("cancelled", cancelled, U64),
        ngx_http_fairgate_tenant_sample("throttled", throttled, U64),
        ngx_http_fairgate_tenant_sample("queue_full", queue_full, U64),
        ngx_http_fairgate_tenant_sample("timed_out", timed_out, U64) } },

    { ngx_http_fairgate_family("fairgate_user_tokens_total", "counter",
          "A user's tokens, settled.", USER, "direction"),
      { ngx_http_fairgate_tenant_sample("in", tokens_in, U64),
        ngx_http_fairgate_tenant_sample("out", tokens_out, U64) } },

    { ngx_http_fairgate_family("fairgate_user_qoe", "histogram",
          "Andes QoE of a user's streams with expectations, as delivered.",
          USER_QOE, ""),
      { { ngx_null_string, 0, NGX_HTTP_FAIRGATE_PROM_END } } },

    { ngx_http_fairgate_family("fairgate_app_requests_total", "counter",
          "An app's requests served and throttled.", APP, "event"),
      { ngx_http_fairgate_tenant_sample("served", requests, U64),
        ngx_http_fairgate_tenant_sample("throttled", throttled, U64) } },

    { ngx_http_fairgate_family("fairgate_app_tokens_total", "counter",
          "An app's tokens, settled.", APP, "direction"),
      { ngx_http_fairgate_tenant_sample("in", tokens_in, U64),
        ngx_http_fairgate_tenant_sample("out", tokens_out, U64) } },

    { ngx_http_fairgate_family("fairgate_app_qoe", "histogram",
          "Andes QoE of an app's streams with expectations, as delivered.",
          APP_QOE, ""),
      { { ngx_null_string, 0, NGX_HTTP_FAIRGATE_PROM_END } } },

    { ngx_http_fairgate_family("fairgate_engine_running", "gauge",
          "Requests a zone runs on an engine.", ENGINE, ""),
      { ngx_http_fairgate_engine_sample("", running, UINT) } },

    { ngx_http_fairgate_family("fairgate_engine_dispatched_total", "counter",
          "Requests a zone sent to an engine.", ENGINE, ""),
      { ngx_http_fairgate_engine_sample("", dispatched, U64) } },

    { ngx_http_fairgate_family("fairgate_engine_prompt_tokens_total",
          "counter", "Prompt tokens a zone sent to an engine: all of them, "
          "those its prefix cache held as routed, and as it said.", ENGINE,
          "kind"),
      { ngx_http_fairgate_engine_sample("sent", prompt_tokens, U64),
        ngx_http_fairgate_engine_sample("matched", matched_tokens, U64),
        ngx_http_fairgate_engine_sample("cached", cached_tokens, U64) } }
};


/* an engine's own prefix cache, whichever zones feed it: its load's */
static ngx_http_fairgate_prom_family_t  ngx_http_fairgate_status_caches[] = {

    { ngx_http_fairgate_family("fairgate_engine_prefix_cache_blocks",
          "gauge", "KV blocks an engine's prefix cache holds, in use or "
          "not.", ENGINE, ""),
      { ngx_http_fairgate_load_sample("", cache_blocks) } },

    { ngx_http_fairgate_family("fairgate_engine_prefix_cache_tokens_total",
          "counter", "Prompt tokens an engine looked up in its prefix cache, "
          "and those it found there.", ENGINE, "kind"),
      { ngx_http_fairgate_load_sample("query", cache_query_tokens),
        ngx_http_fairgate_load_sample("hit", cache_hit_tokens) } },

    { ngx_http_fairgate_family("fairgate_engine_prefix_cache_evictions_total",
          "counter", "Cached blocks an engine gave up for room.", ENGINE, ""),
      { ngx_http_fairgate_load_sample("", cache_evictions) } },

    { ngx_http_fairgate_family("fairgate_engine_preemptions_total",
          "counter", "Running sequences an engine preempted, by its "
          "scheduler (fcfs or Andes).", ENGINE, ""),
      { ngx_http_fairgate_load_sample("", preemptions) } }
};


/* sent as it is written: the writer's full buffers go out as it fills */

ngx_int_t
ngx_http_fairgate_status_prom(ngx_http_request_t *r,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n)
{
    ngx_int_t                         rc;
    ngx_http_fairgate_prom_t          w;
    ngx_http_fairgate_status_out_t    o;

    rc = ngx_http_fairgate_status_out_start(r, &o);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    ngx_http_fairgate_prom_init(&w, r->pool);
    w.flush = ngx_http_fairgate_status_prom_flush;
    w.data = &o;

    if (ngx_http_fairgate_status_prom_zones(&w, snaps, n) != NGX_OK
        || ngx_http_fairgate_status_quota_prom(&w, snaps, n) != NGX_OK
        || ngx_http_fairgate_status_prom_caches(r, &w) != NGX_OK
        || ngx_http_fairgate_redis_prom(r, &w) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_fairgate_status_out_chain(&o, w.out, 1);
}


static ngx_int_t
ngx_http_fairgate_status_prom_flush(void *data, ngx_chain_t *full)
{
    return ngx_http_fairgate_status_out_chain(data, full, 0);
}


static ngx_int_t
ngx_http_fairgate_status_prom_zones(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n)
{
    ngx_uint_t                        i, k;
    ngx_http_fairgate_prom_family_t  *f;

    for (k = 0;
         k < NGX_HTTP_FAIRGATE_PROM_FAMILIES(ngx_http_fairgate_status_families);
         k++)
    {
        f = &ngx_http_fairgate_status_families[k];

        if (ngx_http_fairgate_prom_help(w, f) != NGX_OK) {
            return NGX_ERROR;
        }

        for (i = 0; i < n; i++) {
            if (ngx_http_fairgate_status_prom_family(w, f, &snaps[i])
                != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


/*
 * The engines' prefix caches, labelled with the engine's name: the loads
 * are read once (without a lock, as the engine publishes them), an engine
 * this worker is not attached to has no samples.
 */

static ngx_int_t
ngx_http_fairgate_status_prom_caches(ngx_http_request_t *r,
    ngx_http_fairgate_prom_t *w)
{
    ngx_str_t                       *names, label;
    ngx_uint_t                       i, k, n;
    fg_shm_load_t                   *ld;
    ngx_http_fairgate_engine_t     **ep;
    ngx_http_fairgate_main_conf_t   *fmcf;

    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);
    n = fmcf->engines.nelts;

    if (n == 0) {
        return NGX_OK;
    }

    ld = ngx_palloc(r->pool, n * (sizeof(fg_shm_load_t) + sizeof(ngx_str_t)));
    if (ld == NULL) {
        return NGX_ERROR;
    }

    names = (ngx_str_t *) (ld + n);
    ep = fmcf->engines.elts;

    for (i = 0; i < n; i++) {
        if (ep[i]->client != NULL
            && fg_shm_client_status(ep[i]->client, &ld[i]) == FG_SHM_OK)
        {
            names[i] = ep[i]->name;

        } else {
            ngx_str_null(&names[i]);
        }
    }

    ngx_str_set(&label, "engine");

    k = NGX_HTTP_FAIRGATE_PROM_FAMILIES(ngx_http_fairgate_status_caches);

    return ngx_http_fairgate_prom_table(w, ngx_http_fairgate_status_caches, k,
                                        &label, names, ld,
                                        sizeof(fg_shm_load_t), n);
}


/* a zone's samples of a family: its own, or each user's or app's */

static ngx_int_t
ngx_http_fairgate_status_prom_family(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_prom_family_t *f, ngx_http_fairgate_snap_t *sn)
{
    ngx_http_fairgate_prom_label_t    l[3];

    ngx_str_set(&l[0].name, "zone");
    l[0].value = sn->zone->name;

    switch (f->per) {

    case NGX_HTTP_FAIRGATE_PROM_ZONE:
        return ngx_http_fairgate_prom_samples(w, f, l, 1, sn);

    case NGX_HTTP_FAIRGATE_PROM_HISTOGRAM:
        return ngx_http_fairgate_status_prom_histogram(w, sn);

    case NGX_HTTP_FAIRGATE_PROM_ENGINE:
        return ngx_http_fairgate_status_prom_engines(w, f, sn);

    case NGX_HTTP_FAIRGATE_PROM_QOE:
        return ngx_http_fairgate_status_prom_qoe(w, &f->name, l, 1,
                                                 &sn->sh.qoe);
    }

    return ngx_http_fairgate_status_prom_tenants(w, f, sn, l);
}


/* each user's or app's samples of a family, labelled with the zone and it */

static ngx_int_t
ngx_http_fairgate_status_prom_tenants(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_prom_family_t *f, ngx_http_fairgate_snap_t *sn,
    ngx_http_fairgate_prom_label_t *l)
{
    ngx_int_t                         rc;
    ngx_uint_t                        j, kind;
    ngx_http_fairgate_snap_tenant_t  *t;

    if (f->per == NGX_HTTP_FAIRGATE_PROM_USER
        || f->per == NGX_HTTP_FAIRGATE_PROM_USER_QOE)
    {
        kind = NGX_HTTP_FAIRGATE_USER;
        ngx_str_set(&l[1].name, "user");

    } else {
        kind = NGX_HTTP_FAIRGATE_APP;
        ngx_str_set(&l[1].name, "app");
    }

    for (j = 0; j < sn->ntenants; j++) {
        t = &sn->tenants[j];

        if (t->kind != kind) {
            continue;
        }

        l[1].value.data = t->name;
        l[1].value.len = t->len;

        if (f->per == NGX_HTTP_FAIRGATE_PROM_USER_QOE
            || f->per == NGX_HTTP_FAIRGATE_PROM_APP_QOE)
        {
            rc = ngx_http_fairgate_status_prom_qoe(w, &f->name, l, 2,
                                                   &t->qoe);

        } else {
            rc = ngx_http_fairgate_prom_samples(w, f, l, 2, t);
        }

        if (rc != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* each engine's samples of a family, labelled with the zone and engine */

static ngx_int_t
ngx_http_fairgate_status_prom_engines(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_prom_family_t *f, ngx_http_fairgate_snap_t *sn)
{
    ngx_uint_t                      j;
    ngx_http_fairgate_zengine_t    *ze;
    ngx_http_fairgate_prom_label_t  l[2];

    ngx_str_set(&l[0].name, "zone");
    l[0].value = sn->zone->name;
    ngx_str_set(&l[1].name, "engine");

    for (j = 0; j < sn->sh.n_engines; j++) {
        ze = &sn->sh.engines[j];

        l[1].value.data = ze->name;
        l[1].value.len = ze->len;

        if (ngx_http_fairgate_prom_samples(w, f, l, 2, ze) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* the queue-wait histogram: cumulative buckets, then its sum and count */

static ngx_int_t
ngx_http_fairgate_status_prom_histogram(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_snap_t *sn)
{
    uint64_t                        cum;
    ngx_uint_t                      k;
    ngx_http_fairgate_prom_label_t  l[2];

    static ngx_str_t  names[] = {
        ngx_string("fairgate_queue_wait_seconds_bucket"),
        ngx_string("fairgate_queue_wait_seconds_sum"),
        ngx_string("fairgate_queue_wait_seconds_count")
    };

    ngx_str_set(&l[0].name, "zone");
    l[0].value = sn->zone->name;
    ngx_str_set(&l[1].name, "le");

    cum = 0;

    for (k = 0; k < NGX_HTTP_FAIRGATE_BUCKETS; k++) {
        cum += sn->sh.wait_bucket[k];

        l[1].value.data = (u_char *) ngx_http_fairgate_wait_buckets[k].text;
        l[1].value.len = ngx_strlen(l[1].value.data);

        if (ngx_http_fairgate_prom_line(w, &names[0], l, 2,
                                        NGX_HTTP_FAIRGATE_PROM_U64, &cum)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (ngx_http_fairgate_prom_line(w, &names[1], l, 1,
                                    NGX_HTTP_FAIRGATE_PROM_FIXED6,
                                    &sn->sh.wait_sum)
        != NGX_OK
        || ngx_http_fairgate_prom_line(w, &names[2], l, 1,
                                       NGX_HTTP_FAIRGATE_PROM_U64,
                                       &sn->sh.wait_count)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A QoE histogram of a zone (n 1: its label) or a tenant (n 2): cumulative
 * buckets (zone/ngx_http_fairgate_qoe_stats.c's bounds), then the sum and
 * the count; l has room for the "le" label after the n given.
 */

static ngx_int_t
ngx_http_fairgate_status_prom_qoe(ngx_http_fairgate_prom_t *w,
    ngx_str_t *family, ngx_http_fairgate_prom_label_t *l, ngx_uint_t n,
    ngx_http_fairgate_qoe_stats_t *qs)
{
    u_char      *p;
    uint64_t     cum;
    ngx_str_t    name[3];
    ngx_uint_t   k;

    static const char  *suffix[] = { "_bucket", "_sum", "_count" };

    for (k = 0; k < 3; k++) {
        name[k].len = family->len + ngx_strlen(suffix[k]);
        name[k].data = ngx_pnalloc(w->pool, name[k].len);

        if (name[k].data == NULL) {
            return NGX_ERROR;
        }

        p = ngx_cpymem(name[k].data, family->data, family->len);
        ngx_memcpy(p, suffix[k], name[k].len - family->len);
    }

    ngx_str_set(&l[n].name, "le");
    cum = 0;

    for (k = 0; k < NGX_HTTP_FAIRGATE_QOE_BUCKETS; k++) {
        cum += qs->bucket[k];

        l[n].value.data = (u_char *) ngx_http_fairgate_qoe_buckets[k].text;
        l[n].value.len = ngx_strlen(l[n].value.data);

        if (ngx_http_fairgate_prom_line(w, &name[0], l, n + 1,
                                        NGX_HTTP_FAIRGATE_PROM_U64, &cum)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    /* cum: the count, all the buckets */

    if (ngx_http_fairgate_prom_line(w, &name[1], l, n,
                                    NGX_HTTP_FAIRGATE_PROM_FIXED6, &qs->sum)
        != NGX_OK
        || ngx_http_fairgate_prom_line(w, &name[2], l, n,
                                       NGX_HTTP_FAIRGATE_PROM_U64, &cum)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}
