
/*
 * fairgate: a local-mode request from its submission to its end.
 *
 * The engine's events come to the worker that submitted the request
 * (_engine.c reads them, and hands each to api->handler, set here); each
 * token is reported to the glue as it arrives (api->report: the tenant
 * is charged at once), decoded (the tokenizer's streaming decoder keeps a
 * character split across tokens), run through the stop-string matcher,
 * and either sent at once as an SSE chunk, flushed, or kept for the one
 * JSON body of a request that did not ask for a stream.
 *
 * Every request ends once: its last event (stop, length), a stop string
 * (the engine is told to cancel), an engine failure (an SSE error event
 * then [DONE], or a 502/503 OpenAI error), or the client leaving (the pool
 * cleanup cancels it in the engine).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_local_int.h"


#define NGX_HTTP_FAIRGATE_STREAM_BUF  1024

/* the longest pause between two tries of a submission, ms */
#define NGX_HTTP_FAIRGATE_RETRY_MAX   64


static ngx_int_t ngx_http_fairgate_stream_wait(ngx_http_fairgate_api_t *api,
    int rc);
static void ngx_http_fairgate_stream_retry(ngx_event_t *ev);
static ngx_int_t ngx_http_fairgate_stream_submitted(
    ngx_http_fairgate_api_t *api, int rc);
static ngx_int_t ngx_http_fairgate_stream_unsubmitted(
    ngx_http_fairgate_api_t *api, int rc);
static ngx_int_t ngx_http_fairgate_stream_head(ngx_http_fairgate_api_t *api);
static ngx_int_t ngx_http_fairgate_stream_echo(ngx_http_fairgate_api_t *api);
static void ngx_http_fairgate_stream_event(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);
static void ngx_http_fairgate_stream_refused(ngx_http_fairgate_api_t *api,
    ngx_uint_t error);
static ngx_int_t ngx_http_fairgate_stream_token(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);
static ngx_int_t ngx_http_fairgate_stream_text(ngx_http_fairgate_api_t *api,
    const char *text, size_t len);
static ngx_int_t ngx_http_fairgate_stream_send(ngx_http_fairgate_api_t *api,
    ngx_chain_t *cl);
static ngx_chain_t *ngx_http_fairgate_stream_buf(ngx_http_fairgate_api_t *api,
    size_t size);
static ngx_uint_t ngx_http_fairgate_stream_choice_end(
    ngx_http_fairgate_api_t *api);
static void ngx_http_fairgate_stream_finish(ngx_http_fairgate_api_t *api);
static ngx_int_t ngx_http_fairgate_stream_choices(
    ngx_http_fairgate_api_t *api, ngx_buf_t *b, size_t size);
static void ngx_http_fairgate_stream_fail(ngx_http_fairgate_api_t *api,
    ngx_uint_t status, const char *code, const char *message);
static void ngx_http_fairgate_stream_writer(ngx_http_request_t *r);


ngx_int_t
ngx_http_fairgate_stream_start(ngx_http_fairgate_api_t *api)
{
    int  rc;

    if (api->embed) {
        return ngx_http_fairgate_embed_start(api);
    }

    api->handler = ngx_http_fairgate_stream_event;

    rc = ngx_http_fairgate_engine_submit(api);

    if (rc == FG_SHM_EAGAIN || rc == FG_SHM_EFULL) {
        return ngx_http_fairgate_stream_wait(api, rc);
    }

    return ngx_http_fairgate_stream_submitted(api, rc);
}


/*
 * The engine's submission ring is busy (another worker holds its lock) or
 * full (the engine is behind): the request waits, it is not refused for
 * it.  Retried from a timer, 1 ms first, doubling up to 64 ms, until the
 * bound of its wait (the queue's timeout, else the engine's dead_after);
 * a client that leaves meanwhile ends it (the cleanup drops the timer).
 */

static ngx_int_t
ngx_http_fairgate_stream_wait(ngx_http_fairgate_api_t *api, int rc)
{
    ngx_msec_t           wait;
    ngx_http_request_t  *r;

    r = api->request;

    if (api->retry.handler == NULL) {
        wait = api->submit_wait ? api->submit_wait : api->engine->dead_after;

        api->retry_until = ngx_current_msec + wait;
        api->retry_delay = 1;
        api->retry.handler = ngx_http_fairgate_stream_retry;
        api->retry.data = api;
        api->retry.log = r->connection->log;

        r->read_event_handler = ngx_http_test_reading;
        r->write_event_handler = ngx_http_request_empty_handler;

    } else if ((ngx_msec_int_t) (api->retry_until - ngx_current_msec) <= 0) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "fairgate_engine \"%V\": its submission ring stayed "
                      "%s for the request's wait",
                      &api->engine->name,
                      rc == FG_SHM_EFULL ? "full" : "locked");

        return ngx_http_fairgate_stream_submitted(api, rc);

    } else if (api->retry_delay < NGX_HTTP_FAIRGATE_RETRY_MAX) {
        api->retry_delay *= 2;
    }

    ngx_add_timer(&api->retry, api->retry_delay);

    return NGX_DONE;
}


static void
ngx_http_fairgate_stream_retry(ngx_event_t *ev)
{
    int                       rc;
    ngx_int_t                 n;
    ngx_connection_t         *c;
    ngx_http_request_t       *r;
    ngx_http_fairgate_api_t  *api;

    api = ev->data;
    r = api->request;
    c = r->connection;

    rc = ngx_http_fairgate_engine_submit(api);

    if (rc == FG_SHM_EAGAIN || rc == FG_SHM_EFULL) {
        n = ngx_http_fairgate_stream_wait(api, rc);

    } else {
        n = ngx_http_fairgate_stream_submitted(api, rc);
    }

    if (n != NGX_DONE) {
        ngx_http_finalize_request(r, n);
    }

    ngx_http_run_posted_requests(c);
}


/* the submission's answer: the request's head once the engine took it */

static ngx_int_t
ngx_http_fairgate_stream_submitted(ngx_http_fairgate_api_t *api, int rc)
{
    char                         id[FG_OAI_ID_LEN], fp[40];
    ngx_http_request_t          *r;
    const fg_shm_info_t         *info;
    ngx_http_fairgate_engine_t  *e;

    r = api->request;
    e = api->engine;

    if (rc != FG_SHM_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "fairgate submit: engine \"%V\" did not take the "
                       "request: %d", &e->name, rc);

        api->report(api, NGX_HTTP_FAIRGATE_API_UNSENT, 0);
        return ngx_http_fairgate_stream_unsubmitted(api, rc);
    }

    ngx_log_debug5(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "fairgate submit: engine \"%V\" took request %uL: %uD "
                   "prompt tokens, up to %uD out, %s",
                   &e->name, (uint64_t) api->node.key, api->n_ids,
                   api->max_tokens, api->stream ? "streamed" : "one body");

    info = fg_shm_client_info(e->client);

    fg_oai_make_id(id, sizeof(id), api->oai->kind,
                   ((uint64_t) ngx_random() << 32) ^ (uint64_t) ngx_random()
                   ^ (uint64_t) ngx_current_msec,
                   ((uint64_t) ngx_random() << 32) ^ (uint64_t) ngx_random()
                   ^ (uint64_t) ngx_pid);

    /* the fingerprint: the engine's generation, new at every start */
    ngx_sprintf((u_char *) fp, "fp_%016xL%Z", info->generation);

    if (fg_oai_resp_init(&api->resp, api->oai->kind, id,
                         (char *) e->id.data, e->id.len, fp, ngx_time(),
                         api->oai->include_usage)
        != 0
        || (api->oai->kind == FG_OAI_RESPONSES
            && fg_oai_rsp_init(&api->resp, api->oai) != 0))
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    fg_tok_stream_init(&api->dec);

    if (ngx_http_fairgate_tools_start(api) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    api->piece_size = FG_TOK_STREAM_OUT(e->max_piece);
    api->piece = ngx_palloc(r->pool, api->piece_size);
    api->text_size = FG_OAI_STOP_OUT(api->piece_size);
    api->text = ngx_palloc(r->pool, api->text_size);

    if (api->piece == NULL || api->text == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* a client that leaves is noticed, and its sequence cancelled */
    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_fairgate_stream_writer;

    /* the text is kept for the one body; a Response's stream says it
     * all again at its end */
    if (!api->stream || api->oai->kind == FG_OAI_RESPONSES) {
        api->body = ngx_create_temp_buf(r->pool, NGX_HTTP_FAIRGATE_STREAM_BUF);
        if (api->body == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    if (ngx_http_fairgate_choices_init(api) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (!api->stream) {
        return (ngx_http_fairgate_stream_echo(api) == NGX_OK)
               ? NGX_DONE : NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_fairgate_stream_head(api);

    if (rc == NGX_DONE && ngx_http_fairgate_stream_echo(api) != NGX_OK) {
        ngx_http_fairgate_engine_forget(api, 1);
        return NGX_ERROR;
    }

    return rc;
}


/*
 * echo: the prompt's text first, as the request gave it (token ids as
 * their text), never through the stop matcher
 */

static ngx_int_t
ngx_http_fairgate_stream_echo(ngx_http_fairgate_api_t *api)
{
    char              *buf;
    const char        *text;
    size_t             size, len;
    ssize_t            n;
    uint32_t           c;
    fg_oai_request_t  *oai;

    oai = api->oai;

    if (!oai->echo) {
        return NGX_OK;
    }

    /* a stream's first chunk carries the prompt's logprobs, which come
     * before the first token: it waits for that (stream_event) */
    if (api->stream && oai->logprobs && !api->echo_held) {
        api->echo_held = 1;
        return NGX_OK;
    }

    if (api->echo_held) {
        api->echo_held = 0;

        if (ngx_http_fairgate_lp_prompt_json(api) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    if (oai->prompt.data) {
        text = oai->prompt.data;
        len = oai->prompt.len;

    } else {
        size = oai->n_prompt_ids * api->engine->max_piece + 1;
        buf = ngx_pnalloc(api->request->pool, size);

        if (buf == NULL) {
            return NGX_ERROR;
        }

        n = fg_tokenizer_decode(api->engine->tok, oai->prompt_ids,
                                oai->n_prompt_ids, 0, buf, size);

        if (n < 0) {
            return NGX_ERROR;
        }

        text = buf;
        len = ngx_min((size_t) n, size - 1);
    }

    /* each choice's text begins with it */
    for (c = 0; c < ngx_max(api->n_choices, 1); c++) {
        if ((api->n_choices > 1
             && ngx_http_fairgate_choices_switch(api, c) != NGX_OK)
            || ngx_http_fairgate_stream_text(api, text, len) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    api->resp.lp = NULL;

    return NGX_OK;
}


/* the engine would not take the submission: an OpenAI error at once */

static ngx_int_t
ngx_http_fairgate_stream_unsubmitted(ngx_http_fairgate_api_t *api, int rc)
{
    fg_oai_error_t  err;

    if (rc == FG_SHM_EINVAL) {
        fg_oai_error_set(&err, NGX_HTTP_BAD_REQUEST, NULL, NULL,
                         "The engine's protocol cannot carry this "
                         "request.");
        return ngx_http_fairgate_send_oai_error(api->request, &err, 0);
    }

    fg_oai_error_set(&err, NGX_HTTP_SERVICE_UNAVAILABLE,
                     rc == FG_SHM_EFULL ? "engine_overloaded"
                                        : "engine_unavailable",
                     NULL, "%s",
                     rc == FG_SHM_EFULL
                     ? "The engine is behind; retry shortly."
                     : "The engine serving this model is not available "
                       "right now; retry shortly.");
    err.type = "server_error";

    return ngx_http_fairgate_send_oai_error(api->request, &err, 1);
}


/*
 * A stream's head: the SSE headers, then the role chunk at once, so that
 * the client knows it is being served.
 */

static ngx_int_t
ngx_http_fairgate_stream_head(ngx_http_fairgate_api_t *api)
{
    size_t               n;
    ngx_int_t            hrc;
    ngx_chain_t         *cl;
    ngx_http_request_t  *r;

    r = api->request;

    r->headers_out.status = NGX_HTTP_OK;
    ngx_str_set(&r->headers_out.content_type, "text/event-stream");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;
    ngx_http_clear_content_length(r);

    if (ngx_http_fairgate_add_header(r, "Cache-Control",
                                     (u_char *) "no-cache", 8)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    hrc = ngx_http_send_header(r);

    if (hrc == NGX_ERROR || hrc > NGX_OK || r->header_only) {
        ngx_http_fairgate_engine_forget(api, 1);
        return hrc;
    }

    n = fg_oai_resp_bound(&api->resp, 0);

    cl = ngx_http_fairgate_stream_buf(api, n);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    cl->buf->last += fg_oai_sse_delta(&api->resp, "", 0,
                                      (char *) cl->buf->pos, n);

    if (cl->buf->last == cl->buf->pos) {
        return NGX_DONE;
    }

    if (ngx_http_fairgate_stream_send(api, cl) == NGX_ERROR) {
        ngx_http_fairgate_engine_forget(api, 1);
        return NGX_ERROR;
    }

    return NGX_DONE;
}


/* an event of the engine for the request (api->handler); NULL: it is lost */

static void
ngx_http_fairgate_stream_event(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev)
{
    size_t   m;
    ssize_t  n;

    if (ev == NULL) {
        ngx_http_fairgate_stream_fail(api, NGX_HTTP_BAD_GATEWAY,
                                      "engine_lost",
                                      "The engine serving this model "
                                      "stopped while the request was "
                                      "running; it may be retried.");
        return;
    }

    /* a piece of the next token's log-probabilities: kept for it */
    if (ev->reserved == FG_SHM_COMP_LP) {
        ngx_http_fairgate_lp_piece(api, ev);
        return;
    }

    /* the prompt's usage: choice 0's, which computes it (the others take
     * its blocks, which is no cache hit of the request's) */
    if (ev->n_prompt && ev->choice == 0) {
        api->n_prompt = ev->n_prompt;
        api->n_cached = ev->n_cached;
    }

    switch (ev->finish) {

    case FG_SHM_FINISH_NONE:
    case FG_SHM_FINISH_STOP:
    case FG_SHM_FINISH_LENGTH:
    case FG_SHM_FINISH_CONTEXT:
        break;

    case FG_SHM_FINISH_REFUSED:
        ngx_http_fairgate_engine_forget(api, 0);
        ngx_http_fairgate_stream_refused(api, ev->error);
        return;

    default:
        /* an engine failure, or a cancel the gateway did not ask for */

        ngx_http_fairgate_engine_forget(api, 0);
        ngx_http_fairgate_stream_fail(api, NGX_HTTP_BAD_GATEWAY,
                                      "engine_error",
                                      "The engine failed while generating "
                                      "this completion.");
        return;
    }

    if (api->echo_held && ngx_http_fairgate_stream_echo(api) != NGX_OK) {
        ngx_http_fairgate_stream_fail(api, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                      "server_error", "The echo failed.");
        return;
    }

    if (api->n_choices > 1) {
        switch (ngx_http_fairgate_choices_switch(api, ev->choice)) {

        case NGX_OK:
            break;

        case NGX_DECLINED:
            return;

        default:
            ngx_http_fairgate_stream_fail(api, NGX_HTTP_BAD_GATEWAY,
                                          "engine_error",
                                          "The engine sent a choice the "
                                          "request did not ask for.");
            return;
        }
    }

    if (ev->token >= 0 && ngx_http_fairgate_stream_token(api, ev) != NGX_OK)
    {
        ngx_http_fairgate_engine_forget(api, 1);
        ngx_http_fairgate_engine_end(api, NGX_ERROR);
        return;
    }

    if (api->stop.stopped) {
        /* a stop string: the engine need not go on */
        api->cut = 1;
        api->finish = FG_OAI_FINISH_STOP;

    } else if (ev->finish == FG_SHM_FINISH_NONE) {
        return;

    } else {
        api->finish = (ev->finish == FG_SHM_FINISH_STOP)
                      ? FG_OAI_FINISH_STOP : FG_OAI_FINISH_LENGTH;

        /* what the decoder and the matcher still hold */

        n = fg_tok_stream_flush(&api->dec, api->piece, api->piece_size);

        m = (n > 0) ? fg_oai_stop_push(&api->stop, api->piece, n, api->text)
                    : 0;

        if (!api->stop.stopped) {
            m += fg_oai_stop_flush(&api->stop, api->text + m);
        }

        if (m && ngx_http_fairgate_stream_text(api, api->text, m) != NGX_OK)
        {
            ngx_http_fairgate_engine_forget(api, 1);
            ngx_http_fairgate_engine_end(api, NGX_ERROR);
            return;
        }
    }

    if (api->n_choices > 1 && ngx_http_fairgate_stream_choice_end(api)) {
        return;
    }

    /* a choice cut at a stop string may still run in the engine */
    ngx_http_fairgate_engine_forget(api, api->cut);
    ngx_http_fairgate_stream_finish(api);
}


/*
 * One of several choices ended: its finish chunk goes out at once in a
 * stream.  1 while others run (or the request ended in an error), 0 when
 * it was the last.
 */

static ngx_uint_t
ngx_http_fairgate_stream_choice_end(ngx_http_fairgate_api_t *api)
{
    size_t        size;
    ngx_int_t     rc;
    ngx_chain_t  *cl;

    api->choices[api->cur].done = 1;
    api->choices[api->cur].finish = api->finish;
    api->left--;

    if (api->stream) {
        size = fg_oai_resp_bound(&api->resp, 0);

        cl = ngx_http_fairgate_stream_buf(api, size);
        if (cl == NULL) {
            ngx_http_fairgate_engine_forget(api, 1);
            ngx_http_fairgate_engine_end(api, NGX_ERROR);
            return 1;
        }

        if (api->tools) {
            /* the held text read for calls: the calls, then its finish */
            rc = ngx_http_fairgate_tools_finish(api, cl->buf);

        } else {
            cl->buf->last += fg_oai_sse_choice_end(&api->resp, api->finish,
                                                   (char *) cl->buf->pos,
                                                   size);
            rc = NGX_OK;
        }

        if (rc != NGX_OK
            || ngx_http_fairgate_stream_send(api, cl) == NGX_ERROR)
        {
            ngx_http_fairgate_engine_forget(api, 1);
            ngx_http_fairgate_engine_end(api, NGX_ERROR);
            return 1;
        }
    }

    return api->left > 0;
}


/* the engine would not take the request: the client is told why */

static void
ngx_http_fairgate_stream_refused(ngx_http_fairgate_api_t *api,
    ngx_uint_t error)
{
    switch (error) {

    case FG_SHM_ERR_CONTEXT:
    case FG_SHM_ERR_KV:
        ngx_http_fairgate_stream_fail(api, NGX_HTTP_BAD_REQUEST,
                                      "context_length_exceeded",
                                      "The prompt and max_tokens do not "
                                      "fit the engine's context or KV "
                                      "cache.");
        return;

    case FG_SHM_ERR_FULL:
        ngx_http_fairgate_stream_fail(api, NGX_HTTP_SERVICE_UNAVAILABLE,
                                      "engine_overloaded",
                                      "The engine holds all the "
                                      "requests it can; retry shortly.");
        return;

    default:
        ngx_log_error(NGX_LOG_ERR, api->request->connection->log, 0,
                      "fairgate_engine \"%V\" refused a request: %s",
                      &api->engine->name, fg_shm_error_name(error));

        ngx_http_fairgate_stream_fail(api, NGX_HTTP_BAD_GATEWAY,
                                      "engine_error",
                                      "The engine refused the request.");
        return;
    }
}


/*
 * A generated token: charged to the tenant at once (the VTC counters are
 * live), then decoded and passed through the stop matcher to the client.
 * NGX_ERROR: the text could not be sent.
 */

static ngx_int_t
ngx_http_fairgate_stream_token(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev)
{
    size_t                       m;
    ssize_t                      n;
    ngx_int_t                    rc;
    ngx_http_fairgate_engine_t  *e;

    e = api->engine;

    /* the token of a prompt scored (max_tokens 0) is not the answer's */
    if (api->score) {
        return NGX_OK;
    }

    api->generated++;

    if (api->first_at == 0) {
        api->first_at = ngx_current_msec;
    }

    /* charged to the tenant at once; with the first, the prefix the
     * engine reused, to which dlpm's charge settles */
    api->report(api, NGX_HTTP_FAIRGATE_API_TOKEN, api->n_cached);

    if (api->n_choices > api->oai->n) {
        ngx_http_fairgate_choices_score(api, ev);
    }

    /* the token that stops (EOS, end of turn) is not text */

    if (ev->finish == FG_SHM_FINISH_STOP
        || fg_tokenizer_is_eog(e->tok, ev->token))
    {
        return NGX_OK;
    }

    /* a tool call's marker is a control token the parser must see */
    n = fg_tok_stream_push(e->tok, &api->dec, ev->token,
                           (api->tools && ev->token == e->tools.marker)
                           ? FG_TOK_SPECIAL : 0,
                           api->piece, api->piece_size);

    m = (n > 0) ? fg_oai_stop_push(&api->stop, api->piece, n, api->text) : 0;

    /* a stream sends the token's logprobs with the text it released,
     * even none */
    if (api->oai->logprobs && ngx_http_fairgate_lp_token(api, ev) != NGX_OK) {
        return NGX_ERROR;
    }

    rc = ngx_http_fairgate_stream_text(api, api->text, m);

    api->resp.lp = NULL;

    return rc;
}


/* new text: an SSE chunk sent now, or kept for the JSON body */

static ngx_int_t
ngx_http_fairgate_stream_text(ngx_http_fairgate_api_t *api, const char *text,
    size_t len)
{
    size_t        size;
    u_char       *p;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    if (api->tools && api->stream
        && ngx_http_fairgate_tools_hold(api, &text, &len) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (len == 0 && (api->resp.lp == NULL || !api->stream)) {
        return NGX_OK;
    }

    if (api->body) {
        b = api->body;

        if ((size_t) (b->end - b->last) < len) {
            size = 2 * (b->end - b->start) + len;

            p = ngx_palloc(api->request->pool, size);
            if (p == NULL) {
                return NGX_ERROR;
            }

            b->last = ngx_cpymem(p, b->pos, b->last - b->pos);
            b->start = p;
            b->pos = p;
            b->end = p + size;
        }

        b->last = ngx_cpymem(b->last, text, len);

        if (!api->stream) {
            return NGX_OK;
        }
    }

    size = (api->oai->kind == FG_OAI_RESPONSES)
           ? fg_oai_rsp_bound(&api->resp, len, 0)
           : fg_oai_resp_bound(&api->resp, len);

    cl = ngx_http_fairgate_stream_buf(api, size);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    cl->buf->last += fg_oai_sse_delta(&api->resp, text, len,
                                      (char *) cl->buf->pos, size);

    if (cl->buf->last == cl->buf->pos) {
        return NGX_OK;
    }

    return ngx_http_fairgate_stream_send(api, cl) == NGX_ERROR ? NGX_ERROR
                                                                : NGX_OK;
}


/* a buffer of size bytes, reused once the client has what it held */

static ngx_chain_t *
ngx_http_fairgate_stream_buf(ngx_http_fairgate_api_t *api, size_t size)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    cl = ngx_chain_get_free_buf(api->request->pool, &api->free);
    if (cl == NULL) {
        return NULL;
    }

    b = cl->buf;

    if (b->start == NULL || (size_t) (b->end - b->start) < size) {
        size = ngx_max(size, NGX_HTTP_FAIRGATE_STREAM_BUF);

        b->start = ngx_palloc(api->request->pool, size);
        if (b->start == NULL) {
            return NULL;
        }

        b->end = b->start + size;
    }

    b->pos = b->start;
    b->last = b->start;
    b->temporary = 1;
    b->flush = 1;
    b->last_buf = 0;
    b->last_in_chain = 0;
    b->tag = (ngx_buf_tag_t) &ngx_http_fairgate_module;

    return cl;
}


static ngx_int_t
ngx_http_fairgate_stream_send(ngx_http_fairgate_api_t *api, ngx_chain_t *cl)
{
    ngx_int_t            rc;
    ngx_http_request_t  *r;

    r = api->request;

    rc = ngx_http_output_filter(r, cl);

    ngx_chain_update_chains(r->pool, &api->free, &api->busy, &cl,
                            (ngx_buf_tag_t) &ngx_http_fairgate_module);

    return rc;
}


/* the last of a completion: the finish and usage chunks, or the body */

static void
ngx_http_fairgate_stream_finish(ngx_http_fairgate_api_t *api)
{
    size_t               size, len, lp_len;
    uint32_t             i;
    ngx_int_t            rc;
    ngx_chain_t         *cl;
    fg_oai_usage_t      *usage;
    ngx_http_request_t  *r;

    r = api->request;
    usage = &api->usage;

    usage->prompt_tokens = api->n_prompt ? api->n_prompt : api->n_ids;
    usage->completion_tokens = api->generated;
    usage->cached_tokens = api->n_prompt ? api->n_cached : 0;

    /* what the tenant is settled with when the request is released */
    api->report(api, NGX_HTTP_FAIRGATE_API_DONE, 0);

    len = api->body ? (size_t) (api->body->last - api->body->pos) : 0;
    lp_len = 0;

    if (api->n_choices > 1 && api->body) {
        ngx_http_fairgate_choices_save(api);

        for (len = 0, i = 0; i < api->n_choices; i++) {
            len += api->choices[i].body->last - api->choices[i].body->pos;
        }

        rc = ngx_http_fairgate_lp_choices(api, &lp_len);

    } else {
        rc = api->stream ? NGX_OK : ngx_http_fairgate_lp_body(api);
    }

    if (rc != NGX_OK) {
        ngx_http_fairgate_engine_end(api, NGX_ERROR);
        return;
    }

    size = fg_oai_resp_bound(&api->resp, len) + lp_len;

    cl = ngx_http_fairgate_stream_buf(api, size);
    if (cl == NULL) {
        ngx_http_fairgate_engine_end(api, NGX_ERROR);
        return;
    }

    if (api->n_choices > 1) {
        if (ngx_http_fairgate_stream_choices(api, cl->buf, size) != NGX_OK) {
            ngx_http_fairgate_engine_end(api, NGX_ERROR);
            return;
        }

    } else if (api->tools) {
        if (ngx_http_fairgate_tools_finish(api, cl->buf) != NGX_OK) {
            ngx_http_fairgate_engine_end(api, NGX_ERROR);
            return;
        }

    } else if (api->stream && api->oai->kind == FG_OAI_RESPONSES) {
        cl->buf->last += fg_oai_rsp_sse_finish(&api->resp,
                                               (char *) api->body->pos, len,
                                               api->finish, usage,
                                               (char *) cl->buf->pos, size);

    } else if (api->stream) {
        cl->buf->last += fg_oai_sse_finish(&api->resp, api->finish, usage,
                                           (char *) cl->buf->pos, size);

    } else {
        cl->buf->last += fg_oai_resp_json(&api->resp,
                                          (char *) api->body->pos, len,
                                          api->finish, usage,
                                          (char *) cl->buf->pos, size);
    }

    if (!api->stream) {
        r->headers_out.status = NGX_HTTP_OK;
        r->headers_out.content_length_n = cl->buf->last - cl->buf->pos;
        ngx_str_set(&r->headers_out.content_type, "application/json");
        r->headers_out.content_type_len = r->headers_out.content_type.len;
        r->headers_out.content_type_lowcase = NULL;

        rc = ngx_http_send_header(r);

        if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
            ngx_http_fairgate_engine_end(api, rc);
            return;
        }
    }

    cl->buf->last_buf = 1;
    cl->buf->last_in_chain = 1;

    rc = ngx_http_fairgate_stream_send(api, cl);

    ngx_http_fairgate_engine_end(api, rc);
}


/* the end of several choices: the usage and [DONE], or the body of all
 * (of the best, with best_of) */

static ngx_int_t
ngx_http_fairgate_stream_choices(ngx_http_fairgate_api_t *api, ngx_buf_t *b,
    size_t size)
{
    uint32_t          i, n, order[FG_SHM_MAX_CHOICES];
    ngx_buf_t        *t;
    fg_oai_choice_t  *c;

    if (api->stream) {
        b->last += fg_oai_sse_done(&api->resp, &api->usage, (char *) b->pos,
                                   size);
        return NGX_OK;
    }

    n = api->oai->n;
    c = ngx_palloc(api->request->pool, n * sizeof(*c));
    if (c == NULL) {
        return NGX_ERROR;
    }

    /* best_of above n: the n best candidates; else every choice */
    for (i = 0; i < n; i++) {
        order[i] = i;
    }

    if (api->n_choices > n) {
        ngx_http_fairgate_choices_rank(api, order);
    }

    for (i = 0; i < n; i++) {
        t = api->choices[order[i]].body;
        c[i].text = (const char *) t->pos;
        c[i].len = t->last - t->pos;
        c[i].finish = api->choices[order[i]].finish;
        c[i].lp = api->choices[order[i]].lp;
        c[i].lp_len = api->choices[order[i]].lp_len;
    }

    if (api->tools) {
        return ngx_http_fairgate_tools_bodies(api, c, n, b);
    }

    b->last += fg_oai_resp_choices(&api->resp, c, n, &api->usage,
                                   (char *) b->pos, size);

    return NGX_OK;
}


/*
 * A failure: the engine is lost, failed or refused.  A stream already
 * started ends with an error event and [DONE], as OpenAI's do; otherwise
 * the status says it.
 */

static void
ngx_http_fairgate_stream_fail(ngx_http_fairgate_api_t *api,
    ngx_uint_t status, const char *code, const char *message)
{
    size_t               size;
    ngx_int_t            rc;
    ngx_chain_t         *cl;
    fg_oai_error_t       err;
    ngx_http_request_t  *r;

    r = api->request;

    ngx_http_fairgate_engine_forget(api, 1);

    api->report(api, NGX_HTTP_FAIRGATE_API_FAILED, 0);

    fg_oai_error_set(&err, (int) status, code, NULL, "%s", message);

    if (status >= NGX_HTTP_INTERNAL_SERVER_ERROR) {
        err.type = "server_error";
    }

    if (!r->header_sent) {
        rc = ngx_http_fairgate_send_oai_error(r, &err,
                                              status == NGX_HTTP_BAD_REQUEST
                                              ? 0 : 1);
        ngx_http_fairgate_engine_end(api, rc);
        return;
    }

    size = fg_oai_resp_bound(&api->resp, 0) + FG_OAI_ERROR_MAX;

    cl = ngx_http_fairgate_stream_buf(api, size);
    if (cl == NULL) {
        ngx_http_fairgate_engine_end(api, NGX_ERROR);
        return;
    }

    cl->buf->last += fg_oai_sse_error(&api->resp, &err,
                                      (char *) cl->buf->pos, size);
    cl->buf->last_buf = 1;
    cl->buf->last_in_chain = 1;

    rc = ngx_http_fairgate_stream_send(api, cl);

    ngx_http_fairgate_engine_end(api, rc);
}



static void
ngx_http_fairgate_stream_writer(ngx_http_request_t *r)
{
    ngx_event_t  *wev;

    wev = r->connection->write;

    if (wev->timedout) {
        r->connection->timedout = 1;
        ngx_http_finalize_request(r, NGX_HTTP_REQUEST_TIME_OUT);
        return;
    }

    if (ngx_http_output_filter(r, NULL) == NGX_ERROR) {
        ngx_http_finalize_request(r, NGX_ERROR);
    }
}
