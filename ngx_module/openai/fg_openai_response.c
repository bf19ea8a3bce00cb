
/*
 * fairgate: OpenAI responses written by hand into the caller's buffer.
 *
 * A streamed response is one small JSON object per token; building each
 * with jansson would allocate a tree per token.  Everything a chunk
 * repeats (id, model, fingerprint) is escaped once at init, and a chunk
 * is those bytes, the escaped text and fixed punctuation.  The model list
 * and every error body, the gateway's own included, come from the same
 * writer, so one piece of code decides their shape and escaping.  The
 * tests parse every shape back with jansson.
 */


#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fg_openai_response.h"
#include "fg_openai_write_int.h"


/* escapes into a fixed buffer; -1 when it does not fit */
static int
fg_oai_json_into(char *dst, size_t size, size_t *len, const char *s,
    size_t n)
{
    fg_oai_w_t  w;

    w.p = dst;
    w.size = size;
    w.n = 0;

    fg_oai_put_json(&w, s, n);

    if (w.n > size) {
        return -1;
    }

    *len = w.n;

    return 0;
}


void
fg_oai_make_id(char *buf, size_t size, fg_oai_kind_e kind, uint64_t r0,
    uint64_t r1)
{
    char      digits[23];
    size_t    i;
    uint64_t  r;

    static const char  b62[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

    /* 11 base-62 digits hold 64 bits (62^11 > 2^64) */
    for (i = 0, r = r0; i < 11; i++, r /= 62) {
        digits[i] = b62[r % 62];
    }

    for (r = r1; i < 22; i++, r /= 62) {
        digits[i] = b62[r % 62];
    }

    digits[22] = '\0';

    snprintf(buf, size, "%s%s",
             kind == FG_OAI_CHAT ? "chatcmpl-"
             : kind == FG_OAI_RESPONSES ? "resp_" : "cmpl-", digits);
}


int
fg_oai_resp_init(fg_oai_resp_t *r, fg_oai_kind_e kind, const char *id,
    const char *model, size_t model_len, const char *fingerprint,
    int64_t created, int include_usage)
{
    memset(r, 0, sizeof(fg_oai_resp_t));

    r->kind = kind;
    r->created = created;
    r->include_usage = include_usage ? 1 : 0;

    if (fg_oai_json_into(r->id, sizeof(r->id), &r->id_len, id, strlen(id))
        != 0
        || fg_oai_json_into(r->model, sizeof(r->model), &r->model_len, model,
                            model_len)
           != 0)
    {
        return -1;
    }

    if (fingerprint == NULL) {
        memcpy(r->fp, "null", 4);
        r->fp_len = 4;
        return 0;
    }

    return fg_oai_json_into(r->fp, sizeof(r->fp), &r->fp_len, fingerprint,
                            strlen(fingerprint));
}


size_t
fg_oai_resp_bound(const fg_oai_resp_t *r, size_t len)
{
    size_t  chunks;

    if (r->kind == FG_OAI_RESPONSES) {
        return fg_oai_rsp_bound(r, len, 1);
    }

    /* text escapes to 6 bytes a byte at most; the rest is four chunks
     * (role, text, finish, usage) of repeated fields and punctuation, or
     * an error event */
    chunks = 4 + (r->n > 1 ? r->n : 0);

    return 6 * len + chunks * (r->id_len + r->model_len + r->fp_len)
           + r->lp_len + FG_OAI_ERROR_MAX + 1024 + 128 * (size_t) r->n;
}


const char *
fg_oai_finish_name(fg_oai_finish_e finish)
{
    switch (finish) {
    case FG_OAI_FINISH_LENGTH:
        return "length";
    case FG_OAI_FINISH_TOOL_CALLS:
        return "tool_calls";
    default:
        return "stop";
    }
}


static void
fg_oai_put_usage(fg_oai_w_t *w, const fg_oai_usage_t *u)
{
    fg_oai_put_str(w, "{\"prompt_tokens\":");
    fg_oai_put_u64(w, u->prompt_tokens);
    fg_oai_put_str(w, ",\"completion_tokens\":");
    fg_oai_put_u64(w, u->completion_tokens);
    fg_oai_put_str(w, ",\"total_tokens\":");
    fg_oai_put_u64(w, (uint64_t) u->prompt_tokens + u->completion_tokens);
    fg_oai_put_str(w, ",\"prompt_tokens_details\":{\"cached_tokens\":");
    fg_oai_put_u64(w, u->cached_tokens);
    fg_oai_put_str(w, "}}");
}


/* a response's "logprobs" value, null without */
static void
fg_oai_put_lp(fg_oai_w_t *w, const fg_oai_resp_t *r)
{
    if (r->lp == NULL) {
        fg_oai_put_str(w, "null");
        return;
    }

    fg_oai_put(w, r->lp, r->lp_len);
}


static void
fg_oai_put_logprob(fg_oai_w_t *w, float lp)
{
    char  buf[32];
    int   n;

    /* the prompt's first token has none (echo): null */
    if (isnan(lp)) {
        fg_oai_put_str(w, "null");
        return;
    }

    /* OpenAI's floor; -inf is no JSON number */
    n = snprintf(buf, sizeof(buf), "%.9g",
                 (double) (lp >= -9999.0f ? lp : -9999.0f));
    fg_oai_put(w, buf, n);
}


/* chat: {"token":..,"logprob":..,"bytes":[..] */
static void
fg_oai_put_lp_tok(fg_oai_w_t *w, const fg_oai_lp_tok_t *t)
{
    size_t  i;

    fg_oai_put_str(w, "{\"token\":");
    fg_oai_put_json(w, t->bytes, t->len);
    fg_oai_put_str(w, ",\"logprob\":");
    fg_oai_put_logprob(w, t->logprob);
    fg_oai_put_str(w, ",\"bytes\":[");

    for (i = 0; i < t->len; i++) {
        fg_oai_put_str(w, i ? "," : "");
        fg_oai_put_u64(w, (unsigned char) t->bytes[i]);
    }

    fg_oai_put_str(w, "]");
}


static void
fg_oai_lp_chat(fg_oai_w_t *w, const fg_oai_lp_t *lp, size_t n)
{
    size_t  i, j;

    fg_oai_put_str(w, "{\"content\":[");

    for (i = 0; i < n; i++) {
        fg_oai_put_str(w, i ? "," : "");
        fg_oai_put_lp_tok(w, &lp[i].tok);
        fg_oai_put_str(w, ",\"top_logprobs\":[");

        for (j = 0; j < lp[i].n_top; j++) {
            fg_oai_put_str(w, j ? "," : "");
            fg_oai_put_lp_tok(w, &lp[i].top[j]);
            fg_oai_put_str(w, "}");
        }

        fg_oai_put_str(w, "]}");
    }

    fg_oai_put_str(w, "],\"refusal\":null}");
}


/* whether one of the n entries of list has t's bytes */
static int
fg_oai_lp_seen(const fg_oai_lp_tok_t *t, const fg_oai_lp_tok_t *list,
    size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (list[i].len == t->len
            && memcmp(list[i].bytes, t->bytes, t->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* completions' map of alternatives: the best, then the sampled token
 * when it is not among them (OpenAI: up to logprobs + 1 entries); a text
 * already a key is not written twice */
static void
fg_oai_lp_map(fg_oai_w_t *w, const fg_oai_lp_t *lp)
{
    size_t  j, k;

    if (isnan(lp->tok.logprob)) {
        fg_oai_put_str(w, "null");
        return;
    }

    fg_oai_put_str(w, "{");

    for (j = 0, k = 0; j <= lp->n_top; j++) {
        if (j == lp->n_top) {
            if (fg_oai_lp_seen(&lp->tok, lp->top, lp->n_top)) {
                break;
            }

        } else if (fg_oai_lp_seen(&lp->top[j], lp->top, j)) {
            continue;
        }

        fg_oai_put_str(w, k++ ? "," : "");
        fg_oai_put_json(w, j < lp->n_top ? lp->top[j].bytes : lp->tok.bytes,
                        j < lp->n_top ? lp->top[j].len : lp->tok.len);
        fg_oai_put_str(w, ":");
        fg_oai_put_logprob(w, j < lp->n_top ? lp->top[j].logprob
                                            : lp->tok.logprob);
    }

    fg_oai_put_str(w, "}");
}


static void
fg_oai_lp_text(fg_oai_w_t *w, const fg_oai_lp_t *lp, size_t n,
    size_t offset)
{
    size_t  i;

    fg_oai_put_str(w, "{\"tokens\":[");

    for (i = 0; i < n; i++) {
        fg_oai_put_str(w, i ? "," : "");
        fg_oai_put_json(w, lp[i].tok.bytes, lp[i].tok.len);
    }

    fg_oai_put_str(w, "],\"token_logprobs\":[");

    for (i = 0; i < n; i++) {
        fg_oai_put_str(w, i ? "," : "");
        fg_oai_put_logprob(w, lp[i].tok.logprob);
    }

    fg_oai_put_str(w, "],\"top_logprobs\":[");

    for (i = 0; i < n; i++) {
        fg_oai_put_str(w, i ? "," : "");
        fg_oai_lp_map(w, &lp[i]);
    }

    fg_oai_put_str(w, "],\"text_offset\":[");

    for (i = 0; i < n; i++) {
        fg_oai_put_str(w, i ? "," : "");
        fg_oai_put_u64(w, offset);
        offset += lp[i].tok.len;
    }

    fg_oai_put_str(w, "]}");
}


size_t
fg_oai_lp_json(fg_oai_kind_e kind, const fg_oai_lp_t *lp, size_t n,
    size_t offset, char *out, size_t size)
{
    fg_oai_w_t  w;

    w.p = out;
    w.size = size;
    w.n = 0;

    if (kind == FG_OAI_CHAT) {
        fg_oai_lp_chat(&w, lp, n);

    } else {
        fg_oai_lp_text(&w, lp, n, offset);
    }

    return w.n;
}


/* {"id":..,"object":..,"created":..,"model":.. */
static void
fg_oai_put_head(fg_oai_w_t *w, const fg_oai_resp_t *r, const char *object)
{
    fg_oai_put_str(w, "{\"id\":");
    fg_oai_put(w, r->id, r->id_len);
    fg_oai_put_str(w, ",\"object\":\"");
    fg_oai_put_str(w, object);
    fg_oai_put_str(w, "\",\"created\":");
    fg_oai_put_i64(w, r->created);
    fg_oai_put_str(w, ",\"model\":");
    fg_oai_put(w, r->model, r->model_len);
}


/* one choice of a body: its text, its index, its logprobs, its finish */
static void
fg_oai_put_choice(fg_oai_w_t *w, const fg_oai_resp_t *r,
    const fg_oai_choice_t *c, uint32_t index)
{
    if (r->kind == FG_OAI_CHAT) {
        fg_oai_put_str(w, "{\"index\":");
        fg_oai_put_u64(w, index);
        fg_oai_put_str(w, ",\"message\":{\"role\":\"assistant\","
                          "\"content\":");
        fg_oai_put_json(w, c->text, c->len);
        fg_oai_put_str(w, ",\"refusal\":null},\"logprobs\":");

    } else {
        fg_oai_put_str(w, "{\"text\":");
        fg_oai_put_json(w, c->text, c->len);
        fg_oai_put_str(w, ",\"index\":");
        fg_oai_put_u64(w, index);
        fg_oai_put_str(w, ",\"logprobs\":");
    }

    if (c->lp) {
        fg_oai_put(w, c->lp, c->lp_len);

    } else {
        fg_oai_put_lp(w, r);
    }

    fg_oai_put_str(w, ",\"finish_reason\":\"");
    fg_oai_put_str(w, fg_oai_finish_name(c->finish));
    fg_oai_put_str(w, "\"}");
}


size_t
fg_oai_resp_choices(const fg_oai_resp_t *r, const fg_oai_choice_t *c,
    size_t n, const fg_oai_usage_t *usage, char *out, size_t size)
{
    size_t      i;
    fg_oai_w_t  w;

    w.p = out;
    w.size = size;
    w.n = 0;

    fg_oai_put_head(&w, r, r->kind == FG_OAI_CHAT ? "chat.completion"
                                                  : "text_completion");
    fg_oai_put_str(&w, ",\"choices\":[");

    for (i = 0; i < n; i++) {
        if (i) {
            fg_oai_put_str(&w, ",");
        }

        fg_oai_put_choice(&w, r, &c[i], (uint32_t) i);
    }

    fg_oai_put_str(&w, "],\"usage\":");
    fg_oai_put_usage(&w, usage);
    fg_oai_put_str(&w, ",\"system_fingerprint\":");
    fg_oai_put(&w, r->fp, r->fp_len);
    fg_oai_put_str(&w, "}\n");

    return w.n;
}


size_t
fg_oai_resp_json(const fg_oai_resp_t *r, const char *text, size_t len,
    fg_oai_finish_e finish, const fg_oai_usage_t *usage, char *out,
    size_t size)
{
    fg_oai_choice_t  c;

    if (r->kind == FG_OAI_RESPONSES) {
        return fg_oai_rsp_json(r, text, len, finish, usage, out, size);
    }

    c.text = text;
    c.len = len;
    c.finish = finish;
    c.lp = NULL;
    c.lp_len = 0;

    return fg_oai_resp_choices(r, &c, 1, usage, out, size);
}


/* "data: {head,"system_fingerprint":..,"choices":[" */
static void
fg_oai_chunk_start(fg_oai_w_t *w, const fg_oai_resp_t *r)
{
    fg_oai_put_str(w, "data: ");
    fg_oai_put_head(w, r, r->kind == FG_OAI_CHAT ? "chat.completion.chunk"
                                                 : "text_completion");
    fg_oai_put_str(w, ",\"system_fingerprint\":");
    fg_oai_put(w, r->fp, r->fp_len);
    fg_oai_put_str(w, ",\"choices\":[");
}


/* "]" and, when usage is asked for, the null every other chunk has */
static void
fg_oai_chunk_end(fg_oai_w_t *w, const fg_oai_resp_t *r)
{
    fg_oai_put_str(w, r->include_usage ? "],\"usage\":null}\n\n" : "]}\n\n");
}


/* who speaks, a chunk for each choice */
static void
fg_oai_chunk_role(fg_oai_w_t *w, const fg_oai_resp_t *r)
{
    uint32_t  i;

    for (i = 0; i < (r->n > 1 ? r->n : 1); i++) {
        fg_oai_chunk_start(w, r);
        fg_oai_put_str(w, "{\"index\":");
        fg_oai_put_u64(w, i);
        fg_oai_put_str(w, ",\"delta\":{\"role\":\"assistant\","
                          "\"content\":\"\",\"refusal\":null},"
                          "\"logprobs\":null,\"finish_reason\":null}");
        fg_oai_chunk_end(w, r);
    }
}


/*
 * A stream's chunks into out: a chat's first chunk says who speaks, and
 * the stream has started once it fitted (fg_oai_sse_close()).
 */
static int
fg_oai_sse_open(fg_oai_w_t *w, fg_oai_resp_t *r, char *out, size_t size)
{
    int  role;

    w->p = out;
    w->size = size;
    w->n = 0;

    role = (r->kind == FG_OAI_CHAT && !r->started);

    if (role) {
        fg_oai_chunk_role(w, r);
    }

    return role;
}


static size_t
fg_oai_sse_close(fg_oai_w_t *w, fg_oai_resp_t *r, int role)
{
    if (role && w->n <= w->size) {
        r->started = 1;
    }

    return w->n;
}


size_t
fg_oai_sse_delta(fg_oai_resp_t *r, const char *text, size_t len, char *out,
    size_t size)
{
    int         role;
    fg_oai_w_t  w;

    if (r->kind == FG_OAI_RESPONSES) {
        return fg_oai_rsp_sse_delta(r, text, len, out, size);
    }

    role = fg_oai_sse_open(&w, r, out, size);

    /* with logprobs, every token has its chunk, even one without text */
    if (len || r->lp) {
        fg_oai_chunk_start(&w, r);

        if (r->kind == FG_OAI_CHAT) {
            fg_oai_put_str(&w, "{\"index\":");
            fg_oai_put_u64(&w, r->index);
            fg_oai_put_str(&w, ",\"delta\":{\"content\":");
            fg_oai_put_json(&w, text, len);
            fg_oai_put_str(&w, "},\"logprobs\":");

        } else {
            fg_oai_put_str(&w, "{\"text\":");
            fg_oai_put_json(&w, text, len);
            fg_oai_put_str(&w, ",\"index\":");
            fg_oai_put_u64(&w, r->index);
            fg_oai_put_str(&w, ",\"logprobs\":");
        }

        fg_oai_put_lp(&w, r);
        fg_oai_put_str(&w, ",\"finish_reason\":null}");

        fg_oai_chunk_end(&w, r);
    }

    return fg_oai_sse_close(&w, r, role);
}


/* the finish chunk of choice r->index */
static void
fg_oai_chunk_finish(fg_oai_w_t *w, const fg_oai_resp_t *r,
    fg_oai_finish_e finish)
{
    fg_oai_chunk_start(w, r);

    if (r->kind == FG_OAI_CHAT) {
        fg_oai_put_str(w, "{\"index\":");
        fg_oai_put_u64(w, r->index);
        fg_oai_put_str(w, ",\"delta\":{},\"logprobs\":null,"
                          "\"finish_reason\":\"");

    } else {
        fg_oai_put_str(w, "{\"text\":\"\",\"index\":");
        fg_oai_put_u64(w, r->index);
        fg_oai_put_str(w, ",\"logprobs\":null,\"finish_reason\":\"");
    }

    fg_oai_put_str(w, fg_oai_finish_name(finish));
    fg_oai_put_str(w, "\"}");
    fg_oai_chunk_end(w, r);
}


/* the usage chunk if asked for, and [DONE] */
static void
fg_oai_chunk_done(fg_oai_w_t *w, const fg_oai_resp_t *r,
    const fg_oai_usage_t *usage)
{
    if (r->include_usage) {
        fg_oai_chunk_start(w, r);
        fg_oai_put_str(w, "],\"usage\":");
        fg_oai_put_usage(w, usage);
        fg_oai_put_str(w, "}\n\n");
    }

    fg_oai_put_str(w, "data: [DONE]\n\n");
}


size_t
fg_oai_sse_finish(fg_oai_resp_t *r, fg_oai_finish_e finish,
    const fg_oai_usage_t *usage, char *out, size_t size)
{
    int         role;
    fg_oai_w_t  w;

    /* a chat that produced no text still says who speaks */
    role = fg_oai_sse_open(&w, r, out, size);

    fg_oai_chunk_finish(&w, r, finish);
    fg_oai_chunk_done(&w, r, usage);

    return fg_oai_sse_close(&w, r, role);
}


size_t
fg_oai_sse_choice_end(fg_oai_resp_t *r, fg_oai_finish_e finish, char *out,
    size_t size)
{
    int         role;
    fg_oai_w_t  w;

    role = fg_oai_sse_open(&w, r, out, size);

    fg_oai_chunk_finish(&w, r, finish);

    return fg_oai_sse_close(&w, r, role);
}


size_t
fg_oai_sse_done(fg_oai_resp_t *r, const fg_oai_usage_t *usage, char *out,
    size_t size)
{
    int         role;
    fg_oai_w_t  w;

    role = fg_oai_sse_open(&w, r, out, size);

    fg_oai_chunk_done(&w, r, usage);

    return fg_oai_sse_close(&w, r, role);
}


size_t
fg_oai_models_json(const fg_oai_str_t *ids, size_t n, int64_t created,
    char *out, size_t size)
{
    size_t      i;
    fg_oai_w_t  w;

    w.p = out;
    w.size = size;
    w.n = 0;

    fg_oai_put_str(&w, "{\"object\":\"list\",\"data\":[");

    for (i = 0; i < n; i++) {
        fg_oai_put_str(&w, i ? ",{\"id\":" : "{\"id\":");
        fg_oai_put_json(&w, ids[i].data, ids[i].len);
        fg_oai_put_str(&w, ",\"object\":\"model\",\"created\":");
        fg_oai_put_i64(&w, created);
        fg_oai_put_str(&w, ",\"owned_by\":\"fairgate\"}");
    }

    fg_oai_put_str(&w, "]}\n");

    return w.n;
}


/* {"error":{"message":..,"type":..,"param":..,"code":..}} */
static void
fg_oai_put_error(fg_oai_w_t *w, const char *type, const char *param,
    const char *code, const char *message)
{
    fg_oai_put_str(w, "{\"error\":{\"message\":");
    fg_oai_put_json_or_null(w, message);
    fg_oai_put_str(w, ",\"type\":");
    fg_oai_put_json_or_null(w, type);
    fg_oai_put_str(w, ",\"param\":");
    fg_oai_put_json_or_null(w, param);
    fg_oai_put_str(w, ",\"code\":");
    fg_oai_put_json_or_null(w, code);
    fg_oai_put_str(w, "}}");
}


size_t
fg_oai_error_body(const char *type, const char *param, const char *code,
    const char *message, char *out, size_t size)
{
    fg_oai_w_t  w;

    w.p = out;
    w.size = size;
    w.n = 0;

    fg_oai_put_error(&w, type, param, code, message);
    fg_oai_put_str(&w, "\n");

    return w.n;
}


size_t
fg_oai_error_json(const fg_oai_error_t *err, char *out, size_t size)
{
    return fg_oai_error_body(err->type, err->param[0] ? err->param : NULL,
                             err->code, err->message, out, size);
}


size_t
fg_oai_sse_error(fg_oai_resp_t *r, const fg_oai_error_t *err, char *out,
    size_t size)
{
    fg_oai_w_t  w;

    if (r->kind == FG_OAI_RESPONSES) {
        return fg_oai_rsp_sse_error(r, err, out, size);
    }

    w.p = out;
    w.size = size;
    w.n = 0;

    /* no "event:" line: OpenAI's clients look for "error" in the data of
     * an unnamed event and raise it as an API error */
    fg_oai_put_str(&w, "data: ");
    fg_oai_put_error(&w, err->type, err->param[0] ? err->param : NULL,
                     err->code, err->message);
    fg_oai_put_str(&w, "\n\ndata: [DONE]\n\n");

    return w.n;
}
