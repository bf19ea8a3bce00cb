
/*
 * fairgate: tool calling in a /v1/responses request, as the chat's
 * (fg_openai_tools.c) underneath.
 *
 * The Responses API writes a function flat, {"type": "function", "name",
 * "description", "parameters", "strict"}, where the chat nests it under
 * "function": each is checked, then given to the chat's parser nested,
 * so that the chat template gets the tools as it does for a chat.  A
 * tool of another type (web_search, file_search, computer_use ...) is
 * refused, named.  A named tool_choice is {"type": "function", "name"}.
 *
 * The input's function_call items become an assistant message's
 * tool_calls (the assistant message just before them, when there is
 * one, carries them), and each function_call_output a tool message.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_openai_request_int.h"


/* tools[i], flat, checked and nested as the chat writes it */
static json_t *
fg_oai_resp_tool(fg_oai_parse_t *p, size_t i, json_t *t)
{
    char         param[96];
    json_t      *type, *fn, *x;
    const char  *k, *s;

    snprintf(param, sizeof(param), "tools[%zu]", i);

    if (!json_is_object(t)) {
        fg_oai_bad_type(p, param, "an object", t);
        return NULL;
    }

    type = json_object_get(t, "type");
    s = json_is_string(type) ? json_string_value(type) : "";

    if (strcmp(s, "function") != 0) {
        snprintf(param, sizeof(param), "tools[%zu].type", i);
        fg_oai_fail(p, "unsupported_value", param,
                    "Invalid 'tools[%zu]': tools of type '%.64s' are not "
                    "supported: fairgate calls functions only (type "
                    "'function').", i, s);
        return NULL;
    }

    fn = json_object();
    if (fn == NULL) {
        fg_oai_nomem(p);
        return NULL;
    }

    json_object_foreach(t, k, x) {
        if (strcmp(k, "type") == 0) {
            continue;
        }

        if (strcmp(k, "name") != 0 && strcmp(k, "description") != 0
            && strcmp(k, "parameters") != 0 && strcmp(k, "strict") != 0)
        {
            snprintf(param, sizeof(param), "tools[%zu].%.64s", i, k);
            fg_oai_fail(p, "unknown_parameter", param,
                        "Unrecognized request argument supplied: %s",
                        param);
            json_decref(fn);
            return NULL;
        }

        /* the Responses API writes an absent description as null */
        if (json_is_null(x) && strcmp(k, "description") == 0) {
            continue;
        }

        json_object_set(fn, k, x);
    }

    return json_pack("{s:s,s:o}", "type", "function", "function", fn);
}


/* the chat's param ("tools[0].function.name"), said as the client wrote
 * it, flat */
static void
fg_oai_resp_param_flat(fg_oai_parse_t *p)
{
    char  *s;

    s = strstr(p->err->param, ".function");

    if (s != NULL) {
        memmove(s, s + 9, strlen(s + 9) + 1);
    }
}


int
fg_oai_resp_tools(fg_oai_parse_t *p, fg_oai_responses_t *e, const char *key,
    json_t *v)
{
    int      rc;
    char    *text;
    size_t   i;
    json_t  *t, *nested, *fn;

    if (json_array_size(v) == 0) {
        return 0;
    }

    nested = json_array();
    if (nested == NULL) {
        return fg_oai_nomem(p);
    }

    json_array_foreach(v, i, t) {
        fn = fg_oai_resp_tool(p, i, t);

        if (fn == NULL) {
            json_decref(nested);
            return -1;
        }

        if (json_array_append_new(nested, fn) != 0) {
            json_decref(nested);
            return fg_oai_nomem(p);
        }
    }

    rc = fg_oai_field_tools(p, key, nested, NULL);
    json_decref(nested);

    if (rc != 0) {
        fg_oai_resp_param_flat(p);
        return rc;
    }

    /* said back in the Response as the client wrote them */
    text = json_dumps(v, JSON_COMPACT|JSON_PRESERVE_ORDER);
    if (text == NULL) {
        return fg_oai_nomem(p);
    }

    rc = fg_oai_copy(p, &e->tools, text, strlen(text));
    free(text);

    return rc;
}


/* "auto", "none", "required" or {"type": "function", "name": ..} */
int
fg_oai_resp_tool_choice(fg_oai_parse_t *p, fg_oai_responses_t *e,
    const char *key, json_t *v)
{
    int          rc;
    json_t      *name, *type, *chat;
    const char  *t;

    if (!json_is_object(v)) {
        rc = fg_oai_field_tools_choice(p, key, v, NULL);
        e->tool_choice_none = (p->req->tool_choice == FG_OAI_TOOLS_NONE);

        /* "auto" without tools calls none, as "none" does */
        if (p->req->tool_choice == FG_OAI_TOOLS_AUTO) {
            p->tool_choice = NULL;
        }

        return rc;
    }

    name = json_object_get(v, "name");
    type = json_object_get(v, "type");

    if (!json_is_string(type)) {
        return fg_oai_fail(p, "missing_required_parameter",
                           "tool_choice.type", "Missing required "
                           "parameter: 'tool_choice.type' (a string).");
    }

    t = json_string_value(type);

    if (strcmp(t, "function") != 0) {
        return fg_oai_fail(p, "unsupported_value", "tool_choice.type",
                           "Invalid 'tool_choice': '%.64s' is not "
                           "supported: fairgate calls functions only.", t);
    }

    if (name == NULL) {
        return fg_oai_fail(p, "missing_required_parameter",
                           "tool_choice.name", "Missing required "
                           "parameter: 'tool_choice.name'.");
    }

    chat = json_pack("{s:s,s:{s:O}}", "type", "function", "function",
                     "name", name);
    if (chat == NULL) {
        return fg_oai_nomem(p);
    }

    rc = fg_oai_field_tools_choice(p, key, chat, NULL);

    /* the parser keeps the choice to check it once the tools are read */
    p->tool_choice = v;
    json_decref(chat);

    if (rc != 0) {
        fg_oai_resp_param_flat(p);
    }

    return rc;
}


/* item i's string field, or a 400 naming it */
static int
fg_oai_input_string(fg_oai_parse_t *p, size_t i, json_t *item,
    const char *k, fg_oai_str_t *out)
{
    char     param[96];
    json_t  *v;

    v = json_object_get(item, k);
    snprintf(param, sizeof(param), "input[%zu].%s", i, k);

    if (v == NULL) {
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    if (!json_is_string(v)) {
        return fg_oai_bad_type(p, param, "a string", v);
    }

    if (json_string_length(v) > p->lim->max_text - p->text) {
        return fg_oai_fail(p, "string_above_max_length", param,
                           "Invalid '%s': the input's text passes the %zu "
                           "bytes allowed.", param, p->lim->max_text);
    }

    p->text += json_string_length(v);

    return fg_oai_copy(p, out, json_string_value(v), json_string_length(v));
}


/* item i's output given as text parts (input_text): joined */
static int
fg_oai_input_output_parts(fg_oai_parse_t *p, size_t i, json_t *v,
    fg_oai_str_t *out)
{
    char         param[96], *d;
    size_t       j, len;
    json_t      *part, *text, *type;
    const char  *t;

    len = 0;

    json_array_foreach(v, j, part) {
        type = json_object_get(part, "type");
        text = json_object_get(part, "text");
        t = json_is_string(type) ? json_string_value(type) : "";

        if ((strcmp(t, "input_text") != 0 && strcmp(t, "output_text") != 0)
            || !json_is_string(text))
        {
            snprintf(param, sizeof(param), "input[%zu].output[%zu]", i, j);
            return fg_oai_fail(p, "unsupported_value", param,
                               "Invalid '%s': an output's parts are text "
                               "only (input_text).", param);
        }

        len += json_string_length(text);

        if (len > p->lim->max_text - p->text) {
            snprintf(param, sizeof(param), "input[%zu].output", i);
            return fg_oai_fail(p, "string_above_max_length", param,
                               "Invalid '%s': the input's text passes the "
                               "%zu bytes allowed.", param,
                               p->lim->max_text);
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
        memcpy(d, json_string_value(text), json_string_length(text));
        d += json_string_length(text);
    }

    *d = '\0';

    return 0;
}


int
fg_oai_input_is_call(json_t *item)
{
    json_t      *type;
    const char  *s;

    type = json_object_get(item, "type");
    s = json_is_string(type) ? json_string_value(type) : "";

    return strcmp(s, "function_call") == 0
           || strcmp(s, "function_call_output") == 0;
}


/* the function_call items from i on, in a row */
static size_t
fg_oai_input_run(json_t *in, size_t i)
{
    size_t       n;
    json_t      *type;
    const char  *s;

    for (n = 0; i + n < json_array_size(in); n++) {
        type = json_object_get(json_array_get(in, i + n), "type");
        s = json_is_string(type) ? json_string_value(type) : "";

        if (strcmp(s, "function_call") != 0) {
            break;
        }
    }

    return n;
}


/* the assistant message that carries the call of item i: the one before
 * when it is an assistant's (its text, or the calls just before), a new
 * one otherwise, with room for the calls in a row from i */
static fg_oai_message_t *
fg_oai_input_caller(fg_oai_parse_t *p, json_t *in, size_t i,
    fg_oai_message_t *msgs, size_t *k, size_t first)
{
    size_t             n;
    json_t            *prev, *type;
    fg_oai_message_t  *m;

    m = (*k > first) ? &msgs[*k - 1] : NULL;
    prev = (i > 0) ? json_array_get(in, i - 1) : NULL;
    type = json_object_get(prev, "type");

    if (m != NULL && m->role == FG_OAI_ASSISTANT && m->tool_calls != NULL
        && json_is_string(type)
        && strcmp(json_string_value(type), "function_call") == 0)
    {
        return m;
    }

    if (m == NULL || m->role != FG_OAI_ASSISTANT || m->tool_calls != NULL
        || fg_oai_input_is_call(prev))
    {
        m = &msgs[(*k)++];
        memset(m, 0, sizeof(fg_oai_message_t));
        m->role = FG_OAI_ASSISTANT;
        m->content.data = "";
        m->null_content = 1;
    }

    n = fg_oai_input_run(in, i);

    m->tool_calls = fg_oai_alloc(p->req, n * sizeof(fg_oai_tool_call_t));
    if (m->tool_calls == NULL) {
        (void) fg_oai_nomem(p);
        return NULL;
    }

    return m;
}


/*
 * Item i, a function_call or a function_call_output, as message *k (or a
 * call added to message *k - 1).
 */
int
fg_oai_input_call(fg_oai_parse_t *p, size_t i, json_t *item,
    fg_oai_message_t *msgs, size_t *k, size_t first)
{
    json_t              *type;
    fg_oai_message_t    *m;
    fg_oai_tool_call_t  *c;

    type = json_object_get(item, "type");

    if (strcmp(json_string_value(type), "function_call_output") == 0) {
        m = &msgs[(*k)++];
        memset(m, 0, sizeof(fg_oai_message_t));
        m->role = FG_OAI_TOOL;

        if (fg_oai_input_string(p, i, item, "call_id", &m->tool_call_id)
            != 0)
        {
            return -1;
        }

        if (json_is_array(json_object_get(item, "output"))) {
            return fg_oai_input_output_parts(p, i,
                                             json_object_get(item, "output"),
                                             &m->content);
        }

        return fg_oai_input_string(p, i, item, "output", &m->content);
    }

    m = fg_oai_input_caller(p, p->input, i, msgs, k, first);
    if (m == NULL) {
        return -1;
    }

    c = &m->tool_calls[m->n_tool_calls++];

    if (fg_oai_input_string(p, i, item, "call_id", &c->id) != 0
        || fg_oai_input_string(p, i, item, "name", &c->name) != 0)
    {
        return -1;
    }

    return fg_oai_input_string(p, i, item, "arguments", &c->arguments);
}


/* item i's call_id, NULL when it has none (its own check says so) */
static const char *
fg_oai_input_call_id(json_t *in, size_t i, const char *type)
{
    json_t  *item, *t, *id;

    item = json_array_get(in, i);
    t = json_object_get(item, "type");
    id = json_object_get(item, "call_id");

    if (!json_is_string(t) || strcmp(json_string_value(t), type) != 0
        || !json_is_string(id))
    {
        return NULL;
    }

    return json_string_value(id);
}


/*
 * Every function_call_output answers a function_call before it, and
 * every function_call is answered after it, said as OpenAI says it
 */
static int
fg_oai_input_answers(fg_oai_parse_t *p)
{
    size_t       i, j, n;
    json_t      *in;
    const char  *id, *other;

    in = p->input;
    n = json_is_array(in) ? json_array_size(in) : 0;

    for (i = 0; i < n; i++) {
        id = fg_oai_input_call_id(in, i, "function_call_output");

        for (j = 0; id != NULL && j < i; j++) {
            other = fg_oai_input_call_id(in, j, "function_call");

            if (other != NULL && strcmp(id, other) == 0) {
                break;
            }
        }

        if (id != NULL && j == i) {
            return fg_oai_fail(p, "invalid_value", "input",
                               "No tool call found for function call "
                               "output with call_id %.64s.", id);
        }

        id = fg_oai_input_call_id(in, i, "function_call");

        for (j = i + 1; id != NULL && j < n; j++) {
            other = fg_oai_input_call_id(in, j, "function_call_output");

            if (other != NULL && strcmp(id, other) == 0) {
                break;
            }
        }

        if (id != NULL && j == n) {
            return fg_oai_fail(p, "invalid_value", "input",
                               "No tool output found for function call "
                               "%.64s.", id);
        }
    }

    return 0;
}


/*
 * Once the input is messages: its calls answered; then the chat's checks
 * (the choice names a tool, tool messages right after their calls), whose
 * "messages" is the input here.
 */
int
fg_oai_input_calls_check(fg_oai_parse_t *p)
{
    if (fg_oai_input_answers(p) != 0) {
        return -1;
    }

    if (fg_oai_tools_check(p) != 0) {
        if (strcmp(p->err->param, "messages") == 0) {
            strcpy(p->err->param, "input");
        }

        return -1;
    }

    return 0;
}
