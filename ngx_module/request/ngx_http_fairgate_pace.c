
/*
 * fairgate: the token pacer (Andes), a body filter.
 *
 *     fairgate_pace on | off;
 *
 * A streamed answer with a reading speed (fairgate_qoe, or the request's
 * X-Fairgate-Reading-Speed) is cut into its SSE events; an event that
 * carries text (a token) is released no sooner than 1/speed after the one
 * before, as Andes's reader consumes it: token i at max(its arrival, token
 * i-1's release + 1/speed).  So the pacer never costs QoE, and the first
 * token, or one that comes late, goes at once.  Events without text (the
 * role, finish and usage chunks, [DONE]) follow the token before them at
 * once: the end of a stream waits for nothing but its last token's turn.
 *
 * One filter for both modes: local mode's chunks (local/_stream.c) and an
 * upstream's SSE (proxy_pass) both come down the body filters.  Nothing is
 * copied: a held event is a buffer of ours over the owner's memory
 * (b->shadow), and the owner's buffer is consumed (pos moved) only as ours
 * are written, so its owner neither reuses it early nor reads on from its
 * upstream while its buffers are held (proxy_buffer_size and
 * proxy_buffers bound what an upstream may send ahead).  One timer a
 * stream wakes the pacer at the next token's turn; the request's write
 * handler is then posted, so that its owner takes its buffers back (and
 * nginx's writer finalizes a request whose end was held).  A request that
 * ends, however, deletes the timer with its pool, and counts its stream's
 * QoE for its tenants (request/_account.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_qoe.h"
#include "ngx_http_fairgate_request_int.h"


/* r->buffered while events are held (the image filter's bit: the two
 * never meet, an SSE stream is no image) */
#define NGX_HTTP_FAIRGATE_PACE_BUFFERED  0x08

/* a held buffer's b->num: what it ends */
#define NGX_HTTP_FAIRGATE_PACE_PART      0   /* part of an event */
#define NGX_HTTP_FAIRGATE_PACE_TOKEN     1   /* an event with text */
#define NGX_HTTP_FAIRGATE_PACE_OTHER     2   /* another event */


struct ngx_http_fairgate_pace_s {
    ngx_http_request_t          *request;
    ngx_http_fairgate_ctx_t     *ctx;
    ngx_event_t                  timer;

    ngx_chain_t                 *held;       /* in order, ours */
    ngx_chain_t                **last;
    ngx_chain_t                 *busy;       /* released, being written */
    ngx_chain_t                 *free;

    double                       gap;        /* ms between tokens; 0: not
                                                paced */
    double                       next;       /* ms: the next token's turn */

    fg_qoe_t                     qoe;        /* as delivered */

    unsigned                     nl:1;       /* the last byte was '\n' */
    unsigned                     partial:1;  /* an event begun in an
                                                earlier buffer */
};


static ngx_int_t ngx_http_fairgate_pace_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_pace_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_fairgate_pace_start(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_flag_t pace);
static ngx_int_t ngx_http_fairgate_pace_hold(ngx_http_fairgate_pace_t *p,
    ngx_chain_t *in);
static ngx_int_t ngx_http_fairgate_pace_cut(ngx_http_fairgate_pace_t *p,
    ngx_buf_t *b);
static ngx_int_t ngx_http_fairgate_pace_add(ngx_http_fairgate_pace_t *p,
    ngx_buf_t *b, u_char *pos, u_char *last, ngx_uint_t num);
static ngx_uint_t ngx_http_fairgate_pace_is_token(u_char *p, u_char *last);
static ngx_int_t ngx_http_fairgate_pace_send(ngx_http_fairgate_pace_t *p);
static ngx_chain_t *ngx_http_fairgate_pace_due(ngx_http_fairgate_pace_t *p);
static void ngx_http_fairgate_pace_update(ngx_http_fairgate_pace_t *p,
    ngx_chain_t *out);
static void ngx_http_fairgate_pace_wake(ngx_event_t *ev);
static void ngx_http_fairgate_pace_cleanup(void *data);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


ngx_int_t
ngx_http_fairgate_pace_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_fairgate_pace_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_fairgate_pace_body_filter;

    return NGX_OK;
}


/* a stream of the module's, with expectations, answered 200 in clear */

static ngx_int_t
ngx_http_fairgate_pace_header_filter(ngx_http_request_t *r)
{
    ngx_str_t                     *type;
    ngx_table_elt_t               *enc;
    ngx_http_fairgate_ctx_t       *ctx;
    ngx_http_fairgate_loc_conf_t  *flcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

    if (r != r->main || r->headers_out.status != NGX_HTTP_OK) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_fairgate_get_ctx(r);
    type = &r->headers_out.content_type;
    enc = r->headers_out.content_encoding;

    if (ctx == NULL || (ctx->qoe_speed <= 0 && ctx->qoe_ttft == 0)
        || ctx->pace
        || type->len < 17
        || ngx_strncasecmp(type->data, (u_char *) "text/event-stream", 17)
           != 0
        || (enc && enc->value.len
            && ngx_strncasecmp(enc->value.data, (u_char *) "identity", 8)
               != 0))
    {
        return ngx_http_next_header_filter(r);
    }

    if (ngx_http_fairgate_pace_start(r, ctx, flcf->pace) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_fairgate_pace_start(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_flag_t pace)
{
    fg_qoe_expect_t            e;
    ngx_pool_cleanup_t        *cln;
    ngx_http_fairgate_pace_t  *p;

    /* the pacer lives in its cleanup's data: freed with the request */

    cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_http_fairgate_pace_t));
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_fairgate_pace_cleanup;

    p = cln->data;
    ngx_memzero(p, sizeof(ngx_http_fairgate_pace_t));
    p->request = r;
    p->ctx = ctx;
    p->last = &p->held;
    p->gap = (pace && ctx->qoe_speed > 0) ? 1000.0 / ctx->qoe_speed : 0;

    /* submitted when the gateway had the request */
    e.ttft = ctx->qoe_ttft / 1000.0;
    e.speed = ctx->qoe_speed;
    fg_qoe_init(&p->qoe, &e, ctx->start / 1000.0);

    p->timer.handler = ngx_http_fairgate_pace_wake;
    p->timer.data = p;
    p->timer.log = r->connection->log;

    ctx->pace = p;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_pace_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_http_fairgate_ctx_t  *ctx;

    ctx = (r == r->main) ? ngx_http_fairgate_get_ctx(r) : NULL;

    if (ctx == NULL || ctx->pace == NULL) {
        return ngx_http_next_body_filter(r, in);
    }

    if (ngx_http_fairgate_pace_hold(ctx->pace, in) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_fairgate_pace_send(ctx->pace);
}


/*
 * What comes is held, cut into events: a buffer in memory is cut where
 * its events end; any other (a file's, a flush, the last) is held whole.
 */

static ngx_int_t
ngx_http_fairgate_pace_hold(ngx_http_fairgate_pace_t *p, ngx_chain_t *in)
{
    double        now;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    /* an empty queue: a token that comes now may go now */

    now = (double) ngx_current_msec;

    if (p->held == NULL && p->next < now) {
        p->next = now;
    }

    for ( /* void */ ; in; in = in->next) {
        b = in->buf;

        if (ngx_buf_in_memory(b) && b->last > b->pos) {
            if (ngx_http_fairgate_pace_cut(p, b) != NGX_OK) {
                return NGX_ERROR;
            }

            continue;
        }

        cl = ngx_alloc_chain_link(p->request->pool);
        if (cl == NULL) {
            return NGX_ERROR;
        }

        cl->buf = b;
        cl->next = NULL;
        *p->last = cl;
        p->last = &cl->next;
    }

    return NGX_OK;
}


/* a buffer's events, each ended by a blank line ("\n\n", "\r\n\r\n") */

static ngx_int_t
ngx_http_fairgate_pace_cut(ngx_http_fairgate_pace_t *p, ngx_buf_t *b)
{
    u_char      *c, *start, *event;
    ngx_uint_t   num;

    start = b->pos;
    event = p->partial ? NULL : start;

    for (c = b->pos; c < b->last; c++) {

        if (*c != '\n') {
            if (*c != '\r') {
                p->nl = 0;
            }

            continue;
        }

        if (!p->nl) {
            p->nl = 1;
            continue;
        }

        /* an event's end; one begun in an earlier buffer counts as text */

        p->nl = 0;
        p->partial = 0;

        num = (event == NULL)
              ? NGX_HTTP_FAIRGATE_PACE_TOKEN
              : ngx_http_fairgate_pace_is_token(event, c);

        if (ngx_http_fairgate_pace_add(p, b, start, c + 1, num) != NGX_OK) {
            return NGX_ERROR;
        }

        start = c + 1;
        event = start;
    }

    if (start == b->last) {
        return NGX_OK;
    }

    p->partial = 1;

    return ngx_http_fairgate_pace_add(p, b, start, b->last,
                                      NGX_HTTP_FAIRGATE_PACE_PART);
}


/* a buffer of ours over [pos, last) of b, held; the last one takes b's
 * flags */

static ngx_int_t
ngx_http_fairgate_pace_add(ngx_http_fairgate_pace_t *p, ngx_buf_t *b,
    u_char *pos, u_char *last, ngx_uint_t num)
{
    ngx_buf_t    *s;
    ngx_chain_t  *cl;

    cl = ngx_chain_get_free_buf(p->request->pool, &p->free);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    s = cl->buf;
    ngx_memzero(s, sizeof(ngx_buf_t));

    s->pos = pos;
    s->last = last;
    s->start = pos;
    s->end = last;
    s->memory = 1;
    s->shadow = b;
    s->num = (ngx_int_t) num;
    s->tag = (ngx_buf_tag_t) &ngx_http_fairgate_pace_init;

    if (last == b->last) {
        s->flush = b->flush;
        s->sync = b->sync;
        s->last_buf = b->last_buf;
        s->last_in_chain = b->last_in_chain;
    }

    *p->last = cl;
    p->last = &cl->next;

    return NGX_OK;
}


/*
 * Whether an event carries text: a "content" (chat, reasoning), or a
 * "text" (completions, Anthropic's text_delta), a "delta" (the Responses
 * API's text events), a "thinking" or "partial_json" (Anthropic's
 * reasoning and a tool's input), that is not empty.  Inside a string a
 * quote is escaped, so no text of the answer looks like either.
 */

static ngx_uint_t
ngx_http_fairgate_pace_is_token(u_char *p, u_char *last)
{
    u_char      *c, *k;
    ngx_uint_t   i;

    static ngx_str_t  keys[] = {
        ngx_string("content\":"),
        ngx_string("\"text\":"),
        ngx_string("\"delta\":"),
        ngx_string("\"thinking\":"),
        ngx_string("\"partial_json\":")
    };

    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {

        for (c = p; c < last; c = k + keys[i].len) {
            k = ngx_strlcasestrn(c, last, keys[i].data, keys[i].len - 1);

            if (k == NULL) {
                break;
            }

            for (c = k + keys[i].len; c < last && *c == ' '; c++) {
                /* void */
            }

            if (last - c >= 2 && c[0] == '"' && c[1] != '"') {
                return NGX_HTTP_FAIRGATE_PACE_TOKEN;
            }
        }
    }

    return NGX_HTTP_FAIRGATE_PACE_OTHER;
}


/*
 * What is due goes down the filters; the timer is set for the next
 * token's turn, and the request says it holds data while it does.
 */

static ngx_int_t
ngx_http_fairgate_pace_send(ngx_http_fairgate_pace_t *p)
{
    double               now;
    ngx_int_t            rc;
    ngx_chain_t         *out;
    ngx_http_request_t  *r;

    r = p->request;

    out = ngx_http_fairgate_pace_due(p);

    rc = ngx_http_next_body_filter(r, out);

    ngx_http_fairgate_pace_update(p, out);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (p->held == NULL) {
        r->buffered &= ~NGX_HTTP_FAIRGATE_PACE_BUFFERED;
        return rc;
    }

    r->buffered |= NGX_HTTP_FAIRGATE_PACE_BUFFERED;

    if (!p->timer.timer_set) {
        now = (double) ngx_current_msec;
        ngx_add_timer(&p->timer, p->next > now ? (ngx_msec_t) (p->next - now)
                                                 + 1
                                               : 1);
    }

    return NGX_AGAIN;
}


/* the held events whose turn has come, the last flushed */

static ngx_chain_t *
ngx_http_fairgate_pace_due(ngx_http_fairgate_pace_t *p)
{
    double        now;
    ngx_chain_t  *out, **ll, *cl;

    now = (double) ngx_current_msec;
    out = NULL;
    ll = &out;
    cl = NULL;

    while (p->held) {
        if (p->held->buf->tag == (ngx_buf_tag_t) &ngx_http_fairgate_pace_init
            && p->held->buf->num == NGX_HTTP_FAIRGATE_PACE_TOKEN)
        {
            if (p->next > now) {
                break;
            }

            p->next += p->gap;
            fg_qoe_token(&p->qoe, now / 1000.0);
        }

        cl = p->held;
        p->held = cl->next;
        *ll = cl;
        ll = &cl->next;
    }

    *ll = NULL;

    if (p->held == NULL) {
        p->last = &p->held;
    }

    if (cl && cl->buf->tag == (ngx_buf_tag_t) &ngx_http_fairgate_pace_init) {
        cl->buf->flush = 1;
    }

    return out;
}


/*
 * Buffers of ours written: their owner's buffer is consumed up to their
 * end, and they are kept for the next events.
 */

static void
ngx_http_fairgate_pace_update(ngx_http_fairgate_pace_t *p, ngx_chain_t *out)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl, **ll;

    for (ll = &p->busy; *ll; ll = &(*ll)->next) { /* void */ }

    *ll = out;

    while (p->busy) {
        cl = p->busy;
        b = cl->buf;

        if (ngx_buf_size(b) != 0) {
            break;
        }

        p->busy = cl->next;

        if (b->tag != (ngx_buf_tag_t) &ngx_http_fairgate_pace_init) {
            /* the owner's own buffer, passed whole */
            ngx_free_chain(p->request->pool, cl);
            continue;
        }

        b->shadow->pos = b->last;

        cl->next = p->free;
        p->free = cl;
    }
}


/* the next token's turn: it goes, and the request's owner is woken */

static void
ngx_http_fairgate_pace_wake(ngx_event_t *ev)
{
    ngx_connection_t          *c;
    ngx_http_request_t        *r;
    ngx_http_fairgate_pace_t  *p;

    p = ev->data;
    r = p->request;
    c = r->connection;

    if (ngx_http_fairgate_pace_send(p) == NGX_ERROR) {
        c->error = 1;
    }

    ngx_post_event(c->write, &ngx_posted_events);
}


static void
ngx_http_fairgate_pace_cleanup(void *data)
{
    ngx_http_fairgate_pace_t  *p = data;

    if (p->timer.timer_set) {
        ngx_del_timer(&p->timer);
    }

    /* the stream is over: its QoE, as $fairgate_qoe logged it */
    ngx_http_fairgate_account_qoe(p->ctx, fg_qoe_value(&p->qoe));
}


/* $fairgate_qoe: the stream's QoE so far; -1: not measured */

double
ngx_http_fairgate_pace_qoe(ngx_http_fairgate_pace_t *p)
{
    return p ? fg_qoe_value(&p->qoe) : -1;
}
