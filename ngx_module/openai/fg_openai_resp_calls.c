
/*
 * fairgate: a Response whose answer has tool calls (POST /v1/responses
 * with tools): the text before them is the message item, when there is
 * one, and each call a function_call item after it,
 *
 *     {"id": "fc_..", "type": "function_call", "status": "completed",
 *      "arguments": "{..}", "call_id": "call_..", "name": ".."}
 *
 * Streamed, the message's closing events come first (when it was
 * opened), then each call's as OpenAI sends them: output_item.added (the
 * arguments ""), function_call_arguments.delta and .done,
 * output_item.done; then response.completed.
 *
 * The Response is fg_openai_responses_out.c's, read back with jansson
 * and given its calls: a body with calls is written once, so the copy
 * costs nothing that matters.
 */


#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_openai_tools.h"


typedef struct {
    char                *data;
    size_t               len;
    uint64_t             seq;
    int                  failed;
} fg_oai_rsp_out_t;


/* call k's item: in progress (no arguments yet) or completed */
static json_t *
fg_oai_rsp_call_item(const fg_tool_parsed_t *p, size_t k,
    char (*ids)[FG_OAI_CALL_ID_LEN], int done)
{
    char         fc[FG_OAI_CALL_ID_LEN + 8];
    const char  *id;

    id = ids[k];

    /* "fc_" and the call's own random characters: one draw names both */
    strcpy(fc, "fc_");
    strcat(fc, strncmp(id, "call_", 5) == 0 ? id + 5 : id);

    return json_pack("{s:s,s:s,s:s,s:s%,s:s,s:s}", "id", fc, "type",
                     "function_call", "status",
                     done ? "completed" : "in_progress", "arguments",
                     done ? p->calls[k].arguments : "",
                     done ? p->calls[k].arguments_len : 0, "call_id", id,
                     "name", p->calls[k].name);
}


/* the Response, completed: the message item when message, the calls */
static json_t *
fg_oai_rsp_calls_object(const fg_oai_resp_t *r, const char *text,
    size_t len, int message, const fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN], const fg_oai_usage_t *usage)
{
    char    *buf;
    size_t   i, n, size;
    json_t  *root, *output;

    size = fg_oai_rsp_bound(r, len, 1);

    buf = malloc(size);
    if (buf == NULL) {
        return NULL;
    }

    n = fg_oai_rsp_json(r, text, len, FG_OAI_FINISH_TOOL_CALLS, usage, buf,
                        size);

    root = (n <= size) ? json_loadb(buf, n, 0, NULL) : NULL;
    free(buf);

    output = json_object_get(root, "output");

    if (output == NULL) {
        json_decref(root);
        return NULL;
    }

    if (!message) {
        json_array_clear(output);
    }

    for (i = 0; i < p->n_calls; i++) {
        if (json_array_append_new(output,
                                  fg_oai_rsp_call_item(p, i, ids, 1))
            != 0)
        {
            json_decref(root);
            return NULL;
        }
    }

    return root;
}


char *
fg_oai_rsp_tools_json(const fg_oai_resp_t *r, const char *content,
    size_t content_len, const fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN], const fg_oai_usage_t *usage,
    size_t *len)
{
    char    *s, *o;
    json_t  *root;

    root = fg_oai_rsp_calls_object(r, content, content_len,
                                   content_len > 0, p, ids, usage);
    if (root == NULL) {
        return NULL;
    }

    s = json_dumps(root, JSON_COMPACT|JSON_PRESERVE_ORDER);
    json_decref(root);

    if (s == NULL) {
        return NULL;
    }

    *len = strlen(s);

    /* a body ends its line, as fg_oai_rsp_json()'s */
    o = realloc(s, *len + 2);
    if (o == NULL) {
        free(s);
        return NULL;
    }

    o[(*len)++] = '\n';
    o[*len] = '\0';

    return o;
}


/* "event: NAME\ndata: {"type":NAME,"sequence_number":N,...}\n\n"; the
 * fields in ev (taken) */
static void
fg_oai_rsp_calls_event(fg_oai_rsp_out_t *out, const char *name, json_t *ev)
{
    char    *s, *d;
    size_t   n, need;
    json_t  *e;

    e = json_pack("{s:s,s:I}", "type", name, "sequence_number",
                  (json_int_t) out->seq);

    if (e == NULL || ev == NULL || json_object_update(e, ev) != 0) {
        out->failed = 1;
        json_decref(e);
        json_decref(ev);
        return;
    }

    json_decref(ev);
    out->seq++;

    s = json_dumps(e, JSON_COMPACT|JSON_PRESERVE_ORDER);
    json_decref(e);

    if (s == NULL) {
        out->failed = 1;
        return;
    }

    n = strlen(s);
    need = strlen(name) + n + sizeof("event: \ndata: \n\n");

    d = realloc(out->data, out->len + need);
    if (d == NULL) {
        out->failed = 1;
        free(s);
        return;
    }

    out->data = d;
    d += out->len;
    d = stpcpy(d, "event: ");
    d = stpcpy(d, name);
    d = stpcpy(d, "\ndata: ");
    d = stpcpy(d, s);
    d = stpcpy(d, "\n\n");
    out->len = d - out->data;

    free(s);
}


/* the message's closing events, or the Response's opening when no
 * message was opened */
static void
fg_oai_rsp_calls_head(fg_oai_rsp_out_t *out, const fg_oai_resp_t *r,
    json_t *root)
{
    json_t  *msg, *part, *id, *open;

    msg = json_array_get(json_object_get(root, "output"), 0);

    if (r->started && !r->msg_open) {
        return;
    }

    if (!r->started) {
        open = json_deep_copy(root);

        if (open == NULL
            || json_object_set_new(open, "status",
                                   json_string("in_progress")) != 0
            || json_object_set_new(open, "output", json_array()) != 0
            || json_object_set_new(open, "usage", json_null()) != 0)
        {
            out->failed = 1;
            json_decref(open);
            return;
        }

        fg_oai_rsp_calls_event(out, "response.created",
                               json_pack("{s:O}", "response", open));
        fg_oai_rsp_calls_event(out, "response.in_progress",
                               json_pack("{s:o}", "response", open));
        return;
    }

    id = json_object_get(msg, "id");
    part = json_array_get(json_object_get(msg, "content"), 0);

    fg_oai_rsp_calls_event(out, "response.output_text.done",
                           json_pack("{s:O,s:i,s:i,s:O,s:[]}", "item_id", id,
                                     "output_index", 0, "content_index", 0,
                                     "text", json_object_get(part, "text"),
                                     "logprobs"));
    fg_oai_rsp_calls_event(out, "response.content_part.done",
                           json_pack("{s:O,s:i,s:i,s:O}", "item_id", id,
                                     "output_index", 0, "content_index", 0,
                                     "part", part));
    fg_oai_rsp_calls_event(out, "response.output_item.done",
                           json_pack("{s:i,s:O}", "output_index", 0, "item",
                                     msg));
}


/* call k's four events, as output item i */
static void
fg_oai_rsp_calls_one(fg_oai_rsp_out_t *out, const fg_tool_parsed_t *p,
    size_t k, char (*ids)[FG_OAI_CALL_ID_LEN], json_int_t i, json_t *item)
{
    json_t  *id;

    id = json_object_get(item, "id");

    fg_oai_rsp_calls_event(out, "response.output_item.added",
                           json_pack("{s:I,s:o}", "output_index", i, "item",
                                     fg_oai_rsp_call_item(p, k, ids, 0)));
    fg_oai_rsp_calls_event(out, "response.function_call_arguments.delta",
                           json_pack("{s:O,s:I,s:O}", "item_id", id,
                                     "output_index", i, "delta",
                                     json_object_get(item, "arguments")));
    fg_oai_rsp_calls_event(out, "response.function_call_arguments.done",
                           json_pack("{s:O,s:O,s:I,s:O}", "item_id", id,
                                     "name", json_object_get(item, "name"),
                                     "output_index", i, "arguments",
                                     json_object_get(item, "arguments")));
    fg_oai_rsp_calls_event(out, "response.output_item.done",
                           json_pack("{s:I,s:O}", "output_index", i, "item",
                                     item));
}


char *
fg_oai_rsp_sse_tools(fg_oai_resp_t *r, const char *content,
    size_t content_len, const fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN], const fg_oai_usage_t *usage,
    size_t *len)
{
    size_t             k, first;
    json_t            *root, *output;
    fg_oai_rsp_out_t   out;

    root = fg_oai_rsp_calls_object(r, content, content_len, r->msg_open,
                                   p, ids, usage);
    if (root == NULL) {
        return NULL;
    }

    memset(&out, 0, sizeof(fg_oai_rsp_out_t));
    out.seq = r->seq;

    fg_oai_rsp_calls_head(&out, r, root);

    output = json_object_get(root, "output");
    first = r->msg_open ? 1 : 0;

    for (k = 0; k < p->n_calls; k++) {
        fg_oai_rsp_calls_one(&out, p, k, ids, (json_int_t) (first + k),
                             json_array_get(output, first + k));
    }

    fg_oai_rsp_calls_event(&out, "response.completed",
                           json_pack("{s:o}", "response", root));

    if (out.failed) {
        free(out.data);
        return NULL;
    }

    r->seq = out.seq;
    r->started = 1;
    *len = out.len;

    return out.data;
}
