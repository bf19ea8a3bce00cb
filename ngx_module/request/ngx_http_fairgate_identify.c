
/*
 * fairgate: step 1 of a request, who its tenant is.
 *
 * With fairgate_keys, from "Authorization: Bearer KEY" (or "x-api-key: KEY",
 * as Anthropic's clients send it), looked up in the
 * keys file (tenants/ngx_http_fairgate_keys.c): the key's user, app,
 * weight, priority and limits.  With fairgate_identity, from variables an
 * outer layer (auth_request, a client certificate, a trusted proxy's
 * header) filled: the user, app and weight, trusted as they are.  Then the
 * app's fairgate_app_limit, if one names it.  A request that cannot be told
 * apart is refused with 401, in OpenAI's words; an identity that is not
 * valid UTF-8 or holds a control character with 400, naming its header,
 * so that every name the zone keeps reads safely in JSON, Prometheus
 * labels and logs.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request_int.h"
#include "ngx_http_fairgate_tenants.h"
#include "fg_utf8.h"


static ngx_int_t ngx_http_fairgate_identify_key(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf);
static ngx_int_t ngx_http_fairgate_identify_redis(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf,
    ngx_str_t *key);
static void ngx_http_fairgate_identify_done(ngx_event_t *ev);
static ngx_int_t ngx_http_fairgate_identify_use(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf,
    ngx_http_fairgate_key_t *k);
static ngx_int_t ngx_http_fairgate_identify_end(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf);
static ngx_int_t ngx_http_fairgate_identify_vars(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf);
static ngx_int_t ngx_http_fairgate_identify_check(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_complex_value_t *cv,
    ngx_str_t *value);
static const char *ngx_http_fairgate_identify_header(ngx_http_request_t *r,
    ngx_http_complex_value_t *cv);
static ngx_uint_t ngx_http_fairgate_identify_printable(ngx_str_t *v);
static void ngx_http_fairgate_identify_app(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_loc_conf_t *flcf);
static ngx_int_t ngx_http_fairgate_unauthorized(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *code, const char *message);


static ngx_str_t  ngx_http_fairgate_unprintable =
    ngx_string("(not printable)");


ngx_int_t
ngx_http_fairgate_identify(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_loc_conf_t *flcf)
{
    ngx_int_t  rc;

    rc = flcf->keys ? ngx_http_fairgate_identify_key(r, ctx, flcf)
                    : ngx_http_fairgate_identify_vars(r, ctx, flcf);

    if (rc != NGX_OK || ctx->phase == NGX_HTTP_FAIRGATE_REFUSED) {
        return rc;
    }

    return ngx_http_fairgate_identify_end(r, ctx, flcf);
}


/* the identity found: its names' lengths, its app's limits */

static ngx_int_t
ngx_http_fairgate_identify_end(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf)
{
    if (ctx->user.len > NGX_HTTP_FAIRGATE_NAME_LEN
        || ctx->app.len > NGX_HTTP_FAIRGATE_NAME_LEN)
    {
        return ngx_http_fairgate_unauthorized(r, ctx, NULL,
                                              "The identity is longer than "
                                              "255 bytes.");
    }

    ngx_http_fairgate_identify_app(ctx, flcf);

    return NGX_OK;
}


/*
 * "Authorization: Bearer KEY", found in the keys file; without that
 * header, "x-api-key: KEY", Anthropic's (its SDKs send no other), sent
 * once: a key given twice could be read two ways.
 */

static ngx_int_t
ngx_http_fairgate_identify_key(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf)
{
    u_char                   *p, *last;
    ngx_str_t                 key;
    ngx_table_elt_t          *h;
    ngx_http_fairgate_key_t  *k;

    h = r->headers_in.authorization;

    if (h == NULL) {
        if (ngx_http_fairgate_header_once(r, "x-api-key", &h) != NGX_OK) {
            return ngx_http_fairgate_unauthorized(r, ctx, "invalid_api_key",
                       "The x-api-key header must be sent once.");
        }

        if (h == NULL) {
            return ngx_http_fairgate_unauthorized(r, ctx, NULL,
                       "You didn't provide an API key. You need to provide "
                       "your API key in an Authorization header using "
                       "Bearer auth (i.e. Authorization: Bearer YOUR_KEY).");
        }

        p = h->value.data;

    } else {
        p = h->value.data;

        if (h->value.len < 7
            || ngx_strncasecmp(p, (u_char *) "Bearer ", 7) != 0)
        {
            return ngx_http_fairgate_unauthorized(r, ctx, "invalid_api_key",
                       "The Authorization header must be \"Bearer "
                       "YOUR_KEY\".");
        }

        p += 7;
    }

    last = h->value.data + h->value.len;

    for ( /* void */ ; p < last && *p == ' '; p++) { /* void */ }

    while (last > p && last[-1] == ' ') {
        last--;
    }

    key.data = p;
    key.len = last - p;

    if (flcf->keys->shm_zone && key.len) {
        return ngx_http_fairgate_identify_redis(r, ctx, flcf, &key);
    }

    k = key.len ? ngx_http_fairgate_key_find(flcf->keys, &key) : NULL;

    /* a keys file's key's own quotas, as a Redis key's (few have any) */

    if (k != NULL && flcf->keys->rules.nelts) {
        ngx_http_fairgate_key_rules(flcf->keys, k, &ctx->key_rules,
                                    &ctx->key_nrules);
    }

    return ngx_http_fairgate_identify_use(r, ctx, flcf, k);
}


/* the key's settings are the request's; NULL: no such key */

static ngx_int_t
ngx_http_fairgate_identify_use(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf,
    ngx_http_fairgate_key_t *k)
{
    if (k == NULL) {
        return ngx_http_fairgate_unauthorized(r, ctx, "invalid_api_key",
                                              "Incorrect API key provided.");
    }

    ctx->key_id.data = k->id;
    ctx->key_id.len = NGX_HTTP_FAIRGATE_KEY_ID_LEN;
    ctx->user = k->user;
    ctx->app = k->app;
    ctx->key_models = k->models;
    ctx->key_quota = k->quota;
    ctx->key_budget = k->budget;
    ctx->weight = k->weight;
    ctx->priority = k->priority;
    ctx->user_limit.rpm = k->limit.rpm ? k->limit.rpm : flcf->user_limit.rpm;
    ctx->user_limit.tpm = k->limit.tpm ? k->limit.tpm : flcf->user_limit.tpm;

    return NGX_OK;
}


/*
 * A key kept in Redis (tenants/ngx_http_fairgate_keystore.c): found in the
 * cache, or looked up, the request waiting (NGX_AGAIN) until
 * ngx_http_fairgate_identify_done() takes it on.
 */

static ngx_int_t
ngx_http_fairgate_identify_redis(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf,
    ngx_str_t *key)
{
    u_char                           md[32];
    ngx_int_t                        rc;
    ngx_http_fairgate_key_lookup_t  *lk;

    lk = ngx_pcalloc(r->pool, sizeof(ngx_http_fairgate_key_lookup_t));

    if (lk == NULL || ngx_http_fairgate_key_digest(key, md) != NGX_OK) {
        return NGX_ERROR;
    }

    rc = ngx_http_fairgate_keystore_find(r, flcf->keys, md, lk);

    switch (rc) {

    case NGX_OK:
        ngx_hex_dump(lk->key.id, md, NGX_HTTP_FAIRGATE_KEY_ID_LEN / 2);
        ctx->key_rules = lk->rules;
        ctx->key_nrules = lk->nrules;
        return ngx_http_fairgate_identify_use(r, ctx, flcf, &lk->key);

    case NGX_AGAIN:
        lk->done.handler = ngx_http_fairgate_identify_done;
        lk->done.data = lk;
        lk->done.log = r->connection->log;
        ctx->phase = NGX_HTTP_FAIRGATE_IDENTIFYING;
        return NGX_AGAIN;

    case NGX_DECLINED:
        return ngx_http_fairgate_identify_use(r, ctx, flcf, NULL);

    case NGX_BUSY:
        return ngx_http_fairgate_refuse(r, ctx, NGX_HTTP_FAIRGATE_ERROR,
                                        NGX_HTTP_SERVICE_UNAVAILABLE,
                                        "server_error", NULL,
                                        "service_unavailable",
                                        "The API key could not be checked "
                                        "now: please try again later.", 1);

    default:
        return NGX_ERROR;
    }
}


/* Redis answered (or did not in time): the request's first pass goes on */

static void
ngx_http_fairgate_identify_done(ngx_event_t *ev)
{
    ngx_http_fairgate_key_lookup_t  *lk = ev->data;

    ngx_int_t                      rc;
    ngx_connection_t              *c;
    ngx_http_request_t            *r;
    ngx_http_fairgate_ctx_t       *ctx;
    ngx_http_fairgate_loc_conf_t  *flcf;

    r = lk->request;
    c = r->connection;
    ctx = ngx_http_fairgate_get_ctx(r);
    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

    ctx->phase = NGX_HTTP_FAIRGATE_IDENTIFIED;

    if (lk->rc == NGX_BUSY) {
        rc = ngx_http_fairgate_refuse(r, ctx, NGX_HTTP_FAIRGATE_ERROR,
                                      NGX_HTTP_SERVICE_UNAVAILABLE,
                                      "server_error", NULL,
                                      "service_unavailable",
                                      "The API key could not be checked "
                                      "now: please try again later.", 1);

    } else {
        if (lk->rc == NGX_OK) {
            ctx->key_rules = lk->rules;
            ctx->key_nrules = lk->nrules;
        }

        rc = ngx_http_fairgate_identify_use(r, ctx, flcf,
                                            lk->rc == NGX_OK ? &lk->key
                                                             : NULL);

        if (rc == NGX_OK && ctx->phase != NGX_HTTP_FAIRGATE_REFUSED) {
            rc = ngx_http_fairgate_identify_end(r, ctx, flcf);
        }
    }

    if (ctx->phase == NGX_HTTP_FAIRGATE_REFUSED || rc != NGX_OK) {
        ngx_http_finalize_request(r, ctx->phase == NGX_HTTP_FAIRGATE_REFUSED
                                     ? rc : NGX_HTTP_INTERNAL_SERVER_ERROR);

    } else {
        r->write_event_handler = ngx_http_core_run_phases;
        ngx_http_core_run_phases(r);
    }

    ngx_http_run_posted_requests(c);
}


/* fairgate_identity user=... app=... weight=...: the variables' values */

static ngx_int_t
ngx_http_fairgate_identify_vars(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf)
{
    double     w;
    ngx_int_t  rc;
    ngx_str_t  weight;

    if (ngx_http_complex_value(r, flcf->user, &ctx->user) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ctx->user.len == 0) {
        return ngx_http_fairgate_unauthorized(r, ctx, NULL,
                                              "The request carries no "
                                              "identity.");
    }

    if (flcf->app
        && ngx_http_complex_value(r, flcf->app, &ctx->app) != NGX_OK)
    {
        return NGX_ERROR;
    }

    rc = ngx_http_fairgate_identify_check(r, ctx, flcf->user, &ctx->user);

    if (rc == NGX_DECLINED && flcf->app) {
        rc = ngx_http_fairgate_identify_check(r, ctx, flcf->app, &ctx->app);
    }

    if (rc != NGX_DECLINED) {
        return rc;
    }

    ctx->weight = 1.0;
    ctx->priority = 1.0;
    ctx->user_limit = flcf->user_limit;

    if (flcf->weight == NULL) {
        return NGX_OK;
    }

    if (ngx_http_complex_value(r, flcf->weight, &weight) != NGX_OK) {
        return NGX_ERROR;
    }

    /* a number with up to 3 decimals; anything else counts as 1 */

    w = (double) ngx_atofp(weight.data, weight.len, 3);

    if (w > 0) {
        ctx->weight = w / 1000.0;

    } else if (weight.len) {
        /* the client's bytes only where they cannot forge a log line */
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "fairgate: invalid weight \"%V\" of user \"%V\", "
                      "1 used",
                      ngx_http_fairgate_identify_printable(&weight)
                      ? &weight : &ngx_http_fairgate_unprintable,
                      &ctx->user);
    }

    return NGX_OK;
}


/*
 * A name as it came: strict UTF-8 (fg_utf8.h), no control character.
 * Anything else is refused, not mended, so that the tenant the zone
 * counts is the one the client named.  NGX_DECLINED: the name is good.
 */

static ngx_int_t
ngx_http_fairgate_identify_check(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_complex_value_t *cv,
    ngx_str_t *value)
{
    size_t       k;
    u_char      *p, *last, *msg;
    uint32_t     cp;
    const char  *what, *header;

    p = value->data;
    last = p + value->len;
    what = NULL;

    while (p < last) {

        if (*p < 0x20 || *p == 0x7f) {
            what = "holds a control character";
            break;
        }

        k = fg_utf8_decode(p, last - p, &cp);

        if (k == 0) {
            what = "is not valid UTF-8";
            break;
        }

        p += k;
    }

    if (what == NULL) {
        return NGX_DECLINED;
    }

    header = ngx_http_fairgate_identify_header(r, cv);
    if (header == NULL) {
        return NGX_ERROR;
    }

    msg = ngx_pnalloc(r->pool, ngx_strlen(header) + 64);
    if (msg == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(msg, "The identity in %s %s.%Z", header, what);

    return ngx_http_fairgate_refuse_header(r, ctx, header, "invalid_identity",
                                           (char *) msg);
}


/*
 * The header an identity variable reads, "$http_x_user" as "X-User", or
 * the variable as configured; NUL-terminated, NULL: out of memory.
 */

static const char *
ngx_http_fairgate_identify_header(ngx_http_request_t *r,
    ngx_http_complex_value_t *cv)
{
    u_char      *s, *p, *c, *last;
    ngx_str_t   *v;
    ngx_uint_t   up;

    v = &cv->value;

    s = ngx_pnalloc(r->pool, ngx_min(v->len, 128) + 1);
    if (s == NULL) {
        return NULL;
    }

    if (v->len <= 6 || v->len > 128
        || ngx_strncmp(v->data, "$http_", 6) != 0)
    {
        p = ngx_cpymem(s, v->data, ngx_min(v->len, 128));
        *p = '\0';
        return (char *) s;
    }

    p = s;
    last = v->data + v->len;
    up = 1;

    for (c = v->data + 6; c < last; c++) {
        *p++ = (*c == '_') ? '-' : (up ? ngx_toupper(*c) : *c);
        up = (*c == '_');
    }

    *p = '\0';

    return (char *) s;
}


/* whether a value is printable ASCII, fit for the error log as it is */

static ngx_uint_t
ngx_http_fairgate_identify_printable(ngx_str_t *v)
{
    size_t  i;

    for (i = 0; i < v->len; i++) {
        if (v->data[i] < 0x20 || v->data[i] > 0x7e) {
            return 0;
        }
    }

    return 1;
}


/* the app's own limits, where a fairgate_app_limit names it */

static void
ngx_http_fairgate_identify_app(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_loc_conf_t *flcf)
{
    ngx_http_fairgate_app_limit_t  *al;

    if (ctx->app.len == 0) {
        return;
    }

    al = ngx_http_fairgate_app_find(flcf->app_limits, &ctx->app);

    if (al != NULL) {
        ctx->app_limit = al->limit;
    }
}


static ngx_int_t
ngx_http_fairgate_unauthorized(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *code, const char *message)
{
    return ngx_http_fairgate_refuse(r, ctx, NGX_HTTP_FAIRGATE_UNAUTHORIZED,
                                    NGX_HTTP_UNAUTHORIZED,
                                    "invalid_request_error", NULL, code,
                                    message, 0);
}
