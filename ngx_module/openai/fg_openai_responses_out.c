
/*
 * fairgate: what POST /v1/responses sends back: OpenAI's Response object,
 * whole or as its stream of named events (the order is in
 * fg_openai_response.h), written into the caller's buffer as the chat's
 * bodies are (fg_openai_write.c), with the same contract: the bytes
 * needed are returned, and when they do not fit nothing valid was
 * written and the state (the sequence number, the opening) is unchanged.
 *
 * The response is one message item of one output_text part (an answer
 * with tool calls adds its function_call items: fg_openai_resp_calls.c).
 * The fields the request set are said back from it (the instructions,
 * the sampling parameters, max_output_tokens, metadata, the tools ...),
 * and the rest as OpenAI says them for a request without reasoning;
 * "store" is false, for nothing is stored.
 */


#include <stdio.h>
#include <string.h>

#include "fg_openai_response.h"
#include "fg_openai_write_int.h"


/* a Response's bytes but its text, its echo and its error's */
#define FG_OAI_RSP_FIXED     2048


static void
fg_oai_rsp_number(fg_oai_w_t *w, double v)
{
    char  buf[32];
    int   n;

    n = snprintf(buf, sizeof(buf), "%g", v);
    fg_oai_put(w, buf, n);
}


int
fg_oai_rsp_init(fg_oai_resp_t *r, const fg_oai_request_t *req)
{
    size_t                     i, echo;
    const fg_oai_responses_t  *e;

    if (r->kind != FG_OAI_RESPONSES || req->responses == NULL
        || r->id_len < 7)
    {
        return -1;
    }

    r->req = req;
    r->seq = 0;

    /* "msg_" and the response's own digits: one id names both */
    r->msg_id_len = (size_t) snprintf(r->msg_id, sizeof(r->msg_id),
                                      "\"msg_%.*s", (int) (r->id_len - 6),
                                      r->id + 6);

    e = req->responses;
    echo = e->instructions.len + req->user.len + e->tools.len
           + e->format.len + req->tool_choice_name.len;

    for (i = 0; i < 2 * e->n_metadata; i++) {
        echo += e->metadata[i].len + 8;
    }

    r->object_bound = FG_OAI_RSP_FIXED + r->id_len + r->model_len
                      + r->msg_id_len + 6 * echo;

    return 0;
}


size_t
fg_oai_rsp_bound(const fg_oai_resp_t *r, size_t len, int whole)
{
    /* text escapes to 6 bytes a byte at most; a finish says it four
     * times (the text, the part, the item, the Response); the opening
     * events carry two Responses, a failure one with its error */
    if (!whole) {
        return 6 * len + 2 * (r->msg_id_len + FG_OAI_RSP_FIXED);
    }

    return 24 * len + 3 * r->object_bound + 2 * FG_OAI_ERROR_MAX;
}


static void
fg_oai_rsp_usage(fg_oai_w_t *w, const fg_oai_usage_t *u)
{
    fg_oai_put_str(w, "{\"input_tokens\":");
    fg_oai_put_u64(w, u->prompt_tokens);
    fg_oai_put_str(w, ",\"input_tokens_details\":{\"cached_tokens\":");
    fg_oai_put_u64(w, u->cached_tokens);
    fg_oai_put_str(w, "},\"output_tokens\":");
    fg_oai_put_u64(w, u->completion_tokens);
    fg_oai_put_str(w, ",\"output_tokens_details\":{\"reasoning_tokens\":0}"
                      ",\"total_tokens\":");
    fg_oai_put_u64(w, (uint64_t) u->prompt_tokens + u->completion_tokens);
    fg_oai_put_str(w, "}");
}


/* the output_text part; text NULL: the empty one a stream opens with */
static void
fg_oai_rsp_part(fg_oai_w_t *w, const char *text, size_t len)
{
    fg_oai_put_str(w, "{\"type\":\"output_text\",\"annotations\":[],"
                      "\"logprobs\":[],\"text\":");
    fg_oai_put_json(w, text ? text : "", text ? len : 0);
    fg_oai_put_str(w, "}");
}


/* the message item; text NULL: in progress, no part yet */
static void
fg_oai_rsp_item(fg_oai_w_t *w, const fg_oai_resp_t *r, const char *text,
    size_t len, fg_oai_finish_e finish)
{
    fg_oai_put_str(w, "{\"id\":");
    fg_oai_put(w, r->msg_id, r->msg_id_len);
    fg_oai_put_str(w, ",\"type\":\"message\",\"status\":");

    if (text == NULL) {
        fg_oai_put_str(w, "\"in_progress\",\"content\":[");

    } else {
        fg_oai_put_str(w, finish == FG_OAI_FINISH_LENGTH
                          ? "\"incomplete\",\"content\":["
                          : "\"completed\",\"content\":[");
        fg_oai_rsp_part(w, text, len);
    }

    fg_oai_put_str(w, "],\"role\":\"assistant\"}");
}


/* "auto", "none", "required" or {"type":"function","name":..} */
static void
fg_oai_rsp_tool_choice(fg_oai_w_t *w, const fg_oai_request_t *q)
{
    switch (q->tool_choice) {

    case FG_OAI_TOOLS_NAMED:
        fg_oai_put_str(w, "{\"type\":\"function\",\"name\":");
        fg_oai_put_json(w, q->tool_choice_name.data,
                        q->tool_choice_name.len);
        fg_oai_put_str(w, "}");
        break;

    case FG_OAI_TOOLS_REQUIRED:
        fg_oai_put_str(w, "\"required\"");
        break;

    default:
        fg_oai_put_str(w, q->responses->tool_choice_none ? "\"none\""
                                                         : "\"auto\"");
    }
}


/* what the request set, said back */
static void
fg_oai_rsp_echo(fg_oai_w_t *w, const fg_oai_resp_t *r)
{
    size_t                     i;
    const fg_oai_request_t    *q;
    const fg_oai_responses_t  *e;

    q = r->req;
    e = q->responses;

    fg_oai_put_str(w, ",\"parallel_tool_calls\":");
    fg_oai_put_str(w, e->parallel_tool_calls ? "true" : "false");
    fg_oai_put_str(w, ",\"previous_response_id\":null,\"reasoning\":"
                      "{\"effort\":null,\"summary\":null},\"service_tier\":"
                      "\"default\",\"store\":false,\"temperature\":");
    fg_oai_rsp_number(w, q->temperature);
    fg_oai_put_str(w, ",\"text\":{\"format\":");

    if (e->format.data) {
        fg_oai_put(w, e->format.data, e->format.len);

    } else {
        fg_oai_put_str(w, "{\"type\":\"text\"}");
    }

    fg_oai_put_str(w, "},\"tool_choice\":");
    fg_oai_rsp_tool_choice(w, q);
    fg_oai_put_str(w, ",\"tools\":");

    if (e->tools.data) {
        fg_oai_put(w, e->tools.data, e->tools.len);

    } else {
        fg_oai_put_str(w, "[]");
    }

    fg_oai_put_str(w, ",\"top_logprobs\":0,\"top_p\":");
    fg_oai_rsp_number(w, q->top_p);
    fg_oai_put_str(w, ",\"truncation\":");
    fg_oai_put_str(w, e->truncation_auto ? "\"auto\"" : "\"disabled\"");
    fg_oai_put_str(w, ",\"user\":");

    if (q->user.len) {
        fg_oai_put_json(w, q->user.data, q->user.len);

    } else {
        fg_oai_put_str(w, "null");
    }

    fg_oai_put_str(w, ",\"metadata\":{");

    for (i = 0; i < e->n_metadata; i++) {
        fg_oai_put_str(w, i ? "," : "");
        fg_oai_put_json(w, e->metadata[2 * i].data, e->metadata[2 * i].len);
        fg_oai_put_str(w, ":");
        fg_oai_put_json(w, e->metadata[2 * i + 1].data,
                        e->metadata[2 * i + 1].len);
    }

    fg_oai_put_str(w, "}");
}


/*
 * The Response.  status: "in_progress" (no output, no usage yet),
 * "completed" or "incomplete" (the text), "failed" (err, no output).
 */
static void
fg_oai_rsp_object(fg_oai_w_t *w, const fg_oai_resp_t *r, const char *status,
    const char *text, size_t len, fg_oai_finish_e finish,
    const fg_oai_usage_t *usage, const fg_oai_error_t *err)
{
    const fg_oai_request_t  *q;

    q = r->req;

    fg_oai_put_str(w, "{\"id\":");
    fg_oai_put(w, r->id, r->id_len);
    fg_oai_put_str(w, ",\"object\":\"response\",\"created_at\":");
    fg_oai_put_i64(w, r->created);
    fg_oai_put_str(w, ",\"status\":\"");
    fg_oai_put_str(w, status);
    fg_oai_put_str(w, "\",\"background\":false,\"error\":");

    if (err) {
        fg_oai_put_str(w, "{\"code\":");
        fg_oai_put_json_or_null(w, err->code ? err->code : "server_error");
        fg_oai_put_str(w, ",\"message\":");
        fg_oai_put_json_or_null(w, err->message);
        fg_oai_put_str(w, "}");

    } else {
        fg_oai_put_str(w, "null");
    }

    fg_oai_put_str(w, ",\"incomplete_details\":");
    fg_oai_put_str(w, strcmp(status, "incomplete") == 0
                      ? "{\"reason\":\"max_output_tokens\"}" : "null");
    fg_oai_put_str(w, ",\"instructions\":");

    if (q->responses->instructions.data) {
        fg_oai_put_json(w, q->responses->instructions.data,
                        q->responses->instructions.len);

    } else {
        fg_oai_put_str(w, "null");
    }

    fg_oai_put_str(w, ",\"max_output_tokens\":");

    if (q->has_max_tokens) {
        fg_oai_put_u64(w, q->max_tokens);

    } else {
        fg_oai_put_str(w, "null");
    }

    fg_oai_put_str(w, ",\"max_tool_calls\":null,\"model\":");
    fg_oai_put(w, r->model, r->model_len);
    fg_oai_put_str(w, ",\"output\":[");

    if (text) {
        fg_oai_rsp_item(w, r, text, len, finish);
    }

    fg_oai_put_str(w, "]");
    fg_oai_rsp_echo(w, r);
    fg_oai_put_str(w, ",\"usage\":");

    if (usage) {
        fg_oai_rsp_usage(w, usage);

    } else {
        fg_oai_put_str(w, "null");
    }

    fg_oai_put_str(w, "}");
}


static const char *
fg_oai_rsp_status(fg_oai_finish_e finish)
{
    return finish == FG_OAI_FINISH_LENGTH ? "incomplete" : "completed";
}


size_t
fg_oai_rsp_json(const fg_oai_resp_t *r, const char *text, size_t len,
    fg_oai_finish_e finish, const fg_oai_usage_t *usage, char *out,
    size_t size)
{
    fg_oai_w_t  w;

    fg_oai_w_init(&w, out, size);

    fg_oai_rsp_object(&w, r, fg_oai_rsp_status(finish), text ? text : "",
                      len, finish, usage, NULL);
    fg_oai_put_str(&w, "\n");

    return w.n;
}


/* "event: NAME\ndata: {"type":NAME,"sequence_number":N" */
static void
fg_oai_rsp_event(fg_oai_w_t *w, uint64_t *seq, const char *name)
{
    fg_oai_put_str(w, "event: ");
    fg_oai_put_str(w, name);
    fg_oai_put_str(w, "\ndata: {\"type\":\"");
    fg_oai_put_str(w, name);
    fg_oai_put_str(w, "\",\"sequence_number\":");
    fg_oai_put_u64(w, (*seq)++);
}


/* ',"item_id":..,"output_index":0,"content_index":0' */
static void
fg_oai_rsp_where(fg_oai_w_t *w, const fg_oai_resp_t *r)
{
    fg_oai_put_str(w, ",\"item_id\":");
    fg_oai_put(w, r->msg_id, r->msg_id_len);
    fg_oai_put_str(w, ",\"output_index\":0,\"content_index\":0");
}


/* the message item and its part added */
static void
fg_oai_rsp_open_msg(fg_oai_w_t *w, const fg_oai_resp_t *r, uint64_t *seq)
{
    fg_oai_rsp_event(w, seq, "response.output_item.added");
    fg_oai_put_str(w, ",\"output_index\":0,\"item\":");
    fg_oai_rsp_item(w, r, NULL, 0, FG_OAI_FINISH_STOP);
    fg_oai_put_str(w, "}\n\n");

    fg_oai_rsp_event(w, seq, "response.content_part.added");
    fg_oai_rsp_where(w, r);
    fg_oai_put_str(w, ",\"part\":");
    fg_oai_rsp_part(w, NULL, 0);
    fg_oai_put_str(w, "}\n\n");
}


/* a request read for calls adds its message at its first text only: an
 * answer of calls alone has none */
static int
fg_oai_rsp_msg_later(const fg_oai_resp_t *r)
{
    return r->req->n_tools && r->req->tool_choice != FG_OAI_TOOLS_NONE;
}


/* the opening: the Response in progress (and its message, text or not,
 * unless it waits for text) */
static void
fg_oai_rsp_open(fg_oai_w_t *w, const fg_oai_resp_t *r, uint64_t *seq)
{
    fg_oai_rsp_event(w, seq, "response.created");
    fg_oai_put_str(w, ",\"response\":");
    fg_oai_rsp_object(w, r, "in_progress", NULL, 0, FG_OAI_FINISH_STOP,
                      NULL, NULL);
    fg_oai_put_str(w, "}\n\n");

    fg_oai_rsp_event(w, seq, "response.in_progress");
    fg_oai_put_str(w, ",\"response\":");
    fg_oai_rsp_object(w, r, "in_progress", NULL, 0, FG_OAI_FINISH_STOP,
                      NULL, NULL);
    fg_oai_put_str(w, "}\n\n");
}


/* the events in w are out once they fit: the state moves on with them */
static size_t
fg_oai_rsp_commit(fg_oai_w_t *w, fg_oai_resp_t *r, uint64_t seq,
    unsigned msg_open)
{
    if (w->n <= w->size) {
        r->seq = seq;
        r->started = 1;
        r->msg_open = msg_open;
    }

    return w->n;
}


size_t
fg_oai_rsp_sse_delta(fg_oai_resp_t *r, const char *text, size_t len,
    char *out, size_t size)
{
    unsigned    msg_open;
    uint64_t    seq;
    fg_oai_w_t  w;

    fg_oai_w_init(&w, out, size);
    seq = r->seq;
    msg_open = r->msg_open;

    if (!r->started) {
        fg_oai_rsp_open(&w, r, &seq);
    }

    if (!msg_open && (len || !fg_oai_rsp_msg_later(r))) {
        fg_oai_rsp_open_msg(&w, r, &seq);
        msg_open = 1;
    }

    if (len) {
        fg_oai_rsp_event(&w, &seq, "response.output_text.delta");
        fg_oai_rsp_where(&w, r);
        fg_oai_put_str(&w, ",\"delta\":");
        fg_oai_put_json(&w, text, len);
        fg_oai_put_str(&w, ",\"logprobs\":[]}\n\n");
    }

    return fg_oai_rsp_commit(&w, r, seq, msg_open);
}


size_t
fg_oai_rsp_sse_finish(fg_oai_resp_t *r, const char *text, size_t len,
    fg_oai_finish_e finish, const fg_oai_usage_t *usage, char *out,
    size_t size)
{
    uint64_t     seq;
    fg_oai_w_t   w;
    const char  *status;

    fg_oai_w_init(&w, out, size);
    seq = r->seq;
    text = text ? text : "";
    status = fg_oai_rsp_status(finish);

    if (!r->started) {
        fg_oai_rsp_open(&w, r, &seq);
    }

    if (!r->msg_open) {
        fg_oai_rsp_open_msg(&w, r, &seq);
    }

    fg_oai_rsp_event(&w, &seq, "response.output_text.done");
    fg_oai_rsp_where(&w, r);
    fg_oai_put_str(&w, ",\"text\":");
    fg_oai_put_json(&w, text, len);
    fg_oai_put_str(&w, ",\"logprobs\":[]}\n\n");

    fg_oai_rsp_event(&w, &seq, "response.content_part.done");
    fg_oai_rsp_where(&w, r);
    fg_oai_put_str(&w, ",\"part\":");
    fg_oai_rsp_part(&w, text, len);
    fg_oai_put_str(&w, "}\n\n");

    fg_oai_rsp_event(&w, &seq, "response.output_item.done");
    fg_oai_put_str(&w, ",\"output_index\":0,\"item\":");
    fg_oai_rsp_item(&w, r, text, len, finish);
    fg_oai_put_str(&w, "}\n\n");

    fg_oai_rsp_event(&w, &seq, finish == FG_OAI_FINISH_LENGTH
                               ? "response.incomplete"
                               : "response.completed");
    fg_oai_put_str(&w, ",\"response\":");
    fg_oai_rsp_object(&w, r, status, text, len, finish, usage, NULL);
    fg_oai_put_str(&w, "}\n\n");

    return fg_oai_rsp_commit(&w, r, seq, 1);
}


size_t
fg_oai_rsp_sse_error(fg_oai_resp_t *r, const fg_oai_error_t *err,
    char *out, size_t size)
{
    uint64_t    seq;
    fg_oai_w_t  w;

    fg_oai_w_init(&w, out, size);
    seq = r->seq;

    fg_oai_rsp_event(&w, &seq, "error");
    fg_oai_put_str(&w, ",\"code\":");
    fg_oai_put_json_or_null(&w, err->code);
    fg_oai_put_str(&w, ",\"message\":");
    fg_oai_put_json_or_null(&w, err->message);
    fg_oai_put_str(&w, ",\"param\":");
    fg_oai_put_json_or_null(&w, err->param[0] ? err->param : NULL);
    fg_oai_put_str(&w, "}\n\n");

    fg_oai_rsp_event(&w, &seq, "response.failed");
    fg_oai_put_str(&w, ",\"response\":");
    fg_oai_rsp_object(&w, r, "failed", NULL, 0, FG_OAI_FINISH_STOP, NULL,
                      err);
    fg_oai_put_str(&w, "}\n\n");

    return fg_oai_rsp_commit(&w, r, seq, r->msg_open);
}
