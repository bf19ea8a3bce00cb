
/*
 * fairgate: what the quotas tell the client and the log.
 *
 * A request over a quota gets OpenAI's 429 "insufficient_quota", which
 * names the tenant, the window and what it used, with Retry-After at the
 * window's reset (a rolling window's: when enough of it has left) and the
 * x-ratelimit-* headers of that quota (budgets: x-fairgate-budget-*).  A
 * request past a quota's soft threshold carries x-fairgate-quota-warning
 * ("budget day 82%"), and the first of its tenant in that window is
 * logged at "warn".
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_quota.h"
#include "ngx_http_fairgate_http.h"


#define NGX_HTTP_FAIRGATE_AMOUNT_LEN  (NGX_INT64_LEN + 11)


static const char *ngx_http_fairgate_quota_what(
    ngx_http_fairgate_quota_hit_t *hit);
static u_char *ngx_http_fairgate_quota_amount(u_char *p, uint64_t cost);
static ngx_int_t ngx_http_fairgate_quota_budget(ngx_http_request_t *r,
    ngx_http_fairgate_quota_hit_t *hit);
static void ngx_http_fairgate_quota_rl(ngx_http_fairgate_rl_t *rl,
    uint64_t limit, uint64_t used, double reset);


/* the limit a hit is about: the one over, or the highest share used */

static const char *
ngx_http_fairgate_quota_what(ngx_http_fairgate_quota_hit_t *hit)
{
    uint32_t                    over;
    fg_quota_limit_t            one;
    ngx_http_fairgate_quota_t  *q;

    q = hit->quota;
    over = hit->over;

    if (over == 0) {
        /* the limit whose share is the hit's percent */
        ngx_memzero(&one, sizeof(fg_quota_limit_t));
        one.cost = q->limit.cost;

        if (one.cost && fg_quota_percent(&one, &hit->used) == hit->percent) {
            return "budget";
        }

        one.cost = 0;
        one.tokens = q->limit.tokens;

        return (one.tokens
                && fg_quota_percent(&one, &hit->used) == hit->percent)
               ? "tokens" : "requests";
    }

    return (over & FG_QUOTA_COST) ? "budget"
           : (over & FG_QUOTA_TOKENS) ? "tokens" : "requests";
}


/* an amount of money from its billionths: "12.50", "0.000125" */

static u_char *
ngx_http_fairgate_quota_amount(u_char *p, uint64_t cost)
{
    u_char    frac[10], *f;
    uint64_t  rest;

    rest = cost % 1000000000;
    (void) ngx_sprintf(frac, "%09uL", rest);

    for (f = frac + 9; f > frac + 2 && f[-1] == '0'; f--) { /* void */ }

    return ngx_sprintf(p, "%uL.%*s", cost / 1000000000, (size_t) (f - frac),
                       frac);
}


/* "requests per day": what and window, as the messages say them */

u_char *
ngx_http_fairgate_quota_text(u_char *p, ngx_http_fairgate_quota_hit_t *hit)
{
    return ngx_sprintf(p, "%s %V", ngx_http_fairgate_quota_what(hit),
                       &hit->quota->window);
}


ngx_int_t
ngx_http_fairgate_quota_reject(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    u_char                         *msg, *p;
    time_t                          wait;
    const char                     *what;
    ngx_http_fairgate_quota_t      *q;
    ngx_http_fairgate_quota_hit_t  *hit;

    hit = ctx->quota;
    q = hit->quota;
    what = ngx_http_fairgate_quota_what(hit);

    wait = hit->reset - ngx_time();
    if (wait < 1) {
        wait = 1;
    }

    if (q->limit.requests) {
        ngx_http_fairgate_quota_rl(&ctx->rl_requests, q->limit.requests,
                                   hit->used.requests, (double) wait);
    }

    if (q->limit.tokens) {
        ngx_http_fairgate_quota_rl(&ctx->rl_tokens, q->limit.tokens,
                                   hit->used.tokens, (double) wait);
    }

    msg = ngx_pnalloc(r->pool, 320 + hit->tenant.len + q->window.len
                               + 2 * NGX_HTTP_FAIRGATE_AMOUNT_LEN);
    if (msg == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_sprintf(msg, "You exceeded your current quota, please check "
                    "your plan and billing details. The %s %V has used ",
                    ngx_http_fairgate_quota_kind(q->kind), &hit->tenant);

    if (what[0] == 'b') {
        p = ngx_http_fairgate_quota_amount(p, hit->used.cost);
        p = ngx_sprintf(p, " of its budget of ");
        p = ngx_http_fairgate_quota_amount(p, q->limit.cost);
        p = ngx_sprintf(p, " per %V", &q->window);

    } else {
        p = ngx_sprintf(p, "%uL of its %uL %s per %V",
                        what[0] == 't' ? hit->used.tokens
                                       : hit->used.requests,
                        what[0] == 't' ? q->limit.tokens : q->limit.requests,
                        what, &q->window);
    }

    p = ngx_sprintf(p, "; it resets in %T s.", wait);
    *p = '\0';

    ctx->outcome = NGX_HTTP_FAIRGATE_THROTTLED;

    return ngx_http_fairgate_send_error(r, NGX_HTTP_TOO_MANY_REQUESTS,
                                        "insufficient_quota", NULL,
                                        "insufficient_quota", (char *) msg,
                                        wait);
}


static void
ngx_http_fairgate_quota_rl(ngx_http_fairgate_rl_t *rl, uint64_t limit,
    uint64_t used, double reset)
{
    rl->limit = (ngx_uint_t) limit;
    rl->remaining = (used < limit) ? limit - used : 0;
    rl->reset = reset;
}


/*
 * The response's headers: a refusal's budget, or the soft threshold's
 * warning.  The x-ratelimit-* ones are the rate limits' (tenants/), set
 * for a refusal's quota by ngx_http_fairgate_quota_reject().
 */

ngx_int_t
ngx_http_fairgate_quota_headers(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    u_char                         *v, *p;
    ngx_http_fairgate_quota_hit_t  *hit;

    hit = ctx->quota;

    if (hit == NULL || hit->quota == NULL) {
        return NGX_OK;
    }

    if (hit->over) {
        return ngx_http_fairgate_quota_budget(r, hit);
    }

    v = ngx_pnalloc(r->pool, hit->quota->window.len + 32);
    if (v == NULL) {
        return NGX_ERROR;
    }

    p = ngx_http_fairgate_quota_text(v, hit);
    p = ngx_sprintf(p, " %uD%%", hit->percent);

    return ngx_http_fairgate_add_header(r, "x-fairgate-quota-warning", v,
                                        p - v);
}


static ngx_int_t
ngx_http_fairgate_quota_budget(ngx_http_request_t *r,
    ngx_http_fairgate_quota_hit_t *hit)
{
    u_char                     *v, *p;
    uint64_t                    left;
    ngx_http_fairgate_quota_t  *q;

    q = hit->quota;

    if (q->limit.cost == 0) {
        return NGX_OK;
    }

    v = ngx_pnalloc(r->pool, 2 * NGX_HTTP_FAIRGATE_AMOUNT_LEN);
    if (v == NULL) {
        return NGX_ERROR;
    }

    p = ngx_http_fairgate_quota_amount(v, q->limit.cost);

    if (ngx_http_fairgate_add_header(r, "x-fairgate-budget-limit", v, p - v)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    left = (hit->used.cost < q->limit.cost)
           ? q->limit.cost - hit->used.cost : 0;

    v = p;
    p = ngx_http_fairgate_quota_amount(v, left);

    return ngx_http_fairgate_add_header(r, "x-fairgate-budget-remaining", v,
                                        p - v);
}


/* the soft threshold's line, once a tenant and window (after the mutex) */

void
ngx_http_fairgate_quota_log(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    u_char                         *buf, *p;
    ngx_http_fairgate_quota_hit_t  *hit;

    hit = ctx->quota;

    if (hit == NULL || hit->quota == NULL || !hit->log) {
        return;
    }

    buf = ngx_pnalloc(r->pool, hit->quota->window.len + 16);
    if (buf == NULL) {
        return;
    }

    p = ngx_http_fairgate_quota_text(buf, hit);

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "fairgate_quota: %s \"%V\" has used %uD%% of its %*s, "
                  "past its soft threshold of %uD%%",
                  ngx_http_fairgate_quota_kind(hit->quota->kind),
                  &hit->tenant, hit->percent, (size_t) (p - buf), buf,
                  hit->quota->limit.soft);
}


/* $fairgate_quota: "user requests day exceeded", "key budget month 82%" */

ngx_int_t
ngx_http_fairgate_quota_variable(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    u_char                         *p;
    ngx_http_fairgate_quota_hit_t  *hit;

    hit = ctx->quota;

    if (hit == NULL || hit->quota == NULL) {
        ngx_str_null(s);
        return NGX_OK;
    }

    s->data = ngx_pnalloc(r->pool, hit->quota->window.len + 48);
    if (s->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(s->data, "%s ",
                    ngx_http_fairgate_quota_kind(hit->quota->kind));
    p = ngx_http_fairgate_quota_text(p, hit);

    p = hit->over ? ngx_sprintf(p, " exceeded")
                  : ngx_sprintf(p, " %uD%%", hit->percent);

    s->len = p - s->data;

    return NGX_OK;
}
