
/*
 * fairgate: response filters.  They see the upstream's response before
 * nginx's own filters (the module registers them last, so they run first):
 * uncompressed by nginx's gzip, not yet chunked.
 *
 * The header filter adds the x-ratelimit-* headers and decides how to count
 * the response: a stream (text/event-stream) or a JSON body.
 *
 * Streams are counted as they pass: each "data:" event with text (content,
 * reasoning, refusal, tool call arguments) counts its bytes / 4 tokens, at
 * least 1 (servers mostly send one token an event), charged to the tenant's
 * counter at once.  A JSON body is kept whole (up to 1 MB) and read at its
 * end.  Either way the upstream's "usage" (the body's, or a stream's final
 * chunk), when there is one, replaces the estimates when the request ends,
 * checked first against what the gateway saw (ngx_http_fairgate_usage_check,
 * in _account.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_usage.h"
#include "ngx_http_fairgate_request_int.h"
#include "ngx_http_fairgate_tenants.h"
#include "ngx_http_fairgate_quota.h"


#define NGX_HTTP_FAIRGATE_BODY_MAX  (1024 * 1024)
#define NGX_HTTP_FAIRGATE_LINE_MAX  (64 * 1024)


static ngx_int_t ngx_http_fairgate_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static uint32_t ngx_http_fairgate_sse(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, u_char *p, u_char *last);
static uint32_t ngx_http_fairgate_sse_line(ngx_http_fairgate_ctx_t *ctx,
    u_char *p, u_char *last);
static ngx_chain_t *ngx_http_fairgate_sse_cut(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_chain_t *in);
static ngx_int_t ngx_http_fairgate_keep(ngx_http_request_t *r,
    ngx_buf_t **bp, u_char *p, size_t len, size_t max);
static void ngx_http_fairgate_json_end(ngx_http_fairgate_ctx_t *ctx);
static void ngx_http_fairgate_usage(ngx_http_fairgate_ctx_t *ctx,
    fg_usage_t *u);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


ngx_int_t
ngx_http_fairgate_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_fairgate_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_fairgate_body_filter;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_header_filter(ngx_http_request_t *r)
{
    ngx_str_t                *type;
    ngx_table_elt_t          *enc;
    ngx_http_fairgate_ctx_t  *ctx;

    if (r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_fairgate_get_ctx(r);

    if (ctx == NULL) {
        return ngx_http_next_header_filter(r);
    }

    if (ngx_http_fairgate_limits_headers(r, ctx) != NGX_OK
        || ngx_http_fairgate_quota_headers(r, ctx) != NGX_OK
        || ngx_http_fairgate_price_header(r, ctx) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* local mode counts the engine's tokens, not the response's */

    if (ctx->phase != NGX_HTTP_FAIRGATE_ADMITTED || ctx->counting
        || ctx->local)
    {
        if (ctx->local && r->headers_out.status
                          >= NGX_HTTP_INTERNAL_SERVER_ERROR)
        {
            ctx->upstream_error = 1;
        }

        return ngx_http_next_header_filter(r);
    }

    if (r->headers_out.status >= NGX_HTTP_INTERNAL_SERVER_ERROR) {
        ctx->upstream_error = 1;
    }

    /* an error's body is no completion; a compressed one cannot be read */

    enc = r->headers_out.content_encoding;

    if (r->headers_out.status >= NGX_HTTP_BAD_REQUEST
        || (enc && enc->value.len
            && ngx_strncasecmp(enc->value.data, (u_char *) "identity", 8)
               != 0))
    {
        return ngx_http_next_header_filter(r);
    }

    type = &r->headers_out.content_type;

    ctx->counting = 1;
    ctx->sse = (type->len >= 17
                && ngx_strncasecmp(type->data, (u_char *) "text/event-stream",
                                   17)
                   == 0);

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "fairgate upstream: tenant \"%V\" answered %ui after "
                   "%M ms, %s",
                   &ctx->user, r->headers_out.status,
                   ngx_current_msec - ctx->start,
                   ctx->sse ? "its events counted as they stream"
                            : "its usage read at the body's end");

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_fairgate_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    uint32_t                  n;
    ngx_buf_t                *b;
    ngx_chain_t              *cl;
    ngx_http_fairgate_ctx_t  *ctx;

    if (r != r->main || in == NULL) {
        return ngx_http_next_body_filter(r, in);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_fairgate_module);

    if (ctx == NULL || ctx->phase != NGX_HTTP_FAIRGATE_ADMITTED
        || ctx->complete)
    {
        if (ctx && ctx->cost_trailer
            && ngx_http_fairgate_price_trailer(r, ctx, in) != NGX_OK)
        {
            return NGX_ERROR;
        }

        return ngx_http_next_body_filter(r, in);
    }

    n = 0;

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (b->last_buf) {
            ctx->complete = 1;
        }

        if (!ctx->counting) {
            continue;
        }

        ctx->bytes_out += ngx_buf_size(b);

        if (ngx_buf_in_memory(b)) {

            if (ctx->sse) {
                n += ngx_http_fairgate_sse(r, ctx, b->pos, b->last);

            } else if (!ctx->overflow
                       && ngx_http_fairgate_keep(r, &ctx->body, b->pos,
                                                 b->last - b->pos,
                                                 NGX_HTTP_FAIRGATE_BODY_MAX)
                          != NGX_OK)
            {
                ctx->overflow = 1;
            }

        } else if (b->in_file) {
            /* proxy_buffering wrote it to a temporary file: not counted */
            ctx->overflow = 1;
        }
    }

    if (n) {
        if (ctx->tokens_out == 0) {
            ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "fairgate first token: tenant \"%V\" %M ms "
                           "after admission, from the upstream",
                           &ctx->user, ngx_current_msec - ctx->start);
        }

        ctx->tokens_out += n;
        ngx_http_fairgate_charge(ctx, n);
    }

    if (ctx->sse && !ctx->complete) {
        in = ngx_http_fairgate_sse_cut(r, ctx, in);
    }

    if (ctx->complete) {
        if (ctx->counting && !ctx->sse) {
            ngx_http_fairgate_json_end(ctx);
        }

        ngx_http_fairgate_usage_check(ctx);

        /*
         * The upstream is done with it: its capacity goes to the next
         * request now, not when the connection closes (a lingering close
         * may wait seconds for the client).
         */

        ngx_http_fairgate_release(ctx);
    }

    /* the cost settled as the last buffer goes: its trailer */
    if (ctx->cost_trailer
        && ngx_http_fairgate_price_trailer(r, ctx, in) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_next_body_filter(r, in);
}


/*
 * A stream the upstream broke (reset, closed within its chunked framing,
 * or timed out) after its header: nginx closes the upstream, flushes what
 * it has and closes the client, which would see the stream cut without a
 * word, and its HTTP framing too (no last chunk: curl's "transfer closed
 * with outstanding read data").  It gets an error event and [DONE], as a
 * stream local mode's engine fails does, in the response's last buffer:
 * the chunked filter ends the body properly, and nginx then closes the
 * connection (keepalive is off after an upstream's error).  The flush
 * nginx sent is dropped: the last buffer flushes.  The request is an
 * upstream's error, for the access log and the scheduler.
 */

static ngx_chain_t *
ngx_http_fairgate_sse_cut(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx,
    ngx_chain_t *in)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    static u_char  event[] =
        "data: {\"error\":{\"message\":\"the upstream failed mid-stream\","
        "\"type\":\"server_error\",\"param\":null,"
        "\"code\":\"upstream_error\"}}\n\ndata: [DONE]\n\n";

    if (r->upstream == NULL || r->upstream->peer.connection != NULL
        || in->next != NULL || !in->buf->flush || ngx_buf_size(in->buf))
    {
        return in;
    }

    b = ngx_calloc_buf(r->pool);
    cl = ngx_alloc_chain_link(r->pool);

    if (b == NULL || cl == NULL) {
        return in;
    }

    b->pos = event;
    b->last = event + sizeof(event) - 1;
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;

    cl->buf = b;
    cl->next = NULL;
    ctx->complete = 1;
    ctx->upstream_error = 1;

    return cl;
}


/* SSE lines; a line split across buffers is kept until its end comes */

static uint32_t
ngx_http_fairgate_sse(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx,
    u_char *p, u_char *last)
{
    u_char    *nl;
    uint32_t   n;

    n = 0;

    while (p < last) {
        nl = ngx_strlchr(p, last, LF);

        if (nl == NULL) {
            if (ngx_http_fairgate_keep(r, &ctx->line, p, last - p,
                                       NGX_HTTP_FAIRGATE_LINE_MAX)
                != NGX_OK)
            {
                /* too long: dropped, and so is its rest */
                if (ctx->line) {
                    ctx->line->pos = ctx->line->last = ctx->line->start;
                }

                ctx->overflow = 1;
            }

            break;
        }

        if (ctx->line && ctx->line->last > ctx->line->pos) {
            if (ngx_http_fairgate_keep(r, &ctx->line, p, nl - p,
                                       NGX_HTTP_FAIRGATE_LINE_MAX)
                == NGX_OK && !ctx->overflow)
            {
                n += ngx_http_fairgate_sse_line(ctx, ctx->line->pos,
                                                ctx->line->last);
            }

            ctx->line->pos = ctx->line->last = ctx->line->start;
            ctx->overflow = 0;

        } else if (!ctx->overflow) {
            n += ngx_http_fairgate_sse_line(ctx, p, nl);

        } else {
            ctx->overflow = 0;
        }

        p = nl + 1;
    }

    return n;
}


/* a stream's line: fg_usage.c reads it */

static uint32_t
ngx_http_fairgate_sse_line(ngx_http_fairgate_ctx_t *ctx, u_char *p,
    u_char *last)
{
    uint32_t    n;
    fg_usage_t  u;

    ngx_memzero(&u, sizeof(fg_usage_t));

    n = fg_usage_sse_line(&u, p, last);

    ngx_http_fairgate_usage(ctx, &u);

    return n;
}


static void
ngx_http_fairgate_json_end(ngx_http_fairgate_ctx_t *ctx)
{
    fg_usage_t  u;

    if (ctx->body == NULL || ctx->overflow) {
        return;
    }

    ngx_memzero(&u, sizeof(fg_usage_t));

    if (fg_usage_at_end(&u, ctx->body->pos, ctx->body->last) == 0) {
        ngx_http_fairgate_usage(ctx, &u);
        return;
    }

    /* no usage where it is expected: the text's estimate, and any usage */

    ctx->tokens_out = fg_usage_scan(&u, ctx->body->pos,
                                    ctx->body->last - ctx->body->pos, 1);

    ngx_http_fairgate_usage(ctx, &u);
}


/* the upstream's usage, when it sent one, replaces the estimates */

static void
ngx_http_fairgate_usage(ngx_http_fairgate_ctx_t *ctx, fg_usage_t *u)
{
    if (u->found) {
        ctx->usage = 1;
        ctx->usage_in = u->in;
        ctx->usage_out = u->out;
    }
}


/* appends to a buffer that grows up to max; NGX_DECLINED beyond it */

static ngx_int_t
ngx_http_fairgate_keep(ngx_http_request_t *r, ngx_buf_t **bp, u_char *p,
    size_t len, size_t max)
{
    size_t      size, used;
    ngx_buf_t  *b, *nb;

    b = *bp;

    if (b == NULL) {

        /*
         * A body's length is mostly known: a buffer of just that size
         * (4 KB and up would be a malloc() of its own from the pool).
         */

        size = (r->headers_out.content_length_n > 0
                && r->headers_out.content_length_n <= (off_t) max)
               ? (size_t) r->headers_out.content_length_n : 2048;

        size = ngx_max(size, len);

        if (size > max) {
            return NGX_DECLINED;
        }

        b = ngx_create_temp_buf(r->pool, size);
        if (b == NULL) {
            return NGX_ERROR;
        }

        *bp = b;
    }

    if ((size_t) (b->end - b->last) < len) {
        used = b->last - b->pos;

        if (used + len > max) {
            return NGX_DECLINED;
        }

        size = ngx_min(ngx_max(2 * (size_t) (b->end - b->start), used + len),
                       max);

        nb = ngx_create_temp_buf(r->pool, size);
        if (nb == NULL) {
            return NGX_ERROR;
        }

        nb->last = ngx_cpymem(nb->pos, b->pos, used);
        *bp = nb;
        b = nb;
    }

    b->last = ngx_cpymem(b->last, p, len);

    return NGX_OK;
}
