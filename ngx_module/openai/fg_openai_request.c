
/*
 * fairgate: OpenAI request bodies: parse (jansson), validate, copy out.
 *
 * The body is parsed into a tree, every top-level field is looked up in
 * one table saying for which endpoint it is valid and how it is checked,
 * and what the request keeps is copied into memory owned by the request,
 * so the tree is freed before returning.  A key that is in no row of the
 * table is refused as OpenAI refuses it ("Unrecognized request argument
 * supplied"): a client that sends a field expects it to do something.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_openai_request.h"


/* which endpoints a field belongs to */
#define FG_OAI_K_CHAT        0x01
#define FG_OAI_K_COMPLETION  0x02
#define FG_OAI_K_BOTH        (FG_OAI_K_CHAT|FG_OAI_K_COMPLETION)

/* the request's memory grows in blocks of at least this */
#define FG_OAI_BLOCK         4096


typedef struct fg_oai_block_s  fg_oai_block_t;

struct fg_oai_block_s {
    fg_oai_block_t          *next;
    size_t                   size;
    size_t                   used;
    /* the data follows, 16-byte aligned */
};


typedef struct {
    fg_oai_request_t        *req;
    const fg_oai_limits_t   *lim;
    fg_oai_error_t          *err;
    unsigned                 kind;            /* FG_OAI_K_* */
    size_t                   text;            /* message bytes so far */
    int64_t                  max_tokens;      /* -1: not given */
    int64_t                  max_completion;
    const json_t            *stream_options;
    unsigned                 top_p_zero:1;
} fg_oai_parse_t;


typedef int (*fg_oai_field_pt)(fg_oai_parse_t *p, const char *key,
    json_t *v, const char *why);

typedef struct {
    const char              *name;
    unsigned                 kinds;
    fg_oai_field_pt          check;
    const char              *why;            /* refused: the reason */
} fg_oai_field_t;


static int fg_oai_model(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_messages(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_prompt(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_max_tokens(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_temperature(fg_oai_parse_t *p, const char *key,
    json_t *v, const char *why);
static int fg_oai_top_p(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_top_k(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_seed(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_stop(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_stream(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_stream_options(fg_oai_parse_t *p, const char *key,
    json_t *v, const char *why);
static int fg_oai_user(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_n(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_ignore_eos(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_logprobs(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_zero(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_one(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_false(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_empty_object(fg_oai_parse_t *p, const char *key,
    json_t *v, const char *why);
static int fg_oai_any_object(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_any_bool(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_any_string(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_empty_string(fg_oai_parse_t *p, const char *key,
    json_t *v, const char *why);
static int fg_oai_tool_choice(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_response_format(fg_oai_parse_t *p, const char *key,
    json_t *v, const char *why);
static int fg_oai_modalities(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);
static int fg_oai_refuse(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why);


/*
 * Every field fairgate knows.  Rows with fg_oai_refuse are OpenAI fields
 * that would change the output and that fairgate does not support: any
 * value but null is a 400.  The rows after "harmless" change nothing here
 * with the values they are allowed.
 */
static const fg_oai_field_t  fg_oai_fields[] = {

    { "model", FG_OAI_K_BOTH, fg_oai_model, NULL },
    { "messages", FG_OAI_K_CHAT, fg_oai_messages, NULL },
    { "prompt", FG_OAI_K_COMPLETION, fg_oai_prompt, NULL },
    { "max_tokens", FG_OAI_K_BOTH, fg_oai_max_tokens, NULL },
    { "max_completion_tokens", FG_OAI_K_CHAT, fg_oai_max_tokens, NULL },
    { "temperature", FG_OAI_K_BOTH, fg_oai_temperature, NULL },
    { "top_p", FG_OAI_K_BOTH, fg_oai_top_p, NULL },
    { "seed", FG_OAI_K_BOTH, fg_oai_seed, NULL },
    { "stop", FG_OAI_K_BOTH, fg_oai_stop, NULL },
    { "stream", FG_OAI_K_BOTH, fg_oai_stream, NULL },
    { "stream_options", FG_OAI_K_BOTH, fg_oai_stream_options, NULL },
    { "user", FG_OAI_K_BOTH, fg_oai_user, NULL },
    { "n", FG_OAI_K_BOTH, fg_oai_n, NULL },

    /* extensions, as vLLM names them: the engine has both */
    { "top_k", FG_OAI_K_BOTH, fg_oai_top_k, NULL },
    { "ignore_eos", FG_OAI_K_BOTH, fg_oai_ignore_eos, NULL },

    /* harmless with these values */
    { "logprobs", FG_OAI_K_BOTH, fg_oai_logprobs, NULL },
    { "top_logprobs", FG_OAI_K_CHAT, fg_oai_zero, NULL },
    { "frequency_penalty", FG_OAI_K_BOTH, fg_oai_zero, NULL },
    { "presence_penalty", FG_OAI_K_BOTH, fg_oai_zero, NULL },
    { "logit_bias", FG_OAI_K_BOTH, fg_oai_empty_object, NULL },
    { "metadata", FG_OAI_K_BOTH, fg_oai_any_object, NULL },
    { "store", FG_OAI_K_BOTH, fg_oai_any_bool, NULL },
    { "service_tier", FG_OAI_K_BOTH, fg_oai_any_string, NULL },
    { "prompt_cache_key", FG_OAI_K_BOTH, fg_oai_any_string, NULL },
    { "safety_identifier", FG_OAI_K_BOTH, fg_oai_any_string, NULL },
    { "parallel_tool_calls", FG_OAI_K_CHAT, fg_oai_any_bool, NULL },
    { "tool_choice", FG_OAI_K_CHAT, fg_oai_tool_choice, NULL },
    { "response_format", FG_OAI_K_CHAT, fg_oai_response_format, NULL },
    { "modalities", FG_OAI_K_CHAT, fg_oai_modalities, NULL },
    { "echo", FG_OAI_K_COMPLETION, fg_oai_false, NULL },
    { "best_of", FG_OAI_K_COMPLETION, fg_oai_one, NULL },
    { "suffix", FG_OAI_K_COMPLETION, fg_oai_empty_string, NULL },

    /* refused */
    { "tools", FG_OAI_K_CHAT, fg_oai_refuse,
      "tool calling is not supported" },
    { "functions", FG_OAI_K_CHAT, fg_oai_refuse,
      "function calling is not supported" },
    { "function_call", FG_OAI_K_CHAT, fg_oai_refuse,
      "function calling is not supported" },
    { "audio", FG_OAI_K_CHAT, fg_oai_refuse,
      "audio output is not supported" },
    { "prediction", FG_OAI_K_CHAT, fg_oai_refuse,
      "predicted outputs are not supported" },
    { "reasoning_effort", FG_OAI_K_CHAT, fg_oai_refuse,
      "the models served have no reasoning effort setting" },
    { "verbosity", FG_OAI_K_CHAT, fg_oai_refuse,
      "the models served have no verbosity setting" },
    { "web_search_options", FG_OAI_K_CHAT, fg_oai_refuse,
      "web search is not supported" },

    { NULL, 0, NULL, NULL }
};


void
fg_oai_limits_init(fg_oai_limits_t *lim)
{
    lim->max_body = 4 * 1024 * 1024;
    lim->max_messages = 1024;
    lim->max_parts = 64;
    lim->max_text = 2 * 1024 * 1024;
    lim->max_model = 256;
    lim->max_user = 256;
    lim->max_stop_len = FG_OAI_STOP_MAX_LEN;
    lim->max_prompt_ids = 131072;
    lim->max_tokens = 1048576;
    lim->n_vocab = 0;
}


const char *
fg_oai_role_name(fg_oai_role_e role)
{
    switch (role) {
    case FG_OAI_SYSTEM:
        return "system";
    case FG_OAI_DEVELOPER:
        return "developer";
    case FG_OAI_USER:
        return "user";
    case FG_OAI_ASSISTANT:
        return "assistant";
    }

    return "unknown";
}


static void
fg_oai_error_vset(fg_oai_error_t *err, int status, const char *code,
    const char *param, const char *fmt, va_list args)
{
    err->status = status;
    err->type = status >= 500 ? "server_error" : "invalid_request_error";
    err->code = code;

    snprintf(err->param, sizeof(err->param), "%s", param ? param : "");
    vsnprintf(err->message, sizeof(err->message), fmt, args);
}


void
fg_oai_error_set(fg_oai_error_t *err, int status, const char *code,
    const char *param, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    fg_oai_error_vset(err, status, code, param, fmt, args);
    va_end(args);
}


/* a 400 about param; returns -1 so that checks can "return fg_oai_fail()" */
static int
fg_oai_fail(fg_oai_parse_t *p, const char *code, const char *param,
    const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    fg_oai_error_vset(p->err, 400, code, param, fmt, args);
    va_end(args);

    return -1;
}


static int
fg_oai_nomem(fg_oai_parse_t *p)
{
    fg_oai_error_set(p->err, 500, NULL, NULL, "out of memory");

    return -1;
}


/* the article and name of a JSON type, as OpenAI's messages say it */
static const char *
fg_oai_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a decimal";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }

    return "an unknown value";
}


static int
fg_oai_bad_type(fg_oai_parse_t *p, const char *param, const char *want,
    const json_t *v)
{
    return fg_oai_fail(p, "invalid_type", param,
                       "Invalid type for '%s': expected %s, but got %s "
                       "instead.", param, want, fg_oai_type_name(v));
}


/* memory owned by the request: freed in one go by fg_oai_request_free() */
static void *
fg_oai_alloc(fg_oai_request_t *r, size_t size)
{
    size_t           hdr, n;
    fg_oai_block_t  *b;

    hdr = (sizeof(fg_oai_block_t) + 15) & ~(size_t) 15;
    size = (size + 15) & ~(size_t) 15;

    b = r->mem;

    if (b == NULL || b->size - b->used < size) {
        n = size > FG_OAI_BLOCK ? size : FG_OAI_BLOCK;

        b = malloc(hdr + n);
        if (b == NULL) {
            return NULL;
        }

        b->next = r->mem;
        b->size = n;
        b->used = 0;
        r->mem = b;
    }

    b->used += size;

    return (char *) b + hdr + b->used - size;
}


static int
fg_oai_copy(fg_oai_parse_t *p, fg_oai_str_t *dst, const char *s, size_t len)
{
    char  *d;

    d = fg_oai_alloc(p->req, len + 1);
    if (d == NULL) {
        return fg_oai_nomem(p);
    }

    memcpy(d, s, len);
    d[len] = '\0';

    dst->data = d;
    dst->len = len;

    return 0;
}


void
fg_oai_request_free(fg_oai_request_t *r)
{
    fg_oai_block_t  *b, *next;

    if (r == NULL) {
        return;
    }

    for (b = r->mem; b; b = next) {
        next = b->next;
        free(b);
    }

    free(r);
}


fg_oai_request_t *
fg_oai_request_parse(fg_oai_kind_e kind, const char *body, size_t len,
    const fg_oai_limits_t *lim, fg_oai_error_t *err)
{
    int                    rc;
    json_t                *root, *v;
    const char            *key, *need;
    json_error_t           jerr;
    fg_oai_parse_t         p;
    fg_oai_request_t      *r;
    const fg_oai_field_t  *f;

    if (len > lim->max_body) {
        fg_oai_error_set(err, 413, "request_too_large", NULL,
                         "The request body of %zu bytes is larger than "
                         "the %zu bytes allowed.", len, lim->max_body);
        return NULL;
    }

    /* duplicate keys are refused: another reader of the same body (a
     * proxy, the drop-in scanner) could take the other copy */
    root = json_loadb(body, len, JSON_REJECT_DUPLICATES|JSON_DECODE_ANY,
                      &jerr);

    if (root == NULL) {
        fg_oai_error_set(err, 400, "invalid_json", NULL,
                         "We could not parse the JSON body of your "
                         "request: %s (line %d, column %d).", jerr.text,
                         jerr.line, jerr.column);
        return NULL;
    }

    if (!json_is_object(root)) {
        fg_oai_error_set(err, 400, "invalid_type", NULL,
                         "The request body must be a JSON object, not %s.",
                         fg_oai_type_name(root));
        json_decref(root);
        return NULL;
    }

    r = calloc(1, sizeof(fg_oai_request_t));
    if (r == NULL) {
        fg_oai_error_set(err, 500, NULL, NULL, "out of memory");
        json_decref(root);
        return NULL;
    }

    r->kind = kind;
    r->temperature = 1.0f;
    r->top_p = 1.0f;
    r->max_tokens = (kind == FG_OAI_COMPLETION) ? 16 : 0;

    memset(&p, 0, sizeof(fg_oai_parse_t));
    p.req = r;
    p.lim = lim;
    p.err = err;
    p.kind = (kind == FG_OAI_CHAT) ? FG_OAI_K_CHAT : FG_OAI_K_COMPLETION;
    p.max_tokens = -1;
    p.max_completion = -1;

    rc = 0;

    json_object_foreach(root, key, v) {

        for (f = fg_oai_fields; f->name; f++) {
            if (strcmp(f->name, key) == 0) {
                break;
            }
        }

        if (f->name == NULL) {
            rc = fg_oai_fail(&p, "unknown_parameter", key,
                             "Unrecognized request argument supplied: "
                             "%s", key);
            break;
        }

        if (!(f->kinds & p.kind)) {
            rc = fg_oai_fail(&p, "unknown_parameter", key,
                             "Unrecognized request argument supplied: %s "
                             "(it belongs to %s)", key,
                             (f->kinds & FG_OAI_K_CHAT)
                             ? "/v1/chat/completions" : "/v1/completions");
            break;
        }

        rc = f->check(&p, key, v, f->why);
        if (rc != 0) {
            break;
        }
    }

    if (rc == 0) {
        need = (kind == FG_OAI_CHAT) ? "messages" : "prompt";

        if (r->model.data == NULL) {
            rc = fg_oai_fail(&p, "missing_required_parameter", "model",
                             "Missing required parameter: 'model'.");

        } else if (json_object_get(root, need) == NULL) {
            rc = fg_oai_fail(&p, "missing_required_parameter", need,
                             "Missing required parameter: '%s'.", need);

        } else if (p.stream_options && !r->stream) {
            rc = fg_oai_fail(&p, "invalid_value", "stream_options",
                             "The 'stream_options' parameter is only "
                             "allowed when 'stream' is enabled.");

        } else if (p.max_tokens >= 0 && p.max_completion >= 0
                   && p.max_tokens != p.max_completion)
        {
            rc = fg_oai_fail(&p, "invalid_value", "max_completion_tokens",
                             "max_tokens (%lld) and max_completion_tokens "
                             "(%lld) disagree: give one of them.",
                             (long long) p.max_tokens,
                             (long long) p.max_completion);
        }
    }

    json_decref(root);

    if (rc != 0) {
        fg_oai_request_free(r);
        return NULL;
    }

    if (p.top_p_zero) {
        r->temperature = 0.0f;
        r->top_p = 1.0f;
    }

    return r;
}


/* a string of 1 .. max bytes (max 0: any length) */
static int
fg_oai_string(fg_oai_parse_t *p, const char *param, const json_t *v,
    size_t min, size_t max)
{
    size_t  len;

    if (!json_is_string(v)) {
        return fg_oai_bad_type(p, param, "a string", v);
    }

    len = json_string_length(v);

    if (len < min) {
        return fg_oai_fail(p, "string_below_min_length", param,
                           "Invalid '%s': empty string. Expected a string "
                           "with minimum length %zu, but got an empty "
                           "string instead.", param, min);
    }

    if (max && len > max) {
        return fg_oai_fail(p, "string_above_max_length", param,
                           "Invalid '%s': string too long. Expected a "
                           "string with maximum length %zu, but got a "
                           "string with length %zu instead.", param, max,
                           len);
    }

    return 0;
}


static int
fg_oai_model(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    (void) why;

    if (fg_oai_string(p, key, v, 1, p->lim->max_model) != 0) {
        return -1;
    }

    return fg_oai_copy(p, &p->req->model, json_string_value(v),
                       json_string_length(v));
}


/*
 * A message's content: a string, or an array of {"type": "text", "text":
 * ...} parts, joined with "\n" (the parts are separate blocks of text, as
 * vLLM joins them for templates that take a string).
 */
static int
fg_oai_content(fg_oai_parse_t *p, size_t i, json_t *v, fg_oai_str_t *out)
{
    char         param[96], *d;
    size_t       j, n, len;
    json_t      *part, *type, *text, *x;
    const char  *k;

    snprintf(param, sizeof(param), "messages[%zu].content", i);

    if (json_is_string(v)) {
        len = json_string_length(v);

        if (len > p->lim->max_text - p->text) {
            goto too_long;
        }

        p->text += len;

        return fg_oai_copy(p, out, json_string_value(v), len);
    }

    if (!json_is_array(v)) {
        return fg_oai_bad_type(p, param,
                               "a string or an array of text parts", v);
    }

    n = json_array_size(v);

    if (n == 0) {
        return fg_oai_fail(p, "empty_array", param,
                           "Invalid '%s': empty array. Expected an array "
                           "with minimum length 1, but got an empty array "
                           "instead.", param);
    }

    if (n > p->lim->max_parts) {
        return fg_oai_fail(p, "array_above_max_length", param,
                           "Invalid '%s': array too long. Expected an "
                           "array with maximum length %zu, but got an "
                           "array with length %zu instead.", param,
                           p->lim->max_parts, n);
    }

    /* first pass: check the parts and count their bytes */
    len = 0;

    json_array_foreach(v, j, part) {
        snprintf(param, sizeof(param), "messages[%zu].content[%zu]", i, j);

        if (!json_is_object(part)) {
            return fg_oai_bad_type(p, param, "an object", part);
        }

        type = json_object_get(part, "type");
        snprintf(param, sizeof(param), "messages[%zu].content[%zu].type", i,
                 j);

        if (type == NULL) {
            return fg_oai_fail(p, "missing_required_parameter", param,
                               "Missing required parameter: '%s'.", param);
        }

        if (!json_is_string(type)) {
            return fg_oai_bad_type(p, param, "a string", type);
        }

        if (strcmp(json_string_value(type), "text") != 0) {
            return fg_oai_fail(p, "unsupported_value", param,
                               "Content parts of type '%s' are not "
                               "supported: fairgate serves text only.",
                               json_string_value(type));
        }

        text = json_object_get(part, "text");
        snprintf(param, sizeof(param), "messages[%zu].content[%zu].text", i,
                 j);

        if (text == NULL) {
            return fg_oai_fail(p, "missing_required_parameter", param,
                               "Missing required parameter: '%s'.", param);
        }

        if (!json_is_string(text)) {
            return fg_oai_bad_type(p, param, "a string", text);
        }

        /* after the type: an image part's other keys are no news */
        json_object_foreach(part, k, x) {
            if (strcmp(k, "type") != 0 && strcmp(k, "text") != 0) {
                snprintf(param, sizeof(param),
                         "messages[%zu].content[%zu].%s", i, j, k);
                return fg_oai_fail(p, "unknown_parameter", param,
                                   "Unrecognized argument in a text part: "
                                   "%s", k);
            }
        }

        len += json_string_length(text) + (j ? 1 : 0);

        if (len > p->lim->max_text - p->text) {
            snprintf(param, sizeof(param), "messages[%zu].content", i);
            goto too_long;
        }
    }

    p->text += len;

    d = fg_oai_alloc(p->req, len + 1);
    if (d == NULL) {
        return fg_oai_nomem(p);
    }

    out->data = d;
    out->len = len;

    json_array_foreach(v, j, part) {
        text = json_object_get(part, "text");

        if (j) {
            *d++ = '\n';
        }

        memcpy(d, json_string_value(text), json_string_length(text));
        d += json_string_length(text);
    }

    *d = '\0';

    return 0;

too_long:

    return fg_oai_fail(p, "string_above_max_length", param,
                       "Invalid '%s': the messages' text passes the %zu "
                       "bytes allowed.", param, p->lim->max_text);
}


/* message fields that would need tool calling: only null is harmless */
static const char  *fg_oai_message_refused[] = {
    "tool_calls", "function_call", "tool_call_id", "audio", NULL
};


static int
fg_oai_message(fg_oai_parse_t *p, size_t i, json_t *m, fg_oai_message_t *out)
{
    char          param[96];
    json_t       *role, *content, *x;
    const char   *k, *name, **refused;

    snprintf(param, sizeof(param), "messages[%zu]", i);

    if (!json_is_object(m)) {
        return fg_oai_bad_type(p, param, "an object", m);
    }

    json_object_foreach(m, k, x) {
        snprintf(param, sizeof(param), "messages[%zu].%s", i, k);

        if (strcmp(k, "role") == 0 || strcmp(k, "content") == 0) {
            continue;
        }

        /* the templates have no place for a participant's name, and
         * OpenAI's models do read it */
        if (strcmp(k, "name") == 0) {
            return fg_oai_fail(p, "unsupported_parameter", param,
                               "Message names are not supported: the chat "
                               "templates have no place for them.");
        }

        if (strcmp(k, "refusal") == 0) {
            if (json_is_null(x)) {
                continue;
            }

            return fg_oai_fail(p, "unsupported_parameter", param,
                               "Assistant refusals cannot be given back "
                               "to the model.");
        }

        for (refused = fg_oai_message_refused; *refused; refused++) {
            if (strcmp(k, *refused) == 0) {
                break;
            }
        }

        if (*refused == NULL) {
            return fg_oai_fail(p, "unknown_parameter", param,
                               "Unrecognized argument in a message: %s", k);
        }

        if (json_is_null(x)
            || (json_is_array(x) && json_array_size(x) == 0))
        {
            continue;
        }

        return fg_oai_fail(p, "unsupported_parameter", param,
                           "'%s' is not supported: fairgate has no tool "
                           "or function calling and no audio.", k);
    }

    role = json_object_get(m, "role");
    snprintf(param, sizeof(param), "messages[%zu].role", i);

    if (role == NULL) {
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    if (!json_is_string(role)) {
        return fg_oai_bad_type(p, param, "a string", role);
    }

    name = json_string_value(role);

    if (strcmp(name, "system") == 0) {
        out->role = FG_OAI_SYSTEM;

    } else if (strcmp(name, "developer") == 0) {
        out->role = FG_OAI_DEVELOPER;

    } else if (strcmp(name, "user") == 0) {
        out->role = FG_OAI_USER;

    } else if (strcmp(name, "assistant") == 0) {
        out->role = FG_OAI_ASSISTANT;

    } else if (strcmp(name, "tool") == 0 || strcmp(name, "function") == 0) {
        return fg_oai_fail(p, "unsupported_value", param,
                           "Messages with role '%s' are not supported: "
                           "fairgate has no tool or function calling.",
                           name);

    } else {
        return fg_oai_fail(p, "invalid_value", param,
                           "Invalid value: '%.64s'. Supported values are: "
                           "'system', 'developer', 'user' and "
                           "'assistant'.", name);
    }

    content = json_object_get(m, "content");
    snprintf(param, sizeof(param), "messages[%zu].content", i);

    if (content == NULL) {
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    return fg_oai_content(p, i, content, &out->content);
}


static int
fg_oai_messages(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    size_t             i, n;
    json_t            *m;
    fg_oai_message_t  *msgs;

    (void) why;

    if (!json_is_array(v)) {
        return fg_oai_bad_type(p, key, "an array", v);
    }

    n = json_array_size(v);

    if (n == 0) {
        return fg_oai_fail(p, "empty_array", key,
                           "Invalid 'messages': empty array. Expected an "
                           "array with minimum length 1, but got an empty "
                           "array instead.");
    }

    if (n > p->lim->max_messages) {
        return fg_oai_fail(p, "array_above_max_length", key,
                           "Invalid 'messages': array too long. Expected "
                           "an array with maximum length %zu, but got an "
                           "array with length %zu instead.",
                           p->lim->max_messages, n);
    }

    msgs = fg_oai_alloc(p->req, n * sizeof(fg_oai_message_t));
    if (msgs == NULL) {
        return fg_oai_nomem(p);
    }

    json_array_foreach(v, i, m) {
        if (fg_oai_message(p, i, m, &msgs[i]) != 0) {
            return -1;
        }
    }

    p->req->messages = msgs;
    p->req->n_messages = n;

    return 0;
}


/* token ids: an array of integers, each a token of the vocabulary */
static int
fg_oai_prompt_ids(fg_oai_parse_t *p, const char *param, json_t *v)
{
    char      where[96];
    size_t    i, n;
    json_t   *x;
    int32_t  *ids;
    int64_t   id, max;

    n = json_array_size(v);

    if (n == 0) {
        return fg_oai_fail(p, "empty_array", param,
                           "Invalid '%s': empty array. Expected an array "
                           "with minimum length 1, but got an empty array "
                           "instead.", param);
    }

    if (n > p->lim->max_prompt_ids) {
        return fg_oai_fail(p, "array_above_max_length", param,
                           "Invalid '%s': array too long. Expected an "
                           "array with maximum length %zu, but got an "
                           "array with length %zu instead.", param,
                           p->lim->max_prompt_ids, n);
    }

    ids = fg_oai_alloc(p->req, n * sizeof(int32_t));
    if (ids == NULL) {
        return fg_oai_nomem(p);
    }

    max = p->lim->n_vocab ? (int64_t) p->lim->n_vocab - 1 : INT32_MAX;

    json_array_foreach(v, i, x) {
        snprintf(where, sizeof(where), "%s[%zu]", param, i);

        if (!json_is_integer(x)) {
            return fg_oai_bad_type(p, where, "an integer (a token id)", x);
        }

        id = json_integer_value(x);

        if (id < 0 || id > max) {
            return fg_oai_fail(p, "invalid_value", where,
                               "Invalid '%s': token id %lld is not in "
                               "[0, %lld].", where, (long long) id,
                               (long long) max);
        }

        ids[i] = (int32_t) id;
    }

    p->req->prompt_ids = ids;
    p->req->n_prompt_ids = n;

    return 0;
}


/*
 * A string, or one string in an array, or token ids ([1, 2] or [[1, 2]]).
 * Several prompts in one request would be several choices: one per
 * request, as n is.
 */
static int
fg_oai_prompt(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    json_t  *first;

    (void) why;

    if (json_is_string(v)) {
        if (json_string_length(v) > p->lim->max_text) {
            return fg_oai_fail(p, "string_above_max_length", key,
                               "Invalid 'prompt': the prompt passes the %zu "
                               "bytes allowed.", p->lim->max_text);
        }

        return fg_oai_copy(p, &p->req->prompt, json_string_value(v),
                           json_string_length(v));
    }

    if (!json_is_array(v)) {
        return fg_oai_bad_type(p, key, "a string or an array", v);
    }

    if (json_array_size(v) == 0) {
        return fg_oai_fail(p, "empty_array", key,
                           "Invalid 'prompt': empty array. Expected an "
                           "array with minimum length 1, but got an empty "
                           "array instead.");
    }

    first = json_array_get(v, 0);

    if (json_is_integer(first)) {
        return fg_oai_prompt_ids(p, key, v);
    }

    if (json_array_size(v) > 1) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Only one prompt per request is supported (n = "
                           "1): send the prompts as separate requests.");
    }

    if (json_is_string(first)) {
        return fg_oai_prompt(p, "prompt[0]", first, NULL);
    }

    if (json_is_array(first)) {
        return fg_oai_prompt_ids(p, "prompt[0]", first);
    }

    return fg_oai_bad_type(p, "prompt[0]",
                           "a string, a token id or an array of token ids",
                           first);
}


static int
fg_oai_max_tokens(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_int_t  n;

    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_integer(v)) {
        return fg_oai_bad_type(p, key, "an integer", v);
    }

    n = json_integer_value(v);

    if (n < 1) {
        return fg_oai_fail(p, "integer_below_min_value", key,
                           "Invalid '%s': integer below minimum value. "
                           "Expected a value >= 1, but got %lld instead.",
                           key, (long long) n);
    }

    if (n > p->lim->max_tokens) {
        return fg_oai_fail(p, "integer_above_max_value", key,
                           "Invalid '%s': integer above maximum value. "
                           "Expected a value <= %u, but got %lld instead.",
                           key, p->lim->max_tokens, (long long) n);
    }

    if (strcmp(key, "max_completion_tokens") == 0) {
        p->max_completion = n;

    } else {
        p->max_tokens = n;
    }

    p->req->max_tokens = (uint32_t) n;
    p->req->has_max_tokens = 1;

    return 0;
}


/* a number in [min, max]; 1 when null (absent), 0 when set */
static int
fg_oai_number(fg_oai_parse_t *p, const char *key, json_t *v, double min,
    double max, double *out)
{
    double  d;

    if (json_is_null(v)) {
        return 1;
    }

    if (!json_is_number(v)) {
        return fg_oai_bad_type(p, key, "a number", v);
    }

    d = json_number_value(v);

    if (d < min) {
        return fg_oai_fail(p, "decimal_below_min_value", key,
                           "Invalid '%s': decimal below minimum value. "
                           "Expected a value >= %g, but got %g instead.",
                           key, min, d);
    }

    if (d > max) {
        return fg_oai_fail(p, "decimal_above_max_value", key,
                           "Invalid '%s': decimal above maximum value. "
                           "Expected a value <= %g, but got %g instead.",
                           key, max, d);
    }

    *out = d;

    return 0;
}


static int
fg_oai_temperature(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int     rc;
    double  d;

    (void) why;

    rc = fg_oai_number(p, key, v, 0, 2, &d);

    if (rc == 0) {
        p->req->temperature = (float) d;
    }

    return rc < 0 ? -1 : 0;
}


static int
fg_oai_top_p(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    int     rc;
    double  d;

    (void) why;

    rc = fg_oai_number(p, key, v, 0, 1, &d);

    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }

    /* the nucleus of top_p 0 is the most likely token alone: greedy, set
     * once every field is read; the engine takes top_p in (0, 1] */
    if (d == 0) {
        p->top_p_zero = 1;
        return 0;
    }

    p->req->top_p = (float) d;

    return 0;
}


static int
fg_oai_top_k(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    json_int_t  n;

    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_integer(v)) {
        return fg_oai_bad_type(p, key, "an integer", v);
    }

    n = json_integer_value(v);

    /* -1 is vLLM's "off", 0 is the engine's */
    if (n < -1 || n > INT32_MAX) {
        return fg_oai_fail(p, "invalid_value", key,
                           "Invalid 'top_k': %lld is not -1 or 0 (off) or "
                           "a count of tokens up to %d.", (long long) n,
                           INT32_MAX);
    }

    p->req->top_k = n < 0 ? 0 : (uint32_t) n;

    return 0;
}


static int
fg_oai_seed(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_integer(v)) {
        return fg_oai_bad_type(p, key, "an integer", v);
    }

    p->req->seed = (uint64_t) json_integer_value(v);
    p->req->has_seed = 1;

    return 0;
}


static int
fg_oai_stop(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    char     param[48];
    size_t   i, max;
    json_t  *s;

    (void) why;

    max = p->lim->max_stop_len;

    if (max > FG_OAI_STOP_MAX_LEN) {
        max = FG_OAI_STOP_MAX_LEN;
    }

    if (json_is_null(v)) {
        return 0;
    }

    if (json_is_string(v)) {
        if (fg_oai_string(p, key, v, 1, max) != 0) {
            return -1;
        }

        p->req->n_stop = 1;

        return fg_oai_copy(p, &p->req->stop[0], json_string_value(v),
                           json_string_length(v));
    }

    if (!json_is_array(v)) {
        return fg_oai_bad_type(p, key, "a string or an array of strings", v);
    }

    if (json_array_size(v) > FG_OAI_MAX_STOP) {
        return fg_oai_fail(p, "array_above_max_length", key,
                           "Invalid 'stop': array too long. Expected an "
                           "array with maximum length %d, but got an array "
                           "with length %zu instead.", FG_OAI_MAX_STOP,
                           json_array_size(v));
    }

    json_array_foreach(v, i, s) {
        snprintf(param, sizeof(param), "stop[%zu]", i);

        if (fg_oai_string(p, param, s, 1, max) != 0) {
            return -1;
        }

        if (fg_oai_copy(p, &p->req->stop[i], json_string_value(s),
                        json_string_length(s))
            != 0)
        {
            return -1;
        }

        p->req->n_stop = i + 1;
    }

    return 0;
}


static int
fg_oai_bool(fg_oai_parse_t *p, const char *param, json_t *v, int *out)
{
    if (json_is_null(v)) {
        return 1;
    }

    if (!json_is_boolean(v)) {
        return fg_oai_bad_type(p, param, "a boolean", v);
    }

    *out = json_is_true(v);

    return 0;
}


static int
fg_oai_stream(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    int  rc, b;

    (void) why;

    b = 0;
    rc = fg_oai_bool(p, key, v, &b);

    if (rc == 0) {
        p->req->stream = b;
    }

    return rc < 0 ? -1 : 0;
}


static int
fg_oai_stream_options(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int          b;
    char         param[96];
    json_t      *x;
    const char  *k;

    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_object(v)) {
        return fg_oai_bad_type(p, key, "an object", v);
    }

    p->stream_options = v;

    json_object_foreach(v, k, x) {
        snprintf(param, sizeof(param), "stream_options.%s", k);

        if (strcmp(k, "include_usage") == 0) {
            if (fg_oai_bool(p, param, x, &b) < 0) {
                return -1;
            }

            p->req->include_usage = json_is_true(x);

        } else if (strcmp(k, "include_obfuscation") == 0) {
            /* padding against length side channels; the text is the same
             * without it */
            if (fg_oai_bool(p, param, x, &b) < 0) {
                return -1;
            }

        } else {
            return fg_oai_fail(p, "unknown_parameter", param,
                               "Unrecognized argument in stream_options: "
                               "%s", k);
        }
    }

    return 0;
}


static int
fg_oai_user(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (fg_oai_string(p, key, v, 0, p->lim->max_user) != 0) {
        return -1;
    }

    return fg_oai_copy(p, &p->req->user, json_string_value(v),
                       json_string_length(v));
}


static int
fg_oai_n(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    json_int_t  n;

    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_integer(v)) {
        return fg_oai_bad_type(p, key, "an integer", v);
    }

    n = json_integer_value(v);

    if (n < 1) {
        return fg_oai_fail(p, "integer_below_min_value", key,
                           "Invalid 'n': integer below minimum value. "
                           "Expected a value >= 1, but got %lld instead.",
                           (long long) n);
    }

    if (n > 1) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid 'n': fairgate generates one choice per "
                           "request (n = 1), not %lld: send separate "
                           "requests.", (long long) n);
    }

    return 0;
}


static int
fg_oai_ignore_eos(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int  rc, b;

    (void) why;

    b = 0;
    rc = fg_oai_bool(p, key, v, &b);

    if (rc == 0) {
        p->req->ignore_eos = b;
    }

    return rc < 0 ? -1 : 0;
}


/* chat: a boolean, only false; completions: a count, only null */
static int
fg_oai_logprobs(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (json_is_null(v) || json_is_false(v)) {
        return 0;
    }

    if (p->kind == FG_OAI_K_CHAT && !json_is_true(v)) {
        return fg_oai_bad_type(p, key, "a boolean", v);
    }

    if (p->kind == FG_OAI_K_COMPLETION && !json_is_integer(v)) {
        return fg_oai_bad_type(p, key, "an integer", v);
    }

    return fg_oai_fail(p, "unsupported_parameter", key,
                       "logprobs are not supported.");
}


/* a number that fairgate does not apply: only 0 (or null) changes nothing */
static int
fg_oai_zero(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_number(v)) {
        return fg_oai_bad_type(p, key, "a number", v);
    }

    if (json_number_value(v) != 0) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid '%s': fairgate does not apply %s; only "
                           "0 is accepted, got %g.", key, key,
                           json_number_value(v));
    }

    return 0;
}


static int
fg_oai_one(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_integer(v)) {
        return fg_oai_bad_type(p, key, "an integer", v);
    }

    if (json_integer_value(v) != 1) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid '%s': only 1 is supported, got %lld.",
                           key, (long long) json_integer_value(v));
    }

    return 0;
}


static int
fg_oai_false(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    int  b;

    (void) why;

    if (fg_oai_bool(p, key, v, &b) < 0) {
        return -1;
    }

    if (json_is_true(v)) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid '%s': only false is supported.", key);
    }

    return 0;
}


static int
fg_oai_empty_object(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_object(v)) {
        return fg_oai_bad_type(p, key, "an object", v);
    }

    if (json_object_size(v) != 0) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid '%s': fairgate does not apply %s; only "
                           "an empty object is accepted.", key, key);
    }

    return 0;
}


static int
fg_oai_any_object(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (json_is_null(v) || json_is_object(v)) {
        return 0;
    }

    return fg_oai_bad_type(p, key, "an object", v);
}


static int
fg_oai_any_bool(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    int  b;

    (void) why;

    return fg_oai_bool(p, key, v, &b) < 0 ? -1 : 0;
}


static int
fg_oai_any_string(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (json_is_null(v) || json_is_string(v)) {
        return 0;
    }

    return fg_oai_bad_type(p, key, "a string", v);
}


static int
fg_oai_empty_string(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_string(v)) {
        return fg_oai_bad_type(p, key, "a string", v);
    }

    if (json_string_length(v) != 0) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid '%s': text after the completion "
                           "(insertion) is not supported.", key);
    }

    return 0;
}


/* without tools, "none" is what happens anyway */
static int
fg_oai_tool_choice(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (json_is_null(v)
        || (json_is_string(v) && strcmp(json_string_value(v), "none") == 0))
    {
        return 0;
    }

    return fg_oai_fail(p, "unsupported_parameter", key,
                       "Invalid 'tool_choice': tool calling is not "
                       "supported; only \"none\" is accepted.");
}


static int
fg_oai_response_format(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_t      *type, *x;
    const char  *k;

    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_object(v)) {
        return fg_oai_bad_type(p, key, "an object", v);
    }

    type = json_object_get(v, "type");

    if (type == NULL) {
        return fg_oai_fail(p, "missing_required_parameter",
                           "response_format.type", "Missing required "
                           "parameter: 'response_format.type'.");
    }

    if (!json_is_string(type)) {
        return fg_oai_bad_type(p, "response_format.type", "a string", type);
    }

    if (strcmp(json_string_value(type), "text") != 0) {
        return fg_oai_fail(p, "unsupported_value", "response_format.type",
                           "Invalid 'response_format.type': '%.64s' is not "
                           "supported; fairgate generates free text only "
                           "(\"text\").", json_string_value(type));
    }

    json_object_foreach(v, k, x) {
        if (strcmp(k, "type") != 0) {
            return fg_oai_fail(p, "unsupported_parameter",
                               "response_format", "Invalid "
                               "'response_format': only {\"type\": "
                               "\"text\"} is supported.");
        }
    }

    return 0;
}


static int
fg_oai_modalities(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    char     param[48];
    size_t   i;
    json_t  *x;

    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (!json_is_array(v)) {
        return fg_oai_bad_type(p, key, "an array", v);
    }

    json_array_foreach(v, i, x) {
        snprintf(param, sizeof(param), "modalities[%zu]", i);

        if (!json_is_string(x)) {
            return fg_oai_bad_type(p, param, "a string", x);
        }

        if (strcmp(json_string_value(x), "text") != 0) {
            return fg_oai_fail(p, "unsupported_value", param,
                               "Invalid '%s': only the \"text\" modality "
                               "is supported.", param);
        }
    }

    return 0;
}


static int
fg_oai_refuse(fg_oai_parse_t *p, const char *key, json_t *v, const char *why)
{
    if (json_is_null(v)) {
        return 0;
    }

    return fg_oai_fail(p, "unsupported_parameter", key,
                       "Unsupported parameter: '%s': %s.", key, why);
}
