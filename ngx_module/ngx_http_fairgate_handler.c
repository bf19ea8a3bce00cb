
/*
 * fairgate: the precontent-phase handler of "fairgate zone=NAME".
 *
 * For each main request: identify the tenant (an API key, or variables),
 * read the body (never blocking: nginx calls back when it is in), parse it
 * as JSON, estimate its tokens, then let ngx_http_fairgate_enqueue() check
 * the limits and queue it.  The handler runs again each time the phases do
 * (after the body, after being dispatched) and answers from the request's
 * context where the request stands.
 *
 * Token estimate, made before the upstream says (its usage corrects it):
 * input is a quarter of the bytes of the text in the request (message
 * contents and names, tool call arguments, a prompt or an input), rounded
 * up, plus 4 a message for the chat template's framing; output is what the
 * request may ask for at most: max_completion_tokens, max_tokens or
 * max_output_tokens, else fairgate_max_tokens.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "ngx_http_fairgate.h"


#define NGX_HTTP_FAIRGATE_MAX_INPUT  (UINT32_MAX / 4)


static void ngx_http_fairgate_body_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_identify(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf);
static ngx_int_t ngx_http_fairgate_unauthorized(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *code, const char *message);
static ngx_int_t ngx_http_fairgate_parse(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf);
static ngx_int_t ngx_http_fairgate_body(ngx_http_request_t *r, u_char **data,
    size_t *len);
static size_t ngx_http_fairgate_text(json_t *v);
static size_t ngx_http_fairgate_message_text(json_t *msg);
static ngx_int_t ngx_http_fairgate_bad_request(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *param, const char *message);


ngx_int_t
ngx_http_fairgate_handler(ngx_http_request_t *r)
{
    ngx_int_t                      rc;
    ngx_pool_cleanup_t            *cln;
    ngx_http_fairgate_ctx_t       *ctx;
    ngx_http_fairgate_loc_conf_t  *flcf;

    if (r != r->main) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_fairgate_get_ctx(r);

    if (ctx) {
        switch (ctx->phase) {

        case NGX_HTTP_FAIRGATE_READING:
            return NGX_DONE;

        case NGX_HTTP_FAIRGATE_READ:
            break;

        case NGX_HTTP_FAIRGATE_QUEUED:
            return NGX_AGAIN;

        default:
            /* admitted, answered, or not scheduled: once is enough */
            return NGX_DECLINED;
        }

        flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

        /*
         * Each step answers the request itself when it refuses it (the
         * phase says so), and returns what sending the answer returned.
         */

        rc = ngx_http_fairgate_parse(r, ctx, flcf);

        if (rc == NGX_OK && ctx->phase == NGX_HTTP_FAIRGATE_READ) {
            rc = ngx_http_fairgate_enqueue(r, ctx);

            if (ctx->phase == NGX_HTTP_FAIRGATE_ADMITTED) {
                return NGX_DECLINED;
            }

            if (ctx->phase == NGX_HTTP_FAIRGATE_QUEUED) {
                return NGX_AGAIN;
            }
        }

        if (rc == NGX_ERROR && ctx->phase != NGX_HTTP_FAIRGATE_REFUSED) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ngx_http_finalize_request(r, rc);
        return NGX_DONE;
    }

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

    if (flcf->zone == NULL) {
        return NGX_DECLINED;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_fairgate_ctx_t));
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    ctx->request = r;
    ctx->zone = flcf->zone->data;
    ctx->start = ngx_current_msec;

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_fairgate_release;
    cln->data = ctx;

    ngx_http_set_ctx(r, ctx, ngx_http_fairgate_module);

    rc = ngx_http_fairgate_identify(r, ctx, flcf);

    if (ctx->phase == NGX_HTTP_FAIRGATE_REFUSED) {
        ngx_http_finalize_request(r, rc);
        return NGX_DONE;
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* only what carries a request body is scheduled: GET /v1/models is not */

    if (r->method != NGX_HTTP_POST) {
        ctx->phase = NGX_HTTP_FAIRGATE_PASSED;
        return NGX_DECLINED;
    }

    ctx->phase = NGX_HTTP_FAIRGATE_READING;

    rc = ngx_http_read_client_request_body(r, ngx_http_fairgate_body_handler);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    ngx_http_finalize_request(r, NGX_DONE);
    return NGX_DONE;
}


static void
ngx_http_fairgate_body_handler(ngx_http_request_t *r)
{
    ngx_http_fairgate_ctx_t  *ctx;

    ctx = ngx_http_fairgate_get_ctx(r);

    ctx->phase = NGX_HTTP_FAIRGATE_READ;

    /* the body stays for proxy_pass to send */
    r->preserve_body = 1;

    r->write_event_handler = ngx_http_core_run_phases;
    ngx_http_core_run_phases(r);
}


static ngx_int_t
ngx_http_fairgate_identify(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_loc_conf_t *flcf)
{
    u_char                         *p, *last;
    double                          w;
    ngx_str_t                       key, weight;
    ngx_uint_t                      i;
    ngx_table_elt_t                *h;
    ngx_http_fairgate_key_t        *k;
    ngx_http_fairgate_app_limit_t  *al;

    if (flcf->keys) {
        h = r->headers_in.authorization;

        if (h == NULL) {
            return ngx_http_fairgate_unauthorized(r, ctx, NULL,
                       "You didn't provide an API key. You need to provide "
                       "your API key in an Authorization header using "
                       "Bearer auth (i.e. Authorization: Bearer YOUR_KEY).");
        }

        p = h->value.data;
        last = p + h->value.len;

        if (h->value.len < 7 || ngx_strncasecmp(p, (u_char *) "Bearer ", 7)
                                != 0)
        {
            return ngx_http_fairgate_unauthorized(r, ctx, "invalid_api_key",
                       "The Authorization header must be "
                       "\"Bearer YOUR_KEY\".");
        }

        for (p += 7; p < last && *p == ' '; p++) { /* void */ }

        while (last > p && last[-1] == ' ') {
            last--;
        }

        key.data = p;
        key.len = last - p;

        k = key.len ? ngx_http_fairgate_key_find(flcf->keys, &key) : NULL;

        if (k == NULL) {
            return ngx_http_fairgate_unauthorized(r, ctx, "invalid_api_key",
                                                  "Incorrect API key "
                                                  "provided.");
        }

        ctx->user = k->user;
        ctx->app = k->app;
        ctx->weight = k->weight;
        ctx->user_limit.rpm = k->limit.rpm ? k->limit.rpm
                                           : flcf->user_limit.rpm;
        ctx->user_limit.tpm = k->limit.tpm ? k->limit.tpm
                                           : flcf->user_limit.tpm;

    } else {
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

        ctx->weight = 1.0;

        if (flcf->weight) {
            if (ngx_http_complex_value(r, flcf->weight, &weight) != NGX_OK) {
                return NGX_ERROR;
            }

            /* a number with up to 3 decimals; anything else counts as 1 */

            w = (double) ngx_atofp(weight.data, weight.len, 3);

            if (w > 0) {
                ctx->weight = w / 1000.0;

            } else if (weight.len) {
                ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                              "fairgate: invalid weight \"%V\" of user "
                              "\"%V\", 1 used", &weight, &ctx->user);
            }
        }

        ctx->user_limit = flcf->user_limit;
    }

    if (ctx->user.len > NGX_HTTP_FAIRGATE_NAME_LEN
        || ctx->app.len > NGX_HTTP_FAIRGATE_NAME_LEN)
    {
        return ngx_http_fairgate_unauthorized(r, ctx, NULL,
                                              "The identity is longer than "
                                              "255 bytes.");
    }

    if (flcf->app_limits && ctx->app.len) {
        al = flcf->app_limits->elts;

        for (i = 0; i < flcf->app_limits->nelts; i++) {
            if (al[i].name.len == ctx->app.len
                && ngx_strncmp(al[i].name.data, ctx->app.data, ctx->app.len)
                   == 0)
            {
                ctx->app_limit = al[i].limit;
                break;
            }
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_unauthorized(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *code, const char *message)
{
    ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
    ctx->outcome = NGX_HTTP_FAIRGATE_UNAUTHORIZED;

    return ngx_http_fairgate_send_error(r, NGX_HTTP_UNAUTHORIZED,
                                        "invalid_request_error", NULL, code,
                                        message, 0);
}


static ngx_int_t
ngx_http_fairgate_parse(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_loc_conf_t *flcf)
{
    u_char        *data, *p, msg[256];
    size_t         len, bytes, i;
    json_t        *root, *v, *item;
    uint64_t       input;
    ngx_int_t      rc;
    ngx_uint_t     messages;
    json_int_t     max;
    json_error_t   err;

    static const char  *max_names[] = {
        "max_completion_tokens", "max_tokens", "max_output_tokens"
    };

    rc = ngx_http_fairgate_body(r, &data, &len);
    if (rc != NGX_OK) {
        return rc;
    }

    if (len == 0) {
        return ngx_http_fairgate_bad_request(r, ctx, NULL,
                                             "The request has no body: "
                                             "a JSON object was expected.");
    }

    root = json_loadb((char *) data, len, 0, &err);

    if (root == NULL) {
        p = ngx_snprintf(msg, sizeof(msg) - 1,
                         "We could not parse the JSON body of your request: "
                         "%s (line %d, column %d).",
                         err.text, err.line, err.column);
        *p = '\0';

        return ngx_http_fairgate_bad_request(r, ctx, NULL, (char *) msg);
    }

    if (!json_is_object(root)) {
        json_decref(root);
        return ngx_http_fairgate_bad_request(r, ctx, NULL,
                                             "The request body must be a "
                                             "JSON object.");
    }

    bytes = 0;
    messages = 0;

    v = json_object_get(root, "messages");

    if (json_is_array(v)) {
        json_array_foreach(v, i, item) {
            bytes += ngx_http_fairgate_message_text(item);
            messages++;
        }
    }

    bytes += ngx_http_fairgate_text(json_object_get(root, "prompt"));
    bytes += ngx_http_fairgate_text(json_object_get(root, "input"));
    bytes += ngx_http_fairgate_text(json_object_get(root, "instructions"));

    input = (bytes + 3) / 4 + 4 * (uint64_t) messages;

    ctx->tokens_in = (input > NGX_HTTP_FAIRGATE_MAX_INPUT)
                     ? NGX_HTTP_FAIRGATE_MAX_INPUT : (uint32_t) input;

    ctx->max_tokens = flcf->max_tokens;

    for (i = 0; i < sizeof(max_names) / sizeof(max_names[0]); i++) {
        v = json_object_get(root, max_names[i]);

        if (v == NULL || json_is_null(v)) {
            continue;
        }

        max = json_is_integer(v) ? json_integer_value(v) : -1;

        if (max < 0) {
            json_decref(root);

            p = ngx_snprintf(msg, sizeof(msg) - 1,
                             "Invalid '%s': expected an integer of 0 or "
                             "more.", max_names[i]);
            *p = '\0';

            return ngx_http_fairgate_bad_request(r, ctx, max_names[i],
                                                 (char *) msg);
        }

        ctx->max_tokens = (max > NGX_HTTP_FAIRGATE_MAX_INPUT)
                          ? NGX_HTTP_FAIRGATE_MAX_INPUT : (uint32_t) max;
        break;
    }

    ctx->stream = json_is_true(json_object_get(root, "stream"));

    json_decref(root);

    return NGX_OK;
}


/* bytes of text in a message: content (a string or parts), name, tools */

static size_t
ngx_http_fairgate_message_text(json_t *msg)
{
    size_t   bytes, i;
    json_t  *calls, *call, *fn;

    if (!json_is_object(msg)) {
        return 0;
    }

    bytes = ngx_http_fairgate_text(json_object_get(msg, "content"))
            + ngx_http_fairgate_text(json_object_get(msg, "name"));

    calls = json_object_get(msg, "tool_calls");

    if (json_is_array(calls)) {
        json_array_foreach(calls, i, call) {
            fn = json_object_get(call, "function");
            bytes += ngx_http_fairgate_text(json_object_get(fn, "arguments"));
        }
    }

    return bytes;
}


/* bytes of a string, of the strings in an array, of the parts' "text" */

static size_t
ngx_http_fairgate_text(json_t *v)
{
    size_t   bytes, i;
    json_t  *item;

    if (json_is_string(v)) {
        return json_string_length(v);
    }

    if (!json_is_array(v)) {
        return 0;
    }

    bytes = 0;

    json_array_foreach(v, i, item) {
        if (json_is_string(item)) {
            bytes += json_string_length(item);

        } else if (json_is_object(item)) {
            bytes += ngx_http_fairgate_text(json_object_get(item, "text"));
            bytes += ngx_http_fairgate_text(json_object_get(item, "content"));
        }
    }

    return bytes;
}


/* the request body in one piece: in place when it is one buffer */

static ngx_int_t
ngx_http_fairgate_body(ngx_http_request_t *r, u_char **data, size_t *len)
{
    off_t         size;
    u_char       *p;
    ssize_t       n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    *len = 0;

    if (r->request_body == NULL || r->request_body->bufs == NULL) {
        return NGX_OK;
    }

    cl = r->request_body->bufs;
    b = cl->buf;

    if (cl->next == NULL && !b->in_file) {
        *data = b->pos;
        *len = b->last - b->pos;
        return NGX_OK;
    }

    size = 0;

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;
        size += b->in_file ? b->file_last - b->file_pos : b->last - b->pos;
    }

    p = ngx_pnalloc(r->pool, (size_t) size);
    if (p == NULL) {
        return NGX_ERROR;
    }

    *data = p;

    /*
     * A body larger than client_body_buffer_size was written to a file:
     * read it back (a local file; keep the buffer large enough to avoid it)
     */

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (!b->in_file) {
            p = ngx_cpymem(p, b->pos, b->last - b->pos);
            continue;
        }

        n = ngx_read_file(b->file, p, (size_t) (b->file_last - b->file_pos),
                          b->file_pos);

        if (n != b->file_last - b->file_pos) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "fairgate: reading the request body back from "
                          "\"%V\" failed", &b->file->name);
            return NGX_ERROR;
        }

        p += n;
    }

    *len = p - *data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_bad_request(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *param, const char *message)
{
    ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
    ctx->outcome = NGX_HTTP_FAIRGATE_BAD_REQUEST;

    return ngx_http_fairgate_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "invalid_request_error", param, NULL,
                                        message, 0);
}
