
/*
 * fairgate: libFuzzer target of the OpenAI API layer (not part of `make
 * test`; `make fuzz-openai-run FUZZ_TIME=300`).
 *
 * The first byte chooses what the rest is:
 *   bit 0       a /v1/chat/completions (0) or /v1/completions (1) body
 *   bit 1       a tokenizer.chat_template text instead of a body
 *   bits 2..7   how the text is cut for the stream writers and the
 *               stop matcher
 *
 * A body that parses goes through every template family, the response
 * writers (error bodies and the model list too) and the stop matcher; a
 * chat also through a Jinja template of its tools and calls, and its
 * last message's text through the tool-call readers of every family,
 * whole and split as a stream, and the writers of the calls read.
 * Every body is also parsed as a /v1/embeddings one: its inputs are 1 to
 * 2048, none empty, and an item of the response is written.
 * Checked: no crash, no sanitizer report, every written body is valid
 * JSON (jansson is strict about UTF-8) within the bound, the stop
 * matcher's output is a prefix of its input, and all of it when no stop
 * string matched.
 */


#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_openai_request.h"
#include "fg_openai_response.h"
#include "fg_chat_template.h"
#include "fg_openai_tools.h"


#define FG_FUZZ_CHECK(c)  do { if (!(c)) abort(); } while (0)


static void
fg_fuzz_json(const char *text, size_t len)
{
    json_t  *j;

    j = json_loadb(text, len, JSON_ALLOW_NUL, NULL);
    FG_FUZZ_CHECK(j != NULL);
    json_decref(j);
}


static void
fg_fuzz_responses(const fg_oai_request_t *req, const char *text, size_t len,
    unsigned cut)
{
    char            *out;
    size_t           n, size, pos, step;
    fg_oai_resp_t    r;
    fg_oai_error_t   err;
    fg_oai_usage_t   u;

    if (fg_oai_resp_init(&r, req->kind, "resp_fuzz", req->model.data,
                         req->model.len, "fp", 1, cut & 1)
        != 0)
    {
        return;
    }

    FG_FUZZ_CHECK(req->kind != FG_OAI_RESPONSES
                  || fg_oai_rsp_init(&r, req) == 0);

    u.prompt_tokens = (uint32_t) len;
    u.completion_tokens = cut;
    u.cached_tokens = cut / 2;

    size = fg_oai_resp_bound(&r, len);
    out = malloc(size);
    FG_FUZZ_CHECK(out != NULL);

    n = fg_oai_resp_json(&r, text, len, FG_OAI_FINISH_STOP, &u, out, size);
    FG_FUZZ_CHECK(n <= size);
    fg_fuzz_json(out, n);

    step = 1 + cut % 7;

    for (pos = 0; pos < len; pos += step) {
        n = fg_oai_sse_delta(&r, text + pos,
                             len - pos < step ? len - pos : step, out,
                             size);
        FG_FUZZ_CHECK(n <= size);
        FG_FUZZ_CHECK(n == 0 || strncmp(out, "data: ", 6) == 0
                      || (req->kind == FG_OAI_RESPONSES
                          && strncmp(out, "event: ", 7) == 0));
    }

    if (req->kind == FG_OAI_RESPONSES) {
        n = fg_oai_rsp_sse_finish(&r, text, len, FG_OAI_FINISH_LENGTH, &u,
                                  out, size);

    } else {
        n = fg_oai_sse_finish(&r, FG_OAI_FINISH_LENGTH, &u, out, size);
    }

    FG_FUZZ_CHECK(n <= size);

    fg_oai_error_set(&err, 400, "invalid_value", "x", "%.*s",
                     (int) (len < 300 ? len : 300), text);
    n = fg_oai_sse_error(&r, &err, out, size);
    FG_FUZZ_CHECK(n <= size);

    n = fg_oai_error_json(&err, out, size);
    FG_FUZZ_CHECK(n <= FG_OAI_ERROR_MAX);
    fg_fuzz_json(out, n);

    free(out);
}


/* the gateway's error bodies and the model list: measured, then written */
static void
fg_fuzz_other_bodies(const fg_oai_str_t *model, const char *text,
    size_t len, unsigned cut)
{
    char          *out;
    size_t         n;
    fg_oai_str_t   ids[2];

    /* text is NUL-terminated (the parser copies it so), a message */
    n = fg_oai_error_body("server_error", (cut & 1) ? NULL : model->data,
                          (cut & 2) ? NULL : "c", text, NULL, 0);
    out = malloc(n);
    FG_FUZZ_CHECK(out != NULL);
    FG_FUZZ_CHECK(fg_oai_error_body("server_error",
                                    (cut & 1) ? NULL : model->data,
                                    (cut & 2) ? NULL : "c", text, out, n)
                  == n);
    fg_fuzz_json(out, n);
    free(out);

    ids[0] = *model;
    ids[1].data = text;
    ids[1].len = len;

    n = fg_oai_models_json(ids, 2, cut, NULL, 0);
    out = malloc(n);
    FG_FUZZ_CHECK(out != NULL);
    FG_FUZZ_CHECK(fg_oai_models_json(ids, 2, cut, out, n) == n);
    fg_fuzz_json(out, n);
    free(out);
}


static void
fg_fuzz_stop(const fg_oai_request_t *req, const char *text, size_t len,
    unsigned cut)
{
    char           *buf, *got;
    size_t          pos, step, n, k;
    fg_oai_stop_t   s;

    if (fg_oai_stop_init(&s, req->stop, req->n_stop) != 0) {
        abort();
    }

    got = malloc(len + 1);
    FG_FUZZ_CHECK(got != NULL);
    k = 0;
    step = 1 + cut % 5;

    for (pos = 0; pos < len; pos += step) {
        n = len - pos < step ? len - pos : step;
        buf = malloc(FG_OAI_STOP_OUT(n));
        FG_FUZZ_CHECK(buf != NULL);
        n = fg_oai_stop_push(&s, text + pos, n, buf);
        FG_FUZZ_CHECK(k + n <= len);
        memcpy(got + k, buf, n);
        k += n;
        free(buf);
    }

    buf = malloc(FG_OAI_STOP_OUT(0));
    FG_FUZZ_CHECK(buf != NULL);
    n = fg_oai_stop_flush(&s, buf);
    FG_FUZZ_CHECK(k + n <= len);
    memcpy(got + k, buf, n);
    k += n;
    free(buf);

    FG_FUZZ_CHECK(memcmp(got, text, k) == 0);
    FG_FUZZ_CHECK(s.stopped || k == len);

    free(got);
}


static void
fg_fuzz_templates(const fg_oai_message_t *msgs, size_t n,
    const char *tpl, size_t tpl_len)
{
    char                *text;
    size_t               i, len;
    fg_oai_error_t       err;
    fg_chat_template_t   t;

    static const char   *families[] = {
        "fallback", "llama2", "llama3", "chatml", "mistral", "gemma", "phi3"
    };

    fg_chat_template_init(&t, tpl, tpl_len, "<s>", "</s>", 1);

    for (i = 0; i <= sizeof(families) / sizeof(families[0]); i++) {
        if (i > 0) {
            FG_FUZZ_CHECK(fg_chat_template_set_family(&t, families[i - 1])
                          == 0);
        }

        text = fg_chat_template_apply(&t, msgs, n, &len, &err);

        if (text) {
            FG_FUZZ_CHECK(strlen(text) <= len && text[len] == '\0');
            free(text);

        } else {
            FG_FUZZ_CHECK(err.message[0] != '\0');
        }
    }
}


/* the body as an embeddings request: its inputs whole, an item written */
static void
fg_fuzz_embed(const char *body, size_t size, const fg_oai_limits_t *lim)
{
    char               out[FG_OAI_EMBED_ITEM_MAX(8, 0)];
    size_t             i, n;
    const float        v[8] = { 1.0f, -0.5f, 1e-30f, -1e30f, 0.0f, 3.25f,
                                -0.0f, 1.17549435e-38f };
    fg_oai_error_t     err;
    fg_oai_request_t  *req;

    req = fg_oai_request_parse(FG_OAI_EMBEDDING, body, size, lim, &err);

    if (req == NULL) {
        FG_FUZZ_CHECK(err.status >= 400 && err.message[0] != '\0');
        return;
    }

    FG_FUZZ_CHECK(req->n_inputs >= 1 && req->n_inputs <= FG_OAI_MAX_INPUTS);

    for (i = 0; i < req->n_inputs; i++) {
        FG_FUZZ_CHECK(req->inputs[i].text.data
                      ? req->inputs[i].text.len > 0
                      : req->inputs[i].n_ids > 0);
    }

    n = fg_oai_embed_item(req->n_inputs, v, 8, NULL, 0, out, sizeof(out));
    FG_FUZZ_CHECK(n > 0 && n <= sizeof(out) && out[n - 1] == '}');

    fg_oai_request_free(req);
}


/* a template of the tool calling's variables */
static const char  fg_fuzz_tools_tpl[] =
    "{% for t in tools or [] %}{{ t.function.name }}{{ t | tojson }}"
    "{% endfor %}{% for m in messages %}{{ m.role }}:{{ m.content }}"
    "{% for c in m.tool_calls or [] %}{{ c.id }}{{ c.function.name }}"
    "{{ c.function.arguments | tojson }}{% endfor %}"
    "{{ m.tool_call_id }}{% endfor %}";


/* the calls read from text, written back: valid JSON each */
static void
fg_fuzz_tool_writers(const fg_tool_parsed_t *p)
{
    char            ids[FG_TOOL_MAX_CALLS][FG_OAI_CALL_ID_LEN], *out;
    size_t          i, n;
    fg_oai_resp_t   r;
    fg_oai_usage_t  u;

    memset(&u, 0, sizeof(u));

    for (i = 0; i < p->n_calls; i++) {
        fg_oai_tool_call_id(ids[i], FG_OAI_CALL_ID_LEN, FG_TOOL_FMT_JSON, i,
                            ~i);
        fg_fuzz_json(p->calls[i].arguments, p->calls[i].arguments_len);
    }

    FG_FUZZ_CHECK(fg_oai_resp_init(&r, FG_OAI_CHAT, "chatcmpl-f", "m", 1,
                                   NULL, 1, 1) == 0);

    out = fg_oai_resp_tools_json(&r, "c", 1, p, ids, &u, &n);
    FG_FUZZ_CHECK(out != NULL);
    fg_fuzz_json(out, n);
    free(out);

    r.started = 1;
    out = fg_oai_sse_tool_calls(&r, p, ids, &n);
    FG_FUZZ_CHECK(out != NULL && n > 0);
    free(out);
}


static void
fg_fuzz_tools(const fg_oai_request_t *req, const char *text, size_t len,
    unsigned cut)
{
    char               err[256];
    size_t             k, n, step, pos, out_len;
    const char        *out;
    fg_jinja_out_t     jout;
    fg_oai_error_t     oerr;
    fg_tool_parsed_t   p;
    fg_tool_stream_t   s;
    fg_chat_template_t t;

    fg_chat_template_init(&t, NULL, 0, "<s>", "</s>", 1);
    FG_FUZZ_CHECK(fg_chat_jinja_load(&t, fg_fuzz_tools_tpl,
                                     sizeof(fg_fuzz_tools_tpl) - 1, err,
                                     sizeof(err)) == 0);

    if (fg_chat_jinja_render(&t, req->messages, req->n_messages, &req->tools,
                             &jout, &oerr)
        == 0)
    {
        fg_jinja_out_free(&jout);
    }

    fg_chat_template_free(&t);

    for (k = FG_TOOL_FMT_JSON; k <= FG_TOOL_FMT_MISTRAL; k++) {
        FG_FUZZ_CHECK(fg_oai_tools_answer(req, k, text, len, &p) == 0);
        FG_FUZZ_CHECK(p.content_len <= len);

        if (p.n_calls) {
            fg_fuzz_tool_writers(&p);
        }

        fg_tool_parsed_free(&p);

        /* split: what is sent and what is held make the text again */
        fg_tool_stream_init(&s, k);
        step = 1 + cut % 7;
        n = 0;

        for (pos = 0; pos < len; pos += step) {
            FG_FUZZ_CHECK(fg_tool_stream_push(&s, text + pos,
                                              len - pos < step ? len - pos
                                                               : step,
                                              &out, &out_len) == 0);
            FG_FUZZ_CHECK(n + out_len <= len
                          && memcmp(out, text + n, out_len) == 0);
            n += out_len;
        }

        fg_tool_stream_held(&s, &out, &out_len);
        FG_FUZZ_CHECK(n + out_len == len
                      && memcmp(out, text + n, out_len) == 0);
        fg_tool_stream_free(&s);
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned            mode;
    const char         *body, *text;
    fg_oai_kind_e       kind;
    fg_oai_error_t      err;
    fg_oai_limits_t     lim;
    fg_oai_message_t    msgs[3];
    fg_oai_request_t   *req;

    if (size == 0) {
        return 0;
    }

    mode = data[0];
    body = (const char *) data + 1;
    size--;

    if (mode & 2) {
        /* a template's text, on a fixed conversation */
        memset(msgs, 0, sizeof(msgs));
        msgs[0].role = FG_OAI_SYSTEM;
        msgs[0].content.data = "s";
        msgs[0].content.len = 1;
        msgs[1].role = FG_OAI_USER;
        msgs[1].content.data = " u ";
        msgs[1].content.len = 3;
        msgs[2].role = (mode & 4) ? FG_OAI_USER : FG_OAI_ASSISTANT;
        msgs[2].content.data = "";
        msgs[2].content.len = 0;

        fg_fuzz_templates(msgs, 3, body, size);
        return 0;
    }

    /* bit 0: completions, or with bit 7 responses; else chat */
    kind = !(mode & 1) ? FG_OAI_CHAT
           : (mode & 0x80) ? FG_OAI_RESPONSES : FG_OAI_COMPLETION;

    fg_oai_limits_init(&lim);
    lim.n_vocab = 512;

    fg_fuzz_embed(body, size, &lim);

    req = fg_oai_request_parse(kind, body, size, &lim, &err);

    if (req == NULL) {
        FG_FUZZ_CHECK(err.status >= 400 && err.message[0] != '\0');
        return 0;
    }

    FG_FUZZ_CHECK(req->model.data != NULL && req->n_stop <= FG_OAI_MAX_STOP);

    if (kind != FG_OAI_COMPLETION) {
        FG_FUZZ_CHECK(req->n_messages > 0);
        fg_fuzz_templates(req->messages, req->n_messages, NULL, 0);
        text = req->messages[req->n_messages - 1].content.data;
        size = req->messages[req->n_messages - 1].content.len;

    } else if (req->prompt.data) {
        text = req->prompt.data;
        size = req->prompt.len;

    } else {
        FG_FUZZ_CHECK(req->n_prompt_ids > 0);
        text = req->model.data;
        size = req->model.len;
    }

    fg_fuzz_responses(req, text, size, mode >> 2);
    fg_fuzz_other_bodies(&req->model, text, size, mode >> 2);
    fg_fuzz_stop(req, text, size, mode >> 2);

    if (kind == FG_OAI_CHAT) {
        fg_fuzz_tools(req, text, size, mode >> 2);
    }

    fg_oai_request_free(req);

    return 0;
}
