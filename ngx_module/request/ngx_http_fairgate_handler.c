
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
 * max_output_tokens, else fairgate_max_tokens.  The system prompts'
 * part (messages of role system or developer, and instructions) is
 * counted apart too, for policy wsc.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_json.h"
#include "ngx_http_fairgate.h"


#define NGX_HTTP_FAIRGATE_MAX_INPUT  (UINT32_MAX / 4)


/* a string value as written is lit (roles have no escapes to decode) */
#define ngx_http_fairgate_raw_is(v, lit)                                      \
    ((v)->raw_len == sizeof(lit) - 1                                          \
     && ngx_strncmp((v)->raw, lit, sizeof(lit) - 1) == 0)


#define NGX_HTTP_FAIRGATE_SCAN_OTHER     0
#define NGX_HTTP_FAIRGATE_SCAN_MESSAGES  1     /* messages, input */
#define NGX_HTTP_FAIRGATE_SCAN_TEXT      2     /* prompt, instructions */


/* what the scan of a request body gathers */
typedef struct {
    size_t                       bytes;      /* of text */
    size_t                       system;     /* of it, system prompts' */
    size_t                       message;    /* of the current message */
    ngx_uint_t                   messages;
    int64_t                      max[3];     /* -1: absent or null */
    ngx_uint_t                   bad;        /* 1 + index of a bad max */
    ngx_uint_t                   section;    /* of the root's member */
    unsigned                     object:1;
    unsigned                     stream:1;
    unsigned                     role_system:1; /* the current message */
} ngx_http_fairgate_scan_t;


static void ngx_http_fairgate_body_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_identify(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf);
static ngx_int_t ngx_http_fairgate_unauthorized(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *code, const char *message);
static ngx_int_t ngx_http_fairgate_parse(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf);
static void ngx_http_fairgate_scan_request(fg_json_t *j, fg_json_value_t *v,
    void *data);
static void ngx_http_fairgate_scan_message_end(
    ngx_http_fairgate_scan_t *scan);
static ngx_int_t ngx_http_fairgate_bad_request(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *param, const char *message);


static ngx_str_t  ngx_http_fairgate_max_names[] = {
    ngx_string("max_completion_tokens"),
    ngx_string("max_tokens"),
    ngx_string("max_output_tokens")
};


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

        /* local mode: the OpenAI parse, real token counts */

        rc = flcf->engine_pass ? ngx_http_fairgate_api_parse(r, ctx)
                               : ngx_http_fairgate_parse(r, ctx, flcf);

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

    rc = ngx_http_fairgate_interaction_read(r, ctx);

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
        ctx->priority = k->priority;
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
        ctx->priority = 1.0;

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
    u_char                    *data, *p, msg[256];
    size_t                     len;
    uint64_t                   input;
    fg_json_t                  j;
    ngx_int_t                  rc;
    ngx_uint_t                 i;
    ngx_http_fairgate_scan_t   scan;

    rc = ngx_http_fairgate_body(r, &data, &len);
    if (rc != NGX_OK) {
        return rc;
    }

    if (len == 0) {
        return ngx_http_fairgate_bad_request(r, ctx, NULL,
                                             "The request has no body: "
                                             "a JSON object was expected.");
    }

    ngx_memzero(&scan, sizeof(ngx_http_fairgate_scan_t));
    scan.max[0] = scan.max[1] = scan.max[2] = -1;

    if (fg_json_scan(&j, data, len, ngx_http_fairgate_scan_request, &scan)
        != 0)
    {
        p = ngx_snprintf(msg, sizeof(msg) - 1,
                         "We could not parse the JSON body of your request: "
                         "%s (line %uz, column %uz).",
                         j.error, j.line, j.column);
        *p = '\0';

        return ngx_http_fairgate_bad_request(r, ctx, NULL, (char *) msg);
    }

    ngx_http_fairgate_scan_message_end(&scan);

    if (!scan.object) {
        return ngx_http_fairgate_bad_request(r, ctx, NULL,
                                             "The request body must be a "
                                             "JSON object.");
    }

    if (scan.bad) {
        p = ngx_snprintf(msg, sizeof(msg) - 1,
                         "Invalid '%V': expected an integer of 0 or more.",
                         &ngx_http_fairgate_max_names[scan.bad - 1]);
        *p = '\0';

        return ngx_http_fairgate_bad_request(r, ctx,
                      (char *) ngx_http_fairgate_max_names[scan.bad - 1].data,
                      (char *) msg);
    }

    input = (scan.bytes + 3) / 4 + 4 * (uint64_t) scan.messages;

    ctx->tokens_in = (input > NGX_HTTP_FAIRGATE_MAX_INPUT)
                     ? NGX_HTTP_FAIRGATE_MAX_INPUT : (uint32_t) input;

    /* the system prompts' share of the text, for wsc's beta */
    ctx->system_tokens = (uint32_t) ((scan.system + 3) / 4);

    if (ctx->system_tokens > ctx->tokens_in) {
        ctx->system_tokens = ctx->tokens_in;
    }

    ctx->max_tokens = flcf->max_tokens;

    for (i = 0; i < 3; i++) {
        if (scan.max[i] >= 0) {
            ctx->max_tokens = (scan.max[i] > NGX_HTTP_FAIRGATE_MAX_INPUT)
                              ? NGX_HTTP_FAIRGATE_MAX_INPUT
                              : (uint32_t) scan.max[i];
            break;
        }
    }

    ctx->stream = scan.stream;

    return NGX_OK;
}


/*
 * Called for each value of the body: counts the bytes of text in
 * messages and input (contents, parts' text, names, tool call arguments),
 * prompt and instructions, and notes max_*tokens and stream.
 */

static void
ngx_http_fairgate_scan_request(fg_json_t *j, fg_json_value_t *v, void *data)
{
    ngx_http_fairgate_scan_t *scan = data;

    unsigned  d, i;

    d = j->depth;

    if (d == 0) {
        scan->object = (v->type == FG_JSON_OBJECT);
        return;
    }

    if (d == 1) {

        /* a member of the root: what is below it is read by its kind */

        ngx_http_fairgate_scan_message_end(scan);
        scan->section = NGX_HTTP_FAIRGATE_SCAN_OTHER;

        if (fg_json_key_is(j, 0, "messages")) {
            scan->section = NGX_HTTP_FAIRGATE_SCAN_MESSAGES;

        } else if (fg_json_key_is(j, 0, "input")) {
            scan->section = NGX_HTTP_FAIRGATE_SCAN_MESSAGES;

        } else if (fg_json_key_is(j, 0, "instructions")) {
            /* the Responses API's system prompt */
            scan->section = NGX_HTTP_FAIRGATE_SCAN_TEXT;
            scan->role_system = 1;

        } else if (fg_json_key_is(j, 0, "prompt")) {
            scan->section = NGX_HTTP_FAIRGATE_SCAN_TEXT;

        } else if (fg_json_key_is(j, 0, "stream")) {
            scan->stream = (v->type == FG_JSON_TRUE);
            return;

        } else {
            for (i = 0; i < 3; i++) {
                if (!fg_json_key_n(j, 0,
                               (char *) ngx_http_fairgate_max_names[i].data,
                               ngx_http_fairgate_max_names[i].len))
                {
                    continue;
                }

                if (v->type == FG_JSON_NUMBER && v->integer && !v->overflow
                    && v->value >= 0)
                {
                    scan->max[i] = v->value;

                } else if (v->type != FG_JSON_NULL && scan->bad == 0) {
                    scan->bad = i + 1;
                }

                return;
            }

            return;
        }
    }

    switch (scan->section) {

    case NGX_HTTP_FAIRGATE_SCAN_MESSAGES:

        if (d == 2 && v->type == FG_JSON_OBJECT) {
            /* an element of "messages" or "input": the last one ends */
            ngx_http_fairgate_scan_message_end(scan);

            if (j->path[0].key_len == 8) {
                scan->messages++;
            }

            return;
        }

        if (d == 3 && v->type == FG_JSON_STRING
            && fg_json_key_is(j, 2, "role"))
        {
            scan->role_system = ngx_http_fairgate_raw_is(v, "system")
                                || ngx_http_fairgate_raw_is(v, "developer");
            return;
        }

        if (v->type == FG_JSON_STRING
            && (d == 1 || (d == 2 && j->path[1].key == NULL)
                || fg_json_key_is(j, d - 1, "content")
                || fg_json_key_is(j, d - 1, "text")
                || fg_json_key_is(j, d - 1, "arguments")
                || (d == 3 && fg_json_key_is(j, 2, "name"))))
        {
            scan->bytes += v->len;
            scan->message += v->len;
        }

        return;

    case NGX_HTTP_FAIRGATE_SCAN_TEXT:

        if (v->type == FG_JSON_STRING && d <= 2) {
            scan->bytes += v->len;
            scan->message += v->len;
        }

        return;

    default:
        return;
    }
}


/*
 * A message's text is known only once its members are all read (its role
 * may come after its content): it is put down as a system prompt or not
 * when the next message, the next member of the root or the body ends.
 */

static void
ngx_http_fairgate_scan_message_end(ngx_http_fairgate_scan_t *scan)
{
    if (scan->role_system) {
        scan->system += scan->message;
    }

    scan->message = 0;
    scan->role_system = 0;
}


/* the request body in one piece: in place when it is one buffer */

ngx_int_t
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
