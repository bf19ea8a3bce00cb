
/*
 * fairgate: tool calls in OpenAI's response shapes.  A body or a chunk
 * is written by fg_openai_response.c's writers first, so that it is
 * the same response as any other (id, model, usage, fingerprint), then
 * read back with jansson and given its calls: once a response, so a
 * tree costs nothing that matters here.
 *
 *   body    "message": {"role": "assistant", "content": null or the text
 *           before the calls, "refusal": null, "tool_calls": [{"id",
 *           "type": "function", "function": {"name", "arguments"}}]},
 *           "finish_reason": "tool_calls"
 *   stream  a call's first delta: {"tool_calls": [{"index", "id", "type",
 *           "function": {"name", "arguments": ""}}]}, then its arguments:
 *           {"tool_calls": [{"index", "function": {"arguments"}}]}
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_openai_tools.h"


void
fg_oai_tool_call_id(char *buf, size_t size, fg_tool_format_e fmt,
    uint64_t r0, uint64_t r1)
{
    char      digits[25];
    size_t    i, n;
    uint64_t  r;

    static const char  b62[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

    /* Mistral's template refuses ids but of 9 letters and digits */
    n = (fmt == FG_TOOL_FMT_MISTRAL) ? 9 : 24;

    for (i = 0, r = r0; i < n && i < 10; i++, r /= 62) {
        digits[i] = b62[r % 62];
    }

    for (r = r1; i < n; i++, r /= 62) {
        digits[i] = b62[r % 62];
    }

    digits[n] = '\0';

    snprintf(buf, size, "%s%s", fmt == FG_TOOL_FMT_MISTRAL ? "" : "call_",
             digits);
}


/* [{"id", "type": "function", "function": {"name", "arguments"}}] */
static json_t *
fg_oai_tool_calls_json(const fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN])
{
    size_t   i;
    json_t  *arr, *c;

    arr = json_array();

    for (i = 0; arr && i < p->n_calls; i++) {
        c = json_pack("{s:s,s:s,s:{s:s,s:s%}}", "id", ids[i],
                      "type", "function", "function",
                      "name", p->calls[i].name,
                      "arguments", p->calls[i].arguments,
                      p->calls[i].arguments_len);

        if (c == NULL || json_array_append_new(arr, c) != 0) {
            json_decref(arr);
            return NULL;
        }
    }

    return arr;
}


/* text, n bytes (NUL-terminated for a stream), as jansson reads it; a
 * stream's last "data: " event */
static json_t *
fg_oai_tool_load(const char *text, size_t n, int sse)
{
    const char  *p, *last;

    if (sse) {
        last = NULL;

        for (p = text; p && p < text + n; p = strstr(p + 1, "data: ")) {
            if (strncmp(p, "data: ", 6) == 0) {
                last = p;
            }
        }

        if (last == NULL) {
            return NULL;
        }

        n -= last + 6 - text;
        text = last + 6;
    }

    return json_loadb(text, n, JSON_DISABLE_EOF_CHECK, NULL);
}


/* the tree written out: malloc'd, *len bytes, with its line's end */
static char *
fg_oai_tool_dump(json_t *root, const char *head, const char *tail,
    size_t *len)
{
    char    *s, *out;
    size_t   n, h, t;

    s = json_dumps(root, JSON_COMPACT|JSON_PRESERVE_ORDER);
    json_decref(root);

    if (s == NULL) {
        return NULL;
    }

    n = strlen(s);
    h = strlen(head);
    t = strlen(tail);

    out = malloc(h + n + t + 1);

    if (out != NULL) {
        memcpy(out, head, h);
        memcpy(out + h, s, n);
        memcpy(out + h + n, tail, t + 1);
        *len = h + n + t;
    }

    free(s);

    return out;
}


/* a body's choice given its calls: content null when there is none */
static int
fg_oai_tools_into(json_t *choice, size_t content_len,
    const fg_tool_parsed_t *p, char (*ids)[FG_OAI_CALL_ID_LEN])
{
    json_t  *msg, *calls;

    msg = json_object_get(choice, "message");
    calls = fg_oai_tool_calls_json(p, ids);

    if (msg == NULL || calls == NULL
        || (content_len == 0
            && json_object_set_new(msg, "content", json_null()) != 0)
        || json_object_set_new(msg, "tool_calls", calls) != 0)
    {
        return -1;
    }

    return 0;
}


char *
fg_oai_resp_tools_json(const fg_oai_resp_t *r, const char *content,
    size_t content_len, const fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN], const fg_oai_usage_t *usage,
    size_t *len)
{
    fg_oai_choice_t  c;

    c.text = content;
    c.len = content_len;
    c.finish = FG_OAI_FINISH_TOOL_CALLS;
    c.lp = NULL;
    c.lp_len = 0;

    return fg_oai_resp_choices_tools(r, &c, 1, &p, &ids, usage, len);
}


char *
fg_oai_resp_choices_tools(const fg_oai_resp_t *r, const fg_oai_choice_t *c,
    size_t n, const fg_tool_parsed_t *const *p,
    char (*const *ids)[FG_OAI_CALL_ID_LEN], const fg_oai_usage_t *usage,
    size_t *len)
{
    char    *buf;
    size_t   i, size, text, w;
    json_t  *root, *choices;

    for (text = 0, i = 0; i < n; i++) {
        text += c[i].len + c[i].lp_len;
    }

    size = fg_oai_resp_bound(r, text) + 128 * n;

    buf = malloc(size);
    if (buf == NULL) {
        return NULL;
    }

    w = fg_oai_resp_choices(r, c, n, usage, buf, size);

    root = (w <= size) ? fg_oai_tool_load(buf, w, 0) : NULL;
    free(buf);

    choices = json_object_get(root, "choices");

    for (i = 0; i < n; i++) {
        if (p[i] && p[i]->n_calls
            && fg_oai_tools_into(json_array_get(choices, i), c[i].len, p[i],
                                 ids[i])
               != 0)
        {
            json_decref(root);
            return NULL;
        }
    }

    return root ? fg_oai_tool_dump(root, "", "\n", len) : NULL;
}


/* one chunk of a stream whose delta is {"tool_calls": [call]} */
static char *
fg_oai_sse_tool_chunk(fg_oai_resp_t *r, json_t *call, size_t *len)
{
    char    *buf;
    size_t   size, n;
    json_t  *root, *choice;

    size = fg_oai_resp_bound(r, 1);

    buf = malloc(size + 1);
    if (buf == NULL) {
        json_decref(call);
        return NULL;
    }

    /* the shape of a content chunk, its delta replaced */
    n = fg_oai_sse_delta(r, "x", 1, buf, size);
    buf[n <= size ? n : size] = '\0';

    root = (n <= size) ? fg_oai_tool_load(buf, n, 1) : NULL;
    free(buf);

    choice = json_array_get(json_object_get(root, "choices"), 0);

    if (choice == NULL || call == NULL
        || json_object_set_new(choice, "delta",
                               json_pack("{s:[o]}", "tool_calls", call))
           != 0)
    {
        json_decref(root);
        return NULL;
    }

    return fg_oai_tool_dump(root, "data: ", "\n\n", len);
}


char *
fg_oai_sse_tool_calls(fg_oai_resp_t *r, const fg_tool_parsed_t *p,
    char (*ids)[FG_OAI_CALL_ID_LEN], size_t *len)
{
    char    *out, *c, *o;
    size_t   i, k, n;
    json_t  *call;

    out = NULL;
    n = 0;

    for (i = 0; i < 2 * p->n_calls; i++) {
        k = i / 2;

        if (i % 2 == 0) {
            call = json_pack("{s:I,s:s,s:s,s:{s:s,s:s}}", "index",
                             (json_int_t) k, "id", ids[k], "type",
                             "function", "function", "name",
                             p->calls[k].name, "arguments", "");
        } else {
            call = json_pack("{s:I,s:{s:s%}}", "index", (json_int_t) k,
                             "function", "arguments", p->calls[k].arguments,
                             p->calls[k].arguments_len);
        }

        c = fg_oai_sse_tool_chunk(r, call, len);
        o = c ? realloc(out, n + *len + 1) : NULL;

        if (o == NULL) {
            free(c);
            free(out);
            return NULL;
        }

        memcpy(o + n, c, *len + 1);
        n += *len;
        out = o;
        free(c);
    }

    *len = n;

    return out;
}
