
/*
 * fairgate: rate limits, per user and per app, on sliding windows.
 *
 *     fairgate_user_limit [rpm=N] [tpm=N] | off;
 *     fairgate_app_limit NAME [rpm=N] [tpm=N];
 *
 * Requests and tokens per minute, counted in the tenants' 60-second sliding
 * windows in the zone (fg_window_t: 60 one-second slots), so every worker
 * and every reload sees the same counts.  A request is let in when each
 * limit that applies still has room for it: one request, and its tokens as
 * estimated at admission (input plus the output it may ask for, as OpenAI
 * counts them).  Its tokens are settled when it ends: the part of the
 * estimate it did not use is taken back, the part it used beyond is added;
 * a request that was never served takes everything back.
 *
 * With fairgate_redis the windows are global: what the other gateways
 * counted, as of the last sync round, adds to the zone's own sums
 * (ngx_http_fairgate_sync.c); without it, or while Redis is down, the
 * limits hold per gateway.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_tenants.h"
#include "ngx_http_fairgate_param.h"


typedef struct {
    fg_window_t                 *window;
    ngx_uint_t                   limit;
    uint64_t                     need;
    uint64_t                     sum;
    uint64_t                     remote;     /* other gateways' count */
    const char                  *type;
    const char                  *who;
    ngx_http_fairgate_rl_t      *rl;
} ngx_http_fairgate_check_t;


static char *ngx_http_fairgate_limit_parse(ngx_conf_t *cf, ngx_str_t *value,
    ngx_uint_t n, ngx_http_fairgate_limit_t *limit, const char *directive);
static void ngx_http_fairgate_limits_pair(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_tenant_t *t,
    ngx_http_fairgate_limit_t *limit, const char *who,
    ngx_http_fairgate_check_t *c);
static void ngx_http_fairgate_limits_hit(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_check_t *c, double now);
static void ngx_http_fairgate_limits_count(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_check_t *check,
    double now);
static void ngx_http_fairgate_limits_left(ngx_http_fairgate_check_t *check,
    ngx_uint_t n, double now);
static double ngx_http_fairgate_reset(fg_window_t *w, double now);
static u_char *ngx_http_fairgate_duration(u_char *p, double seconds);
static u_char *ngx_http_fairgate_utoa(u_char *p, uint64_t n);


char *
ngx_http_fairgate_user_limit(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    ngx_str_t  *value;

    if (flcf->user_limit.rpm != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 2 && ngx_strcmp(value[1].data, "off") == 0) {
        flcf->user_limit.rpm = 0;
        flcf->user_limit.tpm = 0;
        return NGX_CONF_OK;
    }

    return ngx_http_fairgate_limit_parse(cf, value, 1, &flcf->user_limit,
                                         "fairgate_user_limit");
}


char *
ngx_http_fairgate_app_limit(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    char                           *rv;
    ngx_str_t                      *value;
    ngx_http_fairgate_app_limit_t  *al;

    value = cf->args->elts;

    al = ngx_http_fairgate_app_add(cf, &flcf->app_limits,
                                   sizeof(ngx_http_fairgate_app_limit_t),
                                   &value[1],
                                   "invalid app \"%V\" in "
                                   "\"fairgate_app_limit\"",
                                   "duplicate app \"%V\" in "
                                   "\"fairgate_app_limit\"");
    if (al == NULL) {
        return NGX_CONF_ERROR;
    }

    al->limit.rpm = NGX_CONF_UNSET_UINT;
    al->limit.tpm = NGX_CONF_UNSET_UINT;

    rv = ngx_http_fairgate_limit_parse(cf, value, 2, &al->limit,
                                       "fairgate_app_limit");
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_fairgate_limit_parse(ngx_conf_t *cf, ngx_str_t *value, ngx_uint_t n,
    ngx_http_fairgate_limit_t *limit, const char *directive)
{
    ngx_int_t    v;
    ngx_uint_t   i, *p;

    if (n >= cf->args->nelts) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%s\" needs rpm=N or tpm=N", directive);
        return NGX_CONF_ERROR;
    }

    limit->rpm = NGX_CONF_UNSET_UINT;
    limit->tpm = NGX_CONF_UNSET_UINT;

    for (i = n; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "rpm=", 4) == 0) {
            p = &limit->rpm;

        } else if (ngx_strncmp(value[i].data, "tpm=", 4) == 0) {
            p = &limit->tpm;

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" in \"%s\"",
                               &value[i], directive);
            return NGX_CONF_ERROR;
        }

        if (*p != NGX_CONF_UNSET_UINT) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate parameter \"%V\" in \"%s\"",
                               &value[i], directive);
            return NGX_CONF_ERROR;
        }

        v = ngx_http_fairgate_param_number(value[i].data + 4,
                                           value[i].len - 4, 1,
                                           NGX_HTTP_FAIRGATE_MAX32);

        if (v == NGX_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid %*s \"%s\" in \"%s\"", (size_t) 3,
                               value[i].data, value[i].data + 4, directive);
            return NGX_CONF_ERROR;
        }

        *p = v;
    }

    if (limit->rpm == NGX_CONF_UNSET_UINT) {
        limit->rpm = 0;
    }

    if (limit->tpm == NGX_CONF_UNSET_UINT) {
        limit->tpm = 0;
    }

    return NGX_CONF_OK;
}


/*
 * Under the zone's mutex.  NGX_OK: the request is counted in its windows
 * and ctx->rl_* say what is left; NGX_DECLINED: a limit has no room, and
 * ctx->hit_* say which and until when.
 */

ngx_int_t
ngx_http_fairgate_limits_check(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_uint_t enforce, double now)
{
    ngx_uint_t                  i, n;
    ngx_http_fairgate_check_t   check[4], *c;

    node->windowed = ctx->tokens_in + ctx->max_tokens;

    /* what applies to the tenants now, for the status page */
    node->user->limit_rpm = ctx->user_limit.rpm;
    node->user->limit_tpm = ctx->user_limit.tpm;

    if (node->app) {
        node->app->limit_rpm = ctx->app_limit.rpm;
        node->app->limit_tpm = ctx->app_limit.tpm;
    }

    ngx_http_fairgate_limits_pair(ctx, node, node->user, &ctx->user_limit,
                                  "user", &check[0]);
    n = 2;

    if (node->app) {
        ngx_http_fairgate_limits_pair(ctx, node, node->app, &ctx->app_limit,
                                      "app", &check[2]);
        n = 4;
    }

    for (i = 0; i < n; i++) {
        c = &check[i];

        if (c->limit == 0) {
            continue;
        }

        c->sum = fg_window_sum(c->window, now) + c->remote;

        /* not enforced: a request continuing an interaction (fairgate_oit) */
        if (c->sum + c->need > c->limit && enforce) {
            ngx_http_fairgate_limits_hit(ctx, c, now);
            return NGX_DECLINED;
        }
    }

    ngx_http_fairgate_limits_count(ctx, node, check, now);
    ngx_http_fairgate_limits_left(check, n, now);

    return NGX_OK;
}


/* a tenant's two limits: requests and tokens a minute */

static void
ngx_http_fairgate_limits_pair(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_tenant_t *t,
    ngx_http_fairgate_limit_t *limit, const char *who,
    ngx_http_fairgate_check_t *c)
{
    c[0].window = ngx_http_fairgate_tenant_requests(t);
    c[0].limit = limit->rpm;
    c[0].need = 1;
    c[0].remote = ngx_http_fairgate_global_requests(ctx->zone, t);
    c[0].type = "requests";
    c[0].who = who;
    c[0].rl = &ctx->rl_requests;

    c[1].window = &t->tokens;
    c[1].limit = limit->tpm;
    c[1].need = node->windowed;
    c[1].remote = ngx_http_fairgate_global_tokens(ctx->zone, t);
    c[1].type = "tokens";
    c[1].who = who;
    c[1].rl = &ctx->rl_tokens;
}


/* the limit with no room: what the 429 and its headers tell */

static void
ngx_http_fairgate_limits_hit(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_check_t *c, double now)
{
    ngx_http_fairgate_rl_t  *rl;

    ctx->hit_type = c->type;
    ctx->hit_who = c->who;
    ctx->hit_limit = c->limit;
    ctx->hit_used = c->sum;
    ctx->hit_need = c->need;

    /* the other gateways' events leave their windows unseen here */
    ctx->hit_wait = fg_window_wait(c->window, now,
                                   (c->remote < c->limit)
                                   ? c->limit - c->remote : 0,
                                   c->need);

    rl = c->rl;
    rl->limit = c->limit;
    rl->remaining = (c->sum < c->limit) ? c->limit - c->sum : 0;
    rl->reset = ngx_http_fairgate_reset(c->window, now);
}


/*
 * The request counted in its tenants' windows.  The rpm policy counts the
 * requests it lets in into the user's window by itself, when the request
 * is queued (and user_counted is set then).
 */

static void
ngx_http_fairgate_limits_count(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_check_t *check,
    double now)
{
    if (fg_sched_conf(ctx->zone->sh->sched)->policy != FG_POLICY_RPM) {
        fg_window_add(check[0].window, now, 1);
        node->user_counted = 1;
    }

    fg_window_add(check[1].window, now, node->windowed);

    if (node->app) {
        fg_window_add(check[2].window, now, 1);
        fg_window_add(check[3].window, now, node->windowed);
        node->app_counted = 1;
    }

    node->at = now;
}


/* the headers tell of the limit with the least room left */

static void
ngx_http_fairgate_limits_left(ngx_http_fairgate_check_t *check, ngx_uint_t n,
    double now)
{
    uint64_t                 sum, left;
    ngx_uint_t               i;
    ngx_http_fairgate_rl_t  *rl;

    for (i = 0; i < n; i++) {

        if (check[i].limit == 0) {
            continue;
        }

        /* with this request (the rpm policy counts it in a moment) */
        sum = check[i].sum + check[i].need;

        left = (sum < check[i].limit) ? check[i].limit - sum : 0;
        rl = check[i].rl;

        if (rl->limit == 0 || left < rl->remaining) {
            rl->limit = check[i].limit;
            rl->remaining = left;
            rl->reset = ngx_http_fairgate_reset(check[i].window, now);
        }
    }
}


/*
 * x-ratelimit-reset-*: when the window holds none of what it counts now,
 * so that the whole limit is free again.  Events leave with their slot,
 * and the newest slot leaves last.
 */

static double
ngx_http_fairgate_reset(fg_window_t *w, double now)
{
    double  t;

    if (w->total == 0) {
        return 0;
    }

    t = (double) (w->last_slot + FG_WINDOW_SLOTS) * w->slot_width - now;

    return (t > 0) ? t : 0;
}


/*
 * Under the zone's mutex, when a request ends: its windows are settled to
 * the tokens it used; a request never served takes back its place.
 */

void
ngx_http_fairgate_limits_settle(ngx_http_fairgate_node_t *node,
    uint32_t tokens, ngx_uint_t served, double now)
{
    ngx_uint_t                   i;
    ngx_http_fairgate_tenant_t  *t[2];

    if (node->at == 0) {
        /* never let in */
        return;
    }

    if (!served) {
        tokens = 0;

        if (node->user_counted) {
            fg_window_remove(ngx_http_fairgate_tenant_requests(node->user),
                             now, node->at, 1);
        }

        if (node->app_counted) {
            fg_window_remove(ngx_http_fairgate_tenant_requests(node->app),
                             now, node->at, 1);
        }
    }

    t[0] = node->user;
    t[1] = node->app;

    for (i = 0; i < 2; i++) {
        if (t[i] == NULL) {
            continue;
        }

        if (tokens > node->windowed) {
            fg_window_add(&t[i]->tokens, now, tokens - node->windowed);

        } else if (tokens < node->windowed) {
            fg_window_remove(&t[i]->tokens, now, node->at,
                             node->windowed - tokens);
        }
    }

    node->windowed = tokens;
}


ngx_int_t
ngx_http_fairgate_limits_reject(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    u_char                        *p, *msg;
    time_t                         retry;
    ngx_http_fairgate_loc_conf_t  *flcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

    msg = ngx_pnalloc(r->pool, 384 + ctx->user.len + ctx->app.len);
    if (msg == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ctx->oit_set
        && (ctx->oit == FG_OIT_THROTTLE_USER
            || ctx->oit == FG_OIT_THROTTLE_APP))
    {
        p = ngx_sprintf(msg, "The service is overloaded, and %s %V has "
                        "reached its limit on requests that open new "
                        "interactions: Limit %ui per min, Used %uL. "
                        "Requests that continue an open interaction are "
                        "still served. ",
                        ctx->hit_who,
                        ctx->hit_who[0] == 'u' ? &ctx->user : &ctx->app,
                        ctx->hit_limit, ctx->hit_used);
        goto wait;
    }

    p = ngx_sprintf(msg, "Rate limit reached for %s per min (%s) of %s %V: "
                    "Limit %ui, Used %uL, Requested %uL. ",
                    ctx->hit_type,
                    ctx->hit_type[0] == 'r' ? "RPM" : "TPM",
                    ctx->hit_who,
                    ctx->hit_who[0] == 'u' ? &ctx->user : &ctx->app,
                    ctx->hit_limit, ctx->hit_used, ctx->hit_need);

wait:

    if (ctx->hit_need > ctx->hit_limit) {
        p = ngx_sprintf(p, "The request is larger than the limit.");
        retry = 60;

    } else {
        p = ngx_sprintf(p, "Please try again in ");
        p = ngx_http_fairgate_duration(p, ctx->hit_wait);
        p = ngx_sprintf(p, ".");
        retry = (time_t) ctx->hit_wait + 1;
    }

    *p = '\0';

    return ngx_http_fairgate_send_error(r, flcf->throttle_status,
                                        ctx->hit_type, NULL,
                                        "rate_limit_exceeded", (char *) msg,
                                        retry);
}


/* the x-ratelimit-* headers, when a limit applies */

ngx_int_t
ngx_http_fairgate_limits_headers(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    u_char                  *p, *v;
    ngx_uint_t               i;
    ngx_http_fairgate_rl_t  *rl;

    static const char  *names[2][3] = {
        { "x-ratelimit-limit-requests", "x-ratelimit-remaining-requests",
          "x-ratelimit-reset-requests" },
        { "x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens",
          "x-ratelimit-reset-tokens" }
    };

    for (i = 0; i < 2; i++) {
        rl = (i == 0) ? &ctx->rl_requests : &ctx->rl_tokens;

        if (rl->limit == 0) {
            continue;
        }

        v = ngx_pnalloc(r->pool, 3 * NGX_INT64_LEN + 16);
        if (v == NULL) {
            return NGX_ERROR;
        }

        p = ngx_http_fairgate_utoa(v, rl->limit);
        if (ngx_http_fairgate_add_header(r, names[i][0], v, p - v)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        v = p;
        p = ngx_http_fairgate_utoa(v, rl->remaining);
        if (ngx_http_fairgate_add_header(r, names[i][1], v, p - v)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        v = p;
        p = ngx_http_fairgate_duration(v, rl->reset);
        if (ngx_http_fairgate_add_header(r, names[i][2], v, p - v)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* as OpenAI (Go) writes durations: "20ms", "17s", "1m0s", and a quota's
 * "7h34m0s" */

static u_char *
ngx_http_fairgate_duration(u_char *p, double seconds)
{
    ngx_uint_t  ms, s;

    if (seconds < 0) {
        seconds = 0;
    }

    ms = (ngx_uint_t) (seconds * 1000 + 0.5);

    if (ms < 1000) {
        p = ngx_http_fairgate_utoa(p, ms);
        *p++ = 'm';
        *p++ = 's';
        return p;
    }

    s = (ms + 999) / 1000;

    if (s >= 3600) {
        p = ngx_http_fairgate_utoa(p, s / 3600);
        *p++ = 'h';
    }

    if (s >= 60) {
        p = ngx_http_fairgate_utoa(p, s / 60 % 60);
        *p++ = 'm';
    }

    p = ngx_http_fairgate_utoa(p, s % 60);
    *p++ = 's';

    return p;
}


/* a number in decimal: ngx_sprintf() is several times slower for it */

static u_char *
ngx_http_fairgate_utoa(u_char *p, uint64_t n)
{
    u_char  buf[NGX_INT64_LEN], *b;

    b = buf + NGX_INT64_LEN;

    do {
        *--b = (u_char) ('0' + n % 10);
        n /= 10;
    } while (n);

    return ngx_cpymem(p, b, buf + NGX_INT64_LEN - b);
}


/*
 * An app's entry in a location's array of them (fairgate_app_limit's,
 * fairgate_app_profile's: each entry starts with the app's name), or NULL.
 */

void *
ngx_http_fairgate_app_find(ngx_array_t *entries, ngx_str_t *name)
{
    u_char      *p;
    ngx_str_t   *s;
    ngx_uint_t   i;

    if (entries == NULL) {
        return NULL;
    }

    p = entries->elts;

    for (i = 0; i < entries->nelts; i++, p += entries->size) {
        s = (ngx_str_t *) p;

        if (s->len == name->len
            && ngx_strncmp(s->data, name->data, name->len) == 0)
        {
            return p;
        }
    }

    return NULL;
}


/*
 * A new entry for an app, named, the array made with the first; NULL when
 * out of memory, or when the name is invalid or has an entry already (said
 * with invalid or duplicate, in the directive's words, the name their %V).
 */

void *
ngx_http_fairgate_app_add(ngx_conf_t *cf, ngx_array_t **entries,
    size_t size, ngx_str_t *name, const char *invalid, const char *duplicate)
{
    ngx_str_t  *s;

    if (name->len == 0 || name->len > NGX_HTTP_FAIRGATE_NAME_LEN) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, invalid, name);
        return NULL;
    }

    if (ngx_http_fairgate_app_find(*entries, name) != NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, duplicate, name);
        return NULL;
    }

    if (*entries == NULL) {
        *entries = ngx_array_create(cf->pool, 4, size);
        if (*entries == NULL) {
            return NULL;
        }
    }

    s = ngx_array_push(*entries);
    if (s == NULL) {
        return NULL;
    }

    *s = *name;

    return s;
}
