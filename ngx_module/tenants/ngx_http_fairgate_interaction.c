
/*
 * fairgate: FairServe in the gateway.
 *
 *     X-Fairgate-Interaction: ID      the agent interaction a request is
 *     X-Fairgate-Stage: N             part of, its place in it (0: first)
 *     X-Fairgate-Stages: N            and how many calls it will make
 *
 *     fairgate_oit on | off [overload=RATIO] [user_rpm=N] [app_rpm=N]
 *                  [max_requests=N];
 *
 * Interactions are named by the client and kept per user: the zone's
 * table (fg_oit) holds the open ones, keyed by a hash of the user and the
 * name, with the tokens spent on each.  One is open from its first
 * request until its declared last stage ends, a request of it fails, or it
 * idles for the zone's interaction_idle.
 *
 * OIT (fairgate_oit on): while the gateway is overloaded, a request that
 * opens an interaction is checked against its user's limit, then its
 * app's (requests a minute, counted in the same windows as the rate
 * limits); a request that continues an open interaction is let in over
 * every limit, as cutting it would waste what was spent.  Not overloaded:
 * nobody is throttled by OIT.  Overloaded means requests wait in the fair
 * queue (the capacity is saturated), or the tokens held in flight reach
 * the overload share of the token capacity: the engine's KV positions in
 * local mode, inflight_tokens= in drop-in mode.
 *
 * wsc (fairgate_zone policy=wsc): a request's stage and system tokens go
 * to the scheduler with its app's profile (ngx_http_fairgate_profile.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


#include "fg_hash.h"
#include "ngx_http_fairgate_tenants.h"
#include "ngx_http_fairgate_param.h"


/* table slots a request looks at for idle interactions */
#define NGX_HTTP_FAIRGATE_EXPIRE_SLICE  64

/* the most stages an interaction may declare */
#define NGX_HTTP_FAIRGATE_MAX_STAGES  65536


/* a bad header: what is wrong, for the handler to refuse the request by */
#define ngx_http_fairgate_interaction_bad(bad, message)                       \
    (*(bad) = (message), NGX_DECLINED)


static ngx_int_t ngx_http_fairgate_interaction_header(ngx_http_request_t *r,
    ngx_str_t *name, ngx_str_t *stage, ngx_str_t *stages);
static void ngx_http_fairgate_interaction_throttled(
    ngx_http_fairgate_ctx_t *ctx, fg_oit_limit_t *l, const char *who,
    double now);


/* fairgate_oit's counts: NAME=N, N from min to a uint32_t's largest */

typedef struct {
    ngx_str_t    name;
    size_t       offset;                /* in the location's conf */
    ngx_int_t    min;
} ngx_http_fairgate_oit_num_t;


static ngx_http_fairgate_oit_num_t  ngx_http_fairgate_oit_counts[] = {
    { ngx_string("user_rpm="),
      offsetof(ngx_http_fairgate_loc_conf_t, oit_user_rpm), 1 },
    { ngx_string("app_rpm="),
      offsetof(ngx_http_fairgate_loc_conf_t, oit_app_rpm), 1 },
    { ngx_string("max_requests="),
      offsetof(ngx_http_fairgate_loc_conf_t, oit_max_requests), 0 },
    { ngx_null_string, 0, 0 }
};


/* fairgate_oit on | off [overload=RATIO] [user_rpm=N] [app_rpm=N] ... */

char *
ngx_http_fairgate_oit(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    u_char                       *end;
    double                        d;
    ngx_int_t                     n;
    ngx_str_t                    *value;
    ngx_uint_t                    i;
    ngx_http_fairgate_oit_num_t  *c;

    if (flcf->oit != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    n = ngx_http_fairgate_param_enum(value[1].data, value[1].len,
                                     ngx_http_fairgate_on_off);

    if (n == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid value \"%V\" in \"fairgate_oit\", "
                           "expected \"on\" or \"off\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    if (n == 0 && cf->args->nelts > 2) {
        return "takes no parameters after \"off\"";
    }

    flcf->oit = n;
    flcf->oit_overload = NGX_HTTP_FAIRGATE_OVERLOAD;
    flcf->oit_user_rpm = 0;
    flcf->oit_app_rpm = 0;
    flcf->oit_max_requests = NGX_HTTP_FAIRGATE_MAX_REQUESTS;

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "overload=", 9) == 0) {
            d = strtod((char *) value[i].data + 9, (char **) &end);

            if (end == value[i].data + 9
                || end != value[i].data + value[i].len
                || !(d > 0 && d <= 1))
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid overload \"%s\" in "
                                   "\"fairgate_oit\", expected a share of "
                                   "the capacity above 0, at most 1",
                                   value[i].data + 9);
                return NGX_CONF_ERROR;
            }

            flcf->oit_overload = d;
            continue;
        }

        for (c = ngx_http_fairgate_oit_counts; c->name.len; c++) {
            if (ngx_strncmp(value[i].data, c->name.data, c->name.len) == 0) {
                break;
            }
        }

        if (c->name.len == 0) {
            goto invalid;
        }

        n = ngx_http_fairgate_param_number(value[i].data + c->name.len,
                                           value[i].len - c->name.len,
                                           c->min, NGX_HTTP_FAIRGATE_MAX32);
        if (n == NGX_ERROR) {
            goto invalid;
        }

        *(ngx_uint_t *) ((char *) flcf + c->offset) = n;
    }

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\" in \"fairgate_oit\", "
                       "expected overload=RATIO, user_rpm=N, app_rpm=N or "
                       "max_requests=N (N a positive integer; "
                       "max_requests=0: no bound)", &value[i]);
    return NGX_CONF_ERROR;
}


/*
 * Reads the interaction headers into ctx: before the body, so that a bad
 * header is refused at once.  NGX_DECLINED: a bad header, *bad says what
 * is wrong with it (the handler refuses the request with a 400).
 */

ngx_int_t
ngx_http_fairgate_interaction_read(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char **bad)
{
    ngx_str_t          name, stage, stages;
    ngx_int_t          n;
    ngx_uint_t         i;
    XXH64_hash_t       h;

    ngx_str_null(&name);
    ngx_str_null(&stage);
    ngx_str_null(&stages);

    if (ngx_http_fairgate_interaction_header(r, &name, &stage, &stages)
        != NGX_OK)
    {
        /* one of each: two would leave the gateway to guess */
        return ngx_http_fairgate_interaction_bad(bad,
                   "Each X-Fairgate-Interaction, X-Fairgate-Stage and "
                   "X-Fairgate-Stages header may be sent once.");
    }

    if (name.data == NULL) {
        if (stage.data || stages.data) {
            return ngx_http_fairgate_interaction_bad(bad,
                       "X-Fairgate-Stage and X-Fairgate-Stages need "
                       "X-Fairgate-Interaction.");
        }

        return NGX_OK;
    }

    if (name.len == 0 || name.len > NGX_HTTP_FAIRGATE_INTERACTION_LEN) {
        return ngx_http_fairgate_interaction_bad(bad,
                   "X-Fairgate-Interaction must be 1 to 128 printable "
                   "characters.");
    }

    for (i = 0; i < name.len; i++) {
        if (name.data[i] <= 0x20 || name.data[i] >= 0x7f) {
            return ngx_http_fairgate_interaction_bad(bad,
                       "X-Fairgate-Interaction must be 1 to 128 printable "
                       "characters.");
        }
    }

    if (stage.data) {
        n = ngx_atoi(stage.data, stage.len);

        if (n == NGX_ERROR || n >= NGX_HTTP_FAIRGATE_MAX_STAGES) {
            return ngx_http_fairgate_interaction_bad(bad,
                       "X-Fairgate-Stage must be an integer from 0 "
                       "(the first call) to 65535.");
        }

        ctx->stage = (uint32_t) n;
    }

    if (stages.data) {
        n = ngx_atoi(stages.data, stages.len);

        if (n <= 0 || n > NGX_HTTP_FAIRGATE_MAX_STAGES) {
            return ngx_http_fairgate_interaction_bad(bad,
                       "X-Fairgate-Stages must be an integer from 1 "
                       "to 65536.");
        }

        if ((ngx_uint_t) n <= ctx->stage) {
            return ngx_http_fairgate_interaction_bad(bad,
                       "X-Fairgate-Stage must be below X-Fairgate-Stages "
                       "(stages count from 0).");
        }

        ctx->stages = (uint32_t) n;
    }

    /* the user's: another user's interaction of the same name is another */

    h = XXH3_64bits_withSeed(name.data, name.len,
                             XXH3_64bits(ctx->user.data, ctx->user.len));

    ctx->interaction = h ? h : 1;
    ctx->interaction_name = name;

    return NGX_OK;
}


/* the three headers; NGX_DECLINED when one comes twice */

static ngx_int_t
ngx_http_fairgate_interaction_header(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *stage, ngx_str_t *stages)
{
    ngx_uint_t        i;
    ngx_table_elt_t  *h;

    static const char  *names[] = {
        "X-Fairgate-Interaction", "X-Fairgate-Stage", "X-Fairgate-Stages"
    };

    ngx_str_t  *dst[] = { name, stage, stages };

    for (i = 0; i < 3; i++) {
        if (ngx_http_fairgate_header_once(r, names[i], &h) != NGX_OK) {
            return NGX_DECLINED;
        }

        if (h) {
            *dst[i] = h->value;
        }
    }

    return NGX_OK;
}


/*
 * Under the zone's mutex, once the request's node holds its tenants and
 * its fg_request_t is initialised: fills in what wsc weighs (app profile,
 * stage, system tokens, priority) and decides by OIT.  NGX_DECLINED: OIT
 * throttles it, and ctx says which limit (ctx->hit_*).
 */

ngx_int_t
ngx_http_fairgate_interaction_admit(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_loc_conf_t *flcf,
    double now)
{
    ngx_uint_t                    wsc, overloaded;
    fg_request_t                 *req;
    fg_oit_limit_t                user, app, *lu, *la;
    fg_oit_verdict_e              v;
    ngx_http_fairgate_zone_t     *zone;
    ngx_http_fairgate_shctx_t    *sh;
    ngx_http_fairgate_profile_t  *pr;

    zone = ctx->zone;
    sh = zone->sh;
    req = &node->req;

    wsc = (fg_sched_conf(sh->sched)->policy == FG_POLICY_WSC);

    /* the app's profile: its weights for wsc, its limit for OIT */
    pr = (node->app && (wsc || flcf->oit))
         ? ngx_http_fairgate_app_find(flcf->profiles, &ctx->app) : NULL;

    if (wsc) {
        if (node->user->u.client.priority != ctx->priority) {
            (void) fg_client_set_priority(sh->sched, &node->user->u.client,
                                          ctx->priority);
        }

        /* system prompts are weighed apart: they leave input_tokens */

        req->system_tokens = ctx->system_tokens;
        req->input_tokens = ctx->tokens_in - ctx->system_tokens;

        if (node->app) {
            req->app = ngx_http_fairgate_profile_get(zone, node->app, pr);
        }
    }

    /* the stage ends the interaction too, whatever the policy */
    req->interaction = ctx->interaction;
    req->stage = ctx->stage;

    /* without OIT only interactions are looked at; with it, every request */

    if (!flcf->oit && (ctx->interaction == 0 || sh->oit.capacity == 0)) {
        return NGX_OK;
    }

    /*
     * Idle interactions close as requests come by, a slice of the table
     * each, so that no request holds the zone's lock for a whole sweep.
     */

    fg_oit_expire_some(&sh->oit, now, NGX_HTTP_FAIRGATE_EXPIRE_SLICE);

    lu = NULL;
    la = NULL;
    overloaded = 0;

    if (flcf->oit) {
        overloaded = ngx_http_fairgate_overloaded(sh, flcf->oit_overload);
        sh->overloaded = overloaded;

        user.id = node->user->node.key;
        user.limit = (uint32_t) flcf->oit_user_rpm;
        user.recent = ngx_http_fairgate_tenant_requests(node->user);
        user.remote = ngx_http_fairgate_global_requests(zone, node->user);
        lu = &user;

        if (node->app) {
            app.id = node->app->node.key;
            app.limit = (uint32_t) ((pr && pr->oit_rpm != NGX_CONF_UNSET_UINT)
                                    ? pr->oit_rpm : flcf->oit_app_rpm);
            app.recent = ngx_http_fairgate_tenant_requests(node->app);
            app.remote = ngx_http_fairgate_global_requests(zone, node->app);
            la = &app;
        }
    }

    sh->oit.max_requests = (uint32_t) flcf->oit_max_requests;

    v = fg_oit_admit(&sh->oit, lu, la, ctx->interaction, ctx->stage,
                     ctx->stages, overloaded, now);

    ctx->oit = v;
    ctx->oit_set = 1;
    ctx->overloaded = overloaded;

    switch (v) {

    case FG_OIT_THROTTLE_USER:
        ngx_http_fairgate_interaction_throttled(ctx, lu, "user", now);
        return NGX_DECLINED;

    case FG_OIT_THROTTLE_APP:
        ngx_http_fairgate_interaction_throttled(ctx, la, "app", now);
        return NGX_DECLINED;

    case FG_OIT_CONTINUE:
        req->continues = 1;
        node->interaction = ctx->interaction;
        return NGX_OK;

    case FG_OIT_OPEN:
        node->interaction = ctx->interaction;
        return NGX_OK;

    default: /* FG_OIT_UNTRACKED */
        return NGX_OK;
    }
}


/* what the 429 and its x-ratelimit-requests headers tell */

static void
ngx_http_fairgate_interaction_throttled(ngx_http_fairgate_ctx_t *ctx,
    fg_oit_limit_t *l, const char *who, double now)
{
    ctx->hit_type = "requests";
    ctx->hit_who = who;
    ctx->hit_limit = l->limit;
    ctx->hit_used = fg_window_sum(l->recent, now) + l->remote;
    ctx->hit_need = 1;
    ctx->hit_wait = fg_window_wait(l->recent, now,
                                   l->remote < l->limit ? l->limit - l->remote
                                                        : 0, 1);

    ctx->rl_requests.limit = l->limit;
    ctx->rl_requests.remaining = 0;
    ctx->rl_requests.reset = ctx->hit_wait;
}


/*
 * Under the zone's mutex, as a request's node is freed: a request that
 * ended well adds its tokens to its interaction and may complete it; one
 * that did not (throttled, refused, timed out, failed, or its client gone)
 * cuts the interaction, whose tokens were then spent for nothing.
 */

void
ngx_http_fairgate_interaction_end(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node, uint64_t tokens, ngx_uint_t served,
    double now)
{
    fg_oit_t  *oit;

    if (node->interaction == 0) {
        return;
    }

    oit = &zone->sh->oit;

    fg_oit_spend(oit, node->interaction, tokens, now);

    if (served) {
        fg_oit_done(oit, node->interaction, node->req.stage, now);

    } else {
        fg_oit_abort(oit, node->interaction);
    }

    node->interaction = 0;
}


/*
 * The overload signal: requests wait in the fair queue (the capacity is
 * saturated), or the tokens held by requests in flight reach threshold of
 * the token capacity (the engine's KV positions, or inflight_tokens=).
 */

ngx_uint_t
ngx_http_fairgate_overloaded(ngx_http_fairgate_shctx_t *sh, double threshold)
{
    ngx_uint_t        cap;
    fg_sched_stats_t  st;

    fg_sched_stats(sh->sched, &st);

    if (st.waiting) {
        return 1;
    }

    cap = sh->local_tokens ? sh->local_tokens : sh->inflight_tokens;

    return cap && (double) sh->running_tokens >= threshold * cap;
}


