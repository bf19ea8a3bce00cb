
/*
 * fairgate: step 2 of a request in drop-in mode, the body read and its
 * tokens estimated.
 *
 * The body is scanned once by the allocation-free JSON scanner
 * (openai/fg_json.c), which checks it against RFC 8259 as it goes; nothing
 * is copied.  The estimate is made before the upstream says (its usage
 * corrects it at the end): input is a quarter of the bytes of the text in
 * the request (message contents and names, tool call arguments, a prompt
 * or an input, instructions, Anthropic's system), rounded up, plus 4 a
 * message for the chat template's framing, plus a token a token id (a
 * prompt's or an embedding input's); output is what the request may ask
 * for at most: max_completion_tokens, max_tokens or max_output_tokens,
 * else fairgate_max_tokens, and none for an API that generates nothing
 * (embeddings, Anthropic's count_tokens; the API is told by the path).
 * That maximum, times the choices asked (n, best_of), and the body's size
 * bound the usage the upstream may report (ngx_http_fairgate_account.c
 * checks it).  The system prompts' part (messages of role system or
 * developer, instructions, Anthropic's system) is counted apart too, for
 * policy wsc.
 * When an upstream balances by prompt prefixes (fairgate_prefix), the
 * start of the text is kept too, each string as written followed by a
 * newline, for it to hash (ctx->prompt).  Local mode parses the request
 * itself instead (local/).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_json.h"
#include "ngx_http_fairgate_request_int.h"
#include "ngx_http_fairgate_prefix.h"


#define NGX_HTTP_FAIRGATE_MAX_INPUT  (UINT32_MAX / 4)


/* a string value as written is lit (roles have no escapes to decode) */
#define ngx_http_fairgate_raw_is(v, lit)                                      \
    ((v)->raw_len == sizeof(lit) - 1                                          \
     && ngx_strncmp((v)->raw, lit, sizeof(lit) - 1) == 0)


#define NGX_HTTP_FAIRGATE_SCAN_OTHER     0
#define NGX_HTTP_FAIRGATE_SCAN_MESSAGES  1     /* messages, input */
#define NGX_HTTP_FAIRGATE_SCAN_TEXT      2     /* prompt, instructions,
                                                  system */


/* what the scan of a request body gathers */
typedef struct {
    size_t                       bytes;      /* of text */
    size_t                       system;     /* of it, system prompts' */
    size_t                       message;    /* of the current message */
    ngx_uint_t                   messages;
    uint64_t                     ids;        /* token ids given */
    int64_t                      max[3];     /* -1: absent or null */
    int64_t                      choices;    /* n, best_of: the most */
    ngx_uint_t                   bad;        /* 1 + index of a bad max */
    ngx_uint_t                   seen;       /* bits of the keys read */
    ngx_uint_t                   dup;        /* 1 + index of one twice */
    ngx_uint_t                   section;    /* of the root's member */
    fg_json_value_t              model;      /* as written, if model_set */
    u_char                      *prompt;     /* the text's start, kept */
    u_char                      *last;
    u_char                      *end;
    unsigned                     object:1;
    unsigned                     stream:1;
    unsigned                     model_set:1;
    unsigned                     choices_bad:1; /* n or best_of unread */
    unsigned                     role_system:1; /* the current message */
} ngx_http_fairgate_scan_t;


static void ngx_http_fairgate_scan_request(fg_json_t *j, fg_json_value_t *v,
    void *data);
static ngx_uint_t ngx_http_fairgate_scan_member(ngx_http_fairgate_scan_t *scan,
    fg_json_t *j, fg_json_value_t *v);
static void ngx_http_fairgate_scan_messages(ngx_http_fairgate_scan_t *scan,
    fg_json_t *j, fg_json_value_t *v);
static void ngx_http_fairgate_scan_text(ngx_http_fairgate_scan_t *scan,
    fg_json_value_t *v);
static void ngx_http_fairgate_scan_ids(ngx_http_fairgate_scan_t *scan,
    fg_json_t *j, fg_json_value_t *v);
static void ngx_http_fairgate_scan_message_end(
    ngx_http_fairgate_scan_t *scan);
static ngx_int_t ngx_http_fairgate_parse_model(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, fg_json_value_t *v);
static void ngx_http_fairgate_estimate(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_scan_t *scan, ngx_http_fairgate_loc_conf_t *flcf);


static ngx_str_t  ngx_http_fairgate_max_names[] = {
    ngx_string("max_completion_tokens"),
    ngx_string("max_tokens"),
    ngx_string("max_output_tokens")
};


/*
 * The root's keys the scan reads: each must appear once, as local mode
 * has it, since the upstream's parser may take another copy than the
 * scan does (the first where the scan takes the last, or the reverse),
 * and a client could then be estimated for one max_tokens or prompt and
 * served another.
 */
static ngx_str_t  ngx_http_fairgate_read_keys[] = {
    ngx_string("max_completion_tokens"),
    ngx_string("max_tokens"),
    ngx_string("max_output_tokens"),
    ngx_string("messages"),
    ngx_string("input"),
    ngx_string("instructions"),
    ngx_string("prompt"),
    ngx_string("stream"),
    ngx_string("model"),
    ngx_string("system")
};


ngx_int_t
ngx_http_fairgate_parse(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_loc_conf_t *flcf)
{
    u_char                    *data, *p, msg[256];
    size_t                     len, keep;
    fg_json_t                  j;
    ngx_int_t                  rc;
    ngx_http_fairgate_scan_t   scan;

    rc = ngx_http_fairgate_body(r, &data, &len);
    if (rc != NGX_OK) {
        return rc;
    }

    if (len == 0) {
        return ngx_http_fairgate_bad_request(r, ctx, NULL, NULL,
                                             "The request has no body: "
                                             "a JSON object was expected.");
    }

    ngx_memzero(&scan, sizeof(ngx_http_fairgate_scan_t));
    scan.max[0] = scan.max[1] = scan.max[2] = -1;
    scan.choices = 1;
    ctx->body_bytes = len;

    keep = ngx_http_fairgate_prefix_text(r);

    if (keep) {
        scan.prompt = ngx_pnalloc(r->pool, keep);
        if (scan.prompt == NULL) {
            return NGX_ERROR;
        }

        scan.last = scan.prompt;
        scan.end = scan.prompt + keep;
    }

    if (fg_json_scan(&j, data, len, ngx_http_fairgate_scan_request, &scan)
        != 0)
    {
        p = ngx_snprintf(msg, sizeof(msg) - 1,
                         "We could not parse the JSON body of your request: "
                         "%s (line %uz, column %uz).",
                         j.error, j.line, j.column);
        *p = '\0';

        return ngx_http_fairgate_bad_request(r, ctx, NULL, NULL,
                                             (char *) msg);
    }

    ngx_http_fairgate_scan_message_end(&scan);

    if (!scan.object) {
        return ngx_http_fairgate_bad_request(r, ctx, NULL, NULL,
                                             "The request body must be a "
                                             "JSON object.");
    }

    if (scan.dup) {
        p = ngx_snprintf(msg, sizeof(msg) - 1,
                         "Duplicate key '%V' in the request body: it must "
                         "appear once.",
                         &ngx_http_fairgate_read_keys[scan.dup - 1]);
        *p = '\0';

        return ngx_http_fairgate_bad_request(r, ctx,
                      (char *) ngx_http_fairgate_read_keys[scan.dup - 1].data,
                      NULL, (char *) msg);
    }

    if (scan.bad) {
        p = ngx_snprintf(msg, sizeof(msg) - 1,
                         "Invalid '%V': expected an integer of 0 or more.",
                         &ngx_http_fairgate_max_names[scan.bad - 1]);
        *p = '\0';

        return ngx_http_fairgate_bad_request(r, ctx,
                      (char *) ngx_http_fairgate_max_names[scan.bad - 1].data,
                      NULL, (char *) msg);
    }

    if (scan.model_set) {
        rc = ngx_http_fairgate_parse_model(r, ctx, &scan.model);
        if (rc != NGX_OK) {
            return rc;
        }

        if (ngx_http_fairgate_model_alias_body(r, ctx, flcf, data, len)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    ctx->dropin_api = ngx_http_fairgate_api_of(r);

    ngx_http_fairgate_estimate(ctx, &scan, flcf);

    ctx->prompt.data = scan.prompt;
    ctx->prompt.len = scan.last - scan.prompt;

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

    if (j->depth == 0) {
        scan->object = (v->type == FG_JSON_OBJECT);
        return;
    }

    if (j->depth == 1 && ngx_http_fairgate_scan_member(scan, j, v)) {
        return;
    }

    switch (scan->section) {

    case NGX_HTTP_FAIRGATE_SCAN_MESSAGES:
        ngx_http_fairgate_scan_messages(scan, j, v);
        return;

    case NGX_HTTP_FAIRGATE_SCAN_TEXT:

        /* a string, strings, or a system prompt's text blocks */
        if (v->type == FG_JSON_STRING
            && (j->depth <= 2
                || (j->depth == 3 && fg_json_key_is(j, 2, "text"))))
        {
            ngx_http_fairgate_scan_text(scan, v);

        } else {
            ngx_http_fairgate_scan_ids(scan, j, v);
        }

        return;

    default:
        return;
    }
}


/*
 * A member of the root: what is below it is read by its kind.  1 when the
 * member is read whole here (stream, max_*tokens, anything not counted).
 */

static ngx_uint_t
ngx_http_fairgate_scan_member(ngx_http_fairgate_scan_t *scan, fg_json_t *j,
    fg_json_value_t *v)
{
    ngx_uint_t  i;

    ngx_http_fairgate_scan_message_end(scan);
    scan->section = NGX_HTTP_FAIRGATE_SCAN_OTHER;

    for (i = 0; i < sizeof(ngx_http_fairgate_read_keys) / sizeof(ngx_str_t);
         i++)
    {
        if (fg_json_key_n(j, 0, (char *) ngx_http_fairgate_read_keys[i].data,
                          ngx_http_fairgate_read_keys[i].len))
        {
            if ((scan->seen & (1 << i)) && scan->dup == 0) {
                scan->dup = i + 1;
            }

            scan->seen |= 1 << i;
            break;
        }
    }

    if (fg_json_key_is(j, 0, "messages") || fg_json_key_is(j, 0, "input")) {
        scan->section = NGX_HTTP_FAIRGATE_SCAN_MESSAGES;
        return 0;
    }

    if (fg_json_key_is(j, 0, "instructions")
        || fg_json_key_is(j, 0, "system"))
    {
        /* the Responses API's system prompt, and Anthropic's */
        scan->section = NGX_HTTP_FAIRGATE_SCAN_TEXT;
        scan->role_system = 1;
        return 0;
    }

    if (fg_json_key_is(j, 0, "prompt")) {
        scan->section = NGX_HTTP_FAIRGATE_SCAN_TEXT;
        return 0;
    }

    if (fg_json_key_is(j, 0, "stream")) {
        scan->stream = (v->type == FG_JSON_TRUE);
        return 1;
    }

    if (fg_json_key_is(j, 0, "model")) {
        scan->model = *v;
        scan->model_set = 1;
        return 1;
    }

    /* the most of any copy: a bound, whichever the upstream reads */
    if (fg_json_key_is(j, 0, "n") || fg_json_key_is(j, 0, "best_of")) {
        if (v->type == FG_JSON_NUMBER && v->integer && !v->overflow
            && v->value >= 1)
        {
            scan->choices = ngx_min(ngx_max(scan->choices, v->value),
                                    NGX_HTTP_FAIRGATE_MAX_INPUT);

        } else if (v->type != FG_JSON_NULL) {
            scan->choices_bad = 1;
        }

        return 1;
    }

    for (i = 0; i < 3; i++) {
        if (!fg_json_key_n(j, 0, (char *) ngx_http_fairgate_max_names[i].data,
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

        return 1;
    }

    return 1;
}


/*
 * The model the request names, for prices, quotas, per-key models and
 * $fairgate_model (routing).  A name is plain text: one written with
 * escapes is refused rather than decoded, so that the gateway and the
 * upstream cannot read two names from it.
 */

static ngx_int_t
ngx_http_fairgate_parse_model(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, fg_json_value_t *v)
{
    if (v->type == FG_JSON_NULL) {
        return NGX_OK;
    }

    if (v->type != FG_JSON_STRING || v->len != v->raw_len
        || v->len > NGX_HTTP_FAIRGATE_MODEL_LEN)
    {
        return ngx_http_fairgate_bad_request(r, ctx, "model", NULL,
                                             "Invalid 'model': expected a "
                                             "model name, a string of at "
                                             "most 256 bytes without "
                                             "escapes.");
    }

    ctx->model.data = (u_char *) v->raw;
    ctx->model.len = v->raw_len;

    return NGX_OK;
}


/* a value in "messages" or "input" */

static void
ngx_http_fairgate_scan_messages(ngx_http_fairgate_scan_t *scan, fg_json_t *j,
    fg_json_value_t *v)
{
    unsigned  d;

    d = j->depth;

    if (d == 2 && v->type == FG_JSON_OBJECT) {
        /* an element of "messages" or "input": the last one ends */
        ngx_http_fairgate_scan_message_end(scan);

        if (j->path[0].key_len == 8) {
            scan->messages++;
        }

        return;
    }

    if (d == 3 && v->type == FG_JSON_STRING && fg_json_key_is(j, 2, "role")) {
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
        ngx_http_fairgate_scan_text(scan, v);
        return;
    }

    ngx_http_fairgate_scan_ids(scan, j, v);
}


/*
 * Token ids given for a text (a prompt's, an embedding input's): an array
 * of them, or arrays of them, a token each.
 */

static void
ngx_http_fairgate_scan_ids(ngx_http_fairgate_scan_t *scan, fg_json_t *j,
    fg_json_value_t *v)
{
    unsigned  d;

    d = j->depth;

    if (v->type == FG_JSON_NUMBER
        && (d == 2 || d == 3) && j->path[1].key == NULL
        && (d == 2 || j->path[2].key == NULL))
    {
        scan->ids++;
    }
}


/* a string of the prompt's text: counted, and kept while there is room */

static void
ngx_http_fairgate_scan_text(ngx_http_fairgate_scan_t *scan,
    fg_json_value_t *v)
{
    size_t  n;

    scan->bytes += v->len;
    scan->message += v->len;

    if (scan->last == scan->end) {
        return;
    }

    n = ngx_min(v->raw_len, (size_t) (scan->end - scan->last));
    scan->last = ngx_cpymem(scan->last, v->raw, n);

    if (scan->last < scan->end) {
        *scan->last++ = '\n';
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


/* the request's tokens, as the scan measured them */

static void
ngx_http_fairgate_estimate(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_scan_t *scan, ngx_http_fairgate_loc_conf_t *flcf)
{
    uint64_t    input, out;
    ngx_uint_t  i;

    input = (scan->bytes + 3) / 4 + 4 * (uint64_t) scan->messages
            + scan->ids;

    ctx->tokens_in = (input > NGX_HTTP_FAIRGATE_MAX_INPUT)
                     ? NGX_HTTP_FAIRGATE_MAX_INPUT : (uint32_t) input;

    /* the system prompts' share of the text, for wsc's beta */
    ctx->system_tokens = (uint32_t) ((scan->system + 3) / 4);

    if (ctx->system_tokens > ctx->tokens_in) {
        ctx->system_tokens = ctx->tokens_in;
    }

    ctx->max_tokens = flcf->max_tokens;

    for (i = 0; i < 3; i++) {
        if (scan->max[i] >= 0) {
            ctx->max_tokens = (scan->max[i] > NGX_HTTP_FAIRGATE_MAX_INPUT)
                              ? NGX_HTTP_FAIRGATE_MAX_INPUT
                              : (uint32_t) scan->max[i];
            break;
        }
    }

    /* the output the request allows, when it says: all its choices' */

    if (ngx_http_fairgate_api_no_output(ctx->dropin_api)) {
        ctx->max_tokens = 0;
        ctx->max_out = 0;
        ctx->max_out_set = 1;

    } else if (i < 3 && !scan->choices_bad) {
        out = (uint64_t) ctx->max_tokens * (uint64_t) scan->choices;

        ctx->max_out = (out > NGX_HTTP_FAIRGATE_MAX_INPUT)
                       ? NGX_HTTP_FAIRGATE_MAX_INPUT : (uint32_t) out;
        ctx->max_out_set = 1;
    }

    ctx->stream = scan->stream;
}

