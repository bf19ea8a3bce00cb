
/*
 * fairgate: a local-mode answer read for tool calls (the request has
 * tools and tool_choice is not "none").
 *
 * A stream's text goes out as content until it may be a call (the
 * family's marker, or an answer opening with JSON): from there it is
 * held, and read at the end (fg_tool_parse.h).  Calls found are sent as
 * OpenAI's tool-call deltas, finish_reason "tool_calls"; held text that
 * holds none goes out as content after all.  A body that did not ask
 * for a stream is read whole at its end.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_local_int.h"


static void ngx_http_fairgate_tools_cleanup(void *data);
static ngx_int_t ngx_http_fairgate_tools_put(ngx_http_fairgate_api_t *api,
    ngx_buf_t *b, const char *data, size_t len);


ngx_int_t
ngx_http_fairgate_tools_check(ngx_http_fairgate_api_t *api,
    fg_oai_error_t *err)
{
    fg_oai_request_t            *oai;
    ngx_http_fairgate_engine_t  *e;

    oai = api->oai;
    e = api->engine;

    if (!fg_oai_request_uses_tools(oai)) {
        return NGX_OK;
    }

    if (e->tmpl.jinja == NULL) {
        fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, "unsupported_value",
                         oai->n_tools ? "tools" : "messages",
                         "Tool calling needs the model's own chat template "
                         "(its GGUF file's tokenizer.chat_template), and "
                         "model '%.*s' has none that fairgate renders.",
                         (int) e->id.len, e->id.data);
        return NGX_DECLINED;
    }

    if (oai->n_tools && oai->tool_choice != FG_OAI_TOOLS_NONE
        && !e->tools.takes_tools)
    {
        fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, "unsupported_value",
                         "tools", "The chat template of model '%.*s' does "
                         "not take tools: the model would not be told of "
                         "them.", (int) e->id.len, e->id.data);
        return NGX_DECLINED;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_fairgate_tools_start(ngx_http_fairgate_api_t *api)
{
    ngx_pool_cleanup_t  *cln;

    if (!fg_oai_request_reads_calls(api->oai)) {
        return NGX_OK;
    }

    api->tools = 1;

    if (!api->stream) {
        return NGX_OK;
    }

    cln = ngx_pool_cleanup_add(api->request->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    fg_tool_stream_init(&api->tool_stream, api->engine->tools.format);

    cln->handler = ngx_http_fairgate_tools_cleanup;
    cln->data = api;

    return NGX_OK;
}


static void
ngx_http_fairgate_tools_cleanup(void *data)
{
    ngx_http_fairgate_api_t *api = data;

    uint32_t  i;

    if (api->choices == NULL) {
        fg_tool_stream_free(&api->tool_stream);
        return;
    }

    /* the current choice's stream is in api: its entry is brought up to
     * date, then each choice's freed once */
    ngx_http_fairgate_choices_save(api);

    for (i = 0; i < api->n_choices; i++) {
        fg_tool_stream_free(&api->choices[i].tool_stream);
    }
}


ngx_int_t
ngx_http_fairgate_tools_hold(ngx_http_fairgate_api_t *api, const char **text,
    size_t *len)
{
    if (fg_tool_stream_push(&api->tool_stream, *text, *len, text, len) != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* bytes appended to b, grown from the pool when they do not fit */
static ngx_int_t
ngx_http_fairgate_tools_put(ngx_http_fairgate_api_t *api, ngx_buf_t *b,
    const char *data, size_t len)
{
    size_t   size;
    u_char  *p;

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

    b->last = ngx_cpymem(b->last, data, len);

    return NGX_OK;
}


/* the end of a stream: held content, the calls, the finish and [DONE] */
static ngx_int_t
ngx_http_fairgate_tools_sse(ngx_http_fairgate_api_t *api, ngx_buf_t *b,
    const char *text, size_t len, fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN])
{
    char       *s;
    size_t      n, size;
    ngx_int_t   rc;

    size = fg_oai_resp_bound(&api->resp, len);
    s = ngx_palloc(api->request->pool, size);
    if (s == NULL) {
        return NGX_ERROR;
    }

    n = len ? fg_oai_sse_delta(&api->resp, text, len, s, size) : 0;

    if (ngx_http_fairgate_tools_put(api, b, s, n) != NGX_OK) {
        return NGX_ERROR;
    }

    if (p->n_calls) {
        s = fg_oai_sse_tool_calls(&api->resp, p, ids, &n);
        if (s == NULL) {
            return NGX_ERROR;
        }

        rc = ngx_http_fairgate_tools_put(api, b, s, n);
        free(s);

        if (rc != NGX_OK) {
            return NGX_ERROR;
        }
    }

    s = ngx_palloc(api->request->pool, size);
    if (s == NULL) {
        return NGX_ERROR;
    }

    /* several choices: this one's finish; the usage comes after all */
    n = api->choices
        ? fg_oai_sse_choice_end(&api->resp, api->finish, s, size)
        : fg_oai_sse_finish(&api->resp, api->finish, &api->usage, s, size);

    return ngx_http_fairgate_tools_put(api, b, s, n);
}


/*
 * The end of a Response's stream: the held content sent as text and kept
 * with the rest (the closing events say it all), then the calls' events
 * or, without calls, the usual end.
 */
static ngx_int_t
ngx_http_fairgate_tools_rsp_sse(ngx_http_fairgate_api_t *api, ngx_buf_t *b,
    const char *text, size_t len, fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN])
{
    char       *s;
    size_t      n, size, all;
    ngx_int_t   rc;

    if (len) {
        size = fg_oai_rsp_bound(&api->resp, len, 0);
        s = ngx_palloc(api->request->pool, size);
        if (s == NULL) {
            return NGX_ERROR;
        }

        n = fg_oai_sse_delta(&api->resp, text, len, s, size);

        if (ngx_http_fairgate_tools_put(api, b, s, n) != NGX_OK
            || ngx_http_fairgate_tools_put(api, api->body, text, len)
               != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    text = (const char *) api->body->pos;
    all = api->body->last - api->body->pos;

    if (p->n_calls == 0) {
        size = fg_oai_rsp_bound(&api->resp, all, 1);
        s = ngx_palloc(api->request->pool, size);
        if (s == NULL) {
            return NGX_ERROR;
        }

        n = fg_oai_rsp_sse_finish(&api->resp, text, all, api->finish,
                                  &api->usage, s, size);

        return ngx_http_fairgate_tools_put(api, b, s, n);
    }

    s = fg_oai_rsp_sse_tools(&api->resp, text, all, p, ids, &api->usage,
                             &n);
    if (s == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_fairgate_tools_put(api, b, s, n);
    free(s);

    return rc;
}


ngx_int_t
ngx_http_fairgate_tools_finish(ngx_http_fairgate_api_t *api, ngx_buf_t *b)
{
    char                         ids[FG_TOOL_MAX_CALLS][FG_OAI_CALL_ID_LEN];
    char                        *s;
    size_t                       i, len, n;
    ngx_int_t                    rc;
    const char                  *text;
    fg_tool_parsed_t             p;
    ngx_http_fairgate_engine_t  *e;

    e = api->engine;

    if (api->stream) {
        fg_tool_stream_held(&api->tool_stream, &text, &len);

    } else {
        text = (const char *) api->body->pos;
        len = api->body->last - api->body->pos;
    }

    if (fg_oai_tools_answer(api->oai, e->tools.format, text, len, &p) != 0) {
        return NGX_ERROR;
    }

    for (i = 0; i < p.n_calls && i < FG_TOOL_MAX_CALLS; i++) {
        fg_oai_tool_call_id(ids[i], FG_OAI_CALL_ID_LEN, e->tools.format,
                            ((uint64_t) ngx_random() << 32)
                            ^ (uint64_t) ngx_random(),
                            ((uint64_t) ngx_random() << 32)
                            ^ (uint64_t) ngx_random());
    }

    if (p.n_calls) {
        api->finish = FG_OAI_FINISH_TOOL_CALLS;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, api->request->connection->log, 0,
                   "fairgate tools: %uz calls in %uz bytes (%s)", p.n_calls,
                   len, fg_tool_format_name(e->tools.format));

    if (api->stream) {
        rc = (api->oai->kind == FG_OAI_RESPONSES)
             ? ngx_http_fairgate_tools_rsp_sse(api, b, text,
                                               p.n_calls ? p.content_len
                                                         : len, &p, ids)
             : ngx_http_fairgate_tools_sse(api, b, text,
                                           p.n_calls ? p.content_len : len,
                                           &p, ids);
        fg_tool_parsed_free(&p);
        return rc;
    }

    if (p.n_calls == 0) {
        n = fg_oai_resp_bound(&api->resp, len);
        s = ngx_palloc(api->request->pool, n);
        if (s == NULL) {
            return NGX_ERROR;
        }

        n = fg_oai_resp_json(&api->resp, text, len, api->finish,
                             &api->usage, s, n);

        return ngx_http_fairgate_tools_put(api, b, s, n);
    }

    s = (api->oai->kind == FG_OAI_RESPONSES)
        ? fg_oai_rsp_tools_json(&api->resp, text, p.content_len, &p, ids,
                                &api->usage, &n)
        : fg_oai_resp_tools_json(&api->resp, text, p.content_len, &p, ids,
                                 &api->usage, &n);
    fg_tool_parsed_free(&p);

    if (s == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_fairgate_tools_put(api, b, s, n);
    free(s);

    return rc;
}


/*
 * One body of several choices (not streamed), each read for calls: the
 * choices' texts and finishes in c (the calls' content and
 * FG_OAI_FINISH_TOOL_CALLS where there are calls), written into b.
 */
ngx_int_t
ngx_http_fairgate_tools_bodies(ngx_http_fairgate_api_t *api,
    fg_oai_choice_t *c, uint32_t n, ngx_buf_t *b)
{
    char                         (*ids[FG_SHM_MAX_CHOICES])
                                      [FG_OAI_CALL_ID_LEN];
    char                        *s;
    size_t                       len, k;
    uint32_t                     i;
    ngx_int_t                    rc;
    fg_tool_parsed_t             p[FG_SHM_MAX_CHOICES];
    const fg_tool_parsed_t      *pp[FG_SHM_MAX_CHOICES];
    ngx_http_fairgate_engine_t  *e;

    e = api->engine;
    rc = NGX_ERROR;

    ngx_memzero(ids, sizeof(ids));
    ngx_memzero(pp, sizeof(pp));

    for (i = 0; i < n; i++) {
        ids[i] = ngx_palloc(api->request->pool,
                            FG_TOOL_MAX_CALLS * FG_OAI_CALL_ID_LEN);

        if (ids[i] == NULL
            || fg_oai_tools_answer(api->oai, e->tools.format, c[i].text,
                                   c[i].len, &p[i])
               != 0)
        {
            goto done;
        }

        pp[i] = &p[i];

        for (k = 0; k < p[i].n_calls && k < FG_TOOL_MAX_CALLS; k++) {
            fg_oai_tool_call_id(ids[i][k], FG_OAI_CALL_ID_LEN,
                                e->tools.format,
                                ((uint64_t) ngx_random() << 32)
                                ^ (uint64_t) ngx_random(),
                                ((uint64_t) ngx_random() << 32)
                                ^ (uint64_t) ngx_random());
        }

        if (p[i].n_calls) {
            c[i].len = p[i].content_len;
            c[i].finish = FG_OAI_FINISH_TOOL_CALLS;
        }
    }

    s = fg_oai_resp_choices_tools(&api->resp, c, n, pp, ids, &api->usage,
                                  &len);

    if (s != NULL) {
        rc = ngx_http_fairgate_tools_put(api, b, s, len);
        free(s);
    }

done:

    while (i--) {
        fg_tool_parsed_free(&p[i]);
    }

    return rc;
}
