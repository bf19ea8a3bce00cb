
/*
 * fairgate: tool calling in a chat request, checked as OpenAI checks it:
 * "tools" (functions: a name, a description, the JSON schema of their
 * parameters, strict), "tool_choice" (auto, none, required, or a
 * function named), "parallel_tool_calls"; an assistant message's
 * "tool_calls" and a tool message's "tool_call_id"; and, once the whole
 * body is read, that the choice names a tool and that every tool message
 * answers a call of the assistant message before it.  The legacy
 * "functions" and "function_call" are refused, pointing to "tools".
 *
 * The tools are kept as the client wrote them (compact JSON text): the
 * model's chat template gets them as Hugging Face's apply_chat_template
 * passes them, a list of {"type": "function", "function": {...}}.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_openai_request_int.h"
#include "fg_openai_tools.h"


/* OpenAI's limits: 128 tools, names of 64 characters */
#define FG_OAI_MAX_TOOLS      128
#define FG_OAI_MAX_CALLS      128
#define FG_OAI_TOOL_NAME_MAX  64


/* a function's name: [A-Za-z0-9_-]{1,64}, as OpenAI's pattern says */
static int
fg_oai_tool_name(fg_oai_parse_t *p, const char *param, const json_t *v)
{
    size_t       i, n;
    const char  *s;

    if (!json_is_string(v)) {
        return fg_oai_bad_type(p, param, "a string", v);
    }

    s = json_string_value(v);
    n = json_string_length(v);

    for (i = 0; i < n; i++) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')
              || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
        {
            break;
        }
    }

    if (n == 0 || n > FG_OAI_TOOL_NAME_MAX || i < n) {
        return fg_oai_fail(p, "invalid_value", param,
                           "Invalid '%s': string does not match pattern. "
                           "Expected a string of 1 to %d characters that "
                           "matches the pattern '^[a-zA-Z0-9_-]+$'.", param,
                           FG_OAI_TOOL_NAME_MAX);
    }

    return 0;
}


/* tools[i].function: name, description, parameters, strict */
static int
fg_oai_tool_function(fg_oai_parse_t *p, size_t i, json_t *fn)
{
    int          b;
    char         param[96];
    json_t      *x;
    const char  *k;

    snprintf(param, sizeof(param), "tools[%zu].function.name", i);

    x = json_object_get(fn, "name");

    if (x == NULL) {
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    if (fg_oai_tool_name(p, param, x) != 0) {
        return -1;
    }

    json_object_foreach(fn, k, x) {
        snprintf(param, sizeof(param), "tools[%zu].function.%s", i, k);

        if (strcmp(k, "name") == 0) {
            continue;
        }

        if (strcmp(k, "description") == 0) {
            if (!json_is_string(x)) {
                return fg_oai_bad_type(p, param, "a string", x);
            }

        } else if (strcmp(k, "parameters") == 0) {
            if (!json_is_object(x)) {
                return fg_oai_bad_type(p, param, "an object", x);
            }

        } else if (strcmp(k, "strict") == 0) {
            if (!json_is_null(x) && fg_oai_bool(p, param, x, &b) != 0) {
                return -1;
            }

        } else {
            return fg_oai_fail(p, "unknown_parameter", param,
                               "Unrecognized request argument supplied: "
                               "%s", param);
        }
    }

    return 0;
}


/* tools[i]: {"type": "function", "function": {...}} */
static int
fg_oai_tool(fg_oai_parse_t *p, size_t i, json_t *t)
{
    char         param[96];
    json_t      *type, *fn, *x;
    const char  *k;

    snprintf(param, sizeof(param), "tools[%zu]", i);

    if (!json_is_object(t)) {
        return fg_oai_bad_type(p, param, "an object", t);
    }

    json_object_foreach(t, k, x) {
        if (strcmp(k, "type") != 0 && strcmp(k, "function") != 0) {
            snprintf(param, sizeof(param), "tools[%zu].%s", i, k);
            return fg_oai_fail(p, "unknown_parameter", param,
                               "Unrecognized request argument supplied: "
                               "%s", param);
        }
    }

    snprintf(param, sizeof(param), "tools[%zu].type", i);

    type = json_object_get(t, "type");

    if (type == NULL) {
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    if (!json_is_string(type) || strcmp(json_string_value(type), "function"))
    {
        return fg_oai_fail(p, "unsupported_value", param,
                           "Invalid '%s': only tools of type 'function' "
                           "are supported.", param);
    }

    snprintf(param, sizeof(param), "tools[%zu].function", i);

    fn = json_object_get(t, "function");

    if (fn == NULL) {
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    if (!json_is_object(fn)) {
        return fg_oai_bad_type(p, param, "an object", fn);
    }

    return fg_oai_tool_function(p, i, fn);
}


int
fg_oai_field_tools(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    char              *text;
    size_t             i, j, n, len;
    json_t            *t, *name;
    fg_oai_str_t      *names;
    fg_oai_request_t  *r;

    (void) why;

    r = p->req;
    n = json_array_size(v);

    names = fg_oai_array(p, key, n, FG_OAI_MAX_TOOLS, sizeof(fg_oai_str_t));
    if (names == NULL) {
        return -1;
    }

    json_array_foreach(v, i, t) {
        if (fg_oai_tool(p, i, t) != 0) {
            return -1;
        }

        name = json_object_get(json_object_get(t, "function"), "name");

        for (j = 0; j < i; j++) {
            if (strcmp(names[j].data, json_string_value(name)) == 0) {
                return fg_oai_fail(p, "invalid_value", key,
                                   "Invalid 'tools': the function name "
                                   "'%s' is given twice.", names[j].data);
            }
        }

        if (fg_oai_copy(p, &names[i], json_string_value(name),
                        json_string_length(name))
            != 0)
        {
            return -1;
        }
    }

    text = json_dumps(v, JSON_COMPACT|JSON_PRESERVE_ORDER);
    if (text == NULL) {
        return fg_oai_nomem(p);
    }

    /* the tools go into the prompt: they count as the messages' text */
    len = strlen(text);

    if (len > p->lim->max_text - p->text) {
        free(text);
        return fg_oai_fail(p, "string_above_max_length", key,
                           "Invalid 'tools': with the messages, they pass "
                           "the %zu bytes of text allowed.",
                           p->lim->max_text);
    }

    p->text += len;

    i = fg_oai_copy(p, &r->tools, text, len);
    free(text);

    r->tool_names = names;
    r->n_tools = n;

    return i ? -1 : 0;
}


/* "auto", "none", "required" or {"type":"function","function":{name}} */
int
fg_oai_field_tools_choice(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    json_t            *type, *fn, *name;
    const char        *s;
    fg_oai_request_t  *r;

    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    r = p->req;
    p->tool_choice = v;

    if (json_is_string(v)) {
        s = json_string_value(v);

        if (strcmp(s, "auto") == 0) {
            r->tool_choice = FG_OAI_TOOLS_AUTO;
        } else if (strcmp(s, "none") == 0) {
            r->tool_choice = FG_OAI_TOOLS_NONE;
        } else if (strcmp(s, "required") == 0) {
            r->tool_choice = FG_OAI_TOOLS_REQUIRED;
        } else {
            return fg_oai_fail(p, "invalid_value", key,
                               "Invalid value: '%.64s'. Supported values "
                               "are: 'none', 'auto' and 'required'.", s);
        }

        return 0;
    }

    if (!json_is_object(v)) {
        return fg_oai_bad_type(p, key, "a string or an object", v);
    }

    type = json_object_get(v, "type");

    if (!json_is_string(type)
        || strcmp(json_string_value(type), "function") != 0)
    {
        return fg_oai_fail(p, "invalid_value", "tool_choice.type",
                           "Invalid 'tool_choice.type': expected "
                           "'function'.");
    }

    fn = json_object_get(v, "function");
    name = json_is_object(fn) ? json_object_get(fn, "name") : NULL;

    if (name == NULL) {
        return fg_oai_fail(p, "missing_required_parameter",
                           "tool_choice.function.name", "Missing required "
                           "parameter: 'tool_choice.function.name'.");
    }

    if (fg_oai_tool_name(p, "tool_choice.function.name", name) != 0) {
        return -1;
    }

    r->tool_choice = FG_OAI_TOOLS_NAMED;

    return fg_oai_copy(p, &r->tool_choice_name, json_string_value(name),
                       json_string_length(name));
}


int
fg_oai_field_parallel_tool_calls(fg_oai_parse_t *p, const char *key,
    json_t *v, const char *why)
{
    int  b;

    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    if (fg_oai_bool(p, key, v, &b) != 0) {
        return -1;
    }

    p->req->parallel_tool_calls = b ? 1 : 0;

    return 0;
}


int
fg_oai_field_functions(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    if (json_is_null(v)) {
        return 0;
    }

    return fg_oai_fail(p, "unsupported_parameter", key,
                       "Unsupported parameter: '%s': the legacy function "
                       "calling is not supported; use 'tools' and "
                       "'tool_choice'.", key);
}


/* message i's tool_calls[j]: {id, type: "function", function: {name,
 * arguments}} */
static int
fg_oai_tool_call(fg_oai_parse_t *p, size_t i, size_t j, json_t *c,
    fg_oai_tool_call_t *out)
{
    char     param[96];
    json_t  *id, *type, *fn, *name, *args;

    snprintf(param, sizeof(param), "messages[%zu].tool_calls[%zu]", i, j);

    if (!json_is_object(c)) {
        return fg_oai_bad_type(p, param, "an object", c);
    }

    id = json_object_get(c, "id");
    type = json_object_get(c, "type");
    fn = json_object_get(c, "function");
    name = json_is_object(fn) ? json_object_get(fn, "name") : NULL;
    args = json_is_object(fn) ? json_object_get(fn, "arguments") : NULL;

    if (!json_is_string(id) || !json_is_string(type) || !json_is_string(name)
        || !json_is_string(args))
    {
        snprintf(param, sizeof(param), "messages[%zu].tool_calls[%zu].%s",
                 i, j, !json_is_string(id) ? "id"
                       : !json_is_string(type) ? "type"
                       : !json_is_object(fn) ? "function"
                       : !json_is_string(name) ? "function.name"
                       : "function.arguments");

        return fg_oai_fail(p, "invalid_type", param,
                           "Invalid type for '%s': expected %s.", param,
                           json_is_object(fn) || !strstr(param, "function")
                           ? "a string" : "an object");
    }

    if (strcmp(json_string_value(type), "function") != 0) {
        snprintf(param, sizeof(param),
                 "messages[%zu].tool_calls[%zu].type", i, j);
        return fg_oai_fail(p, "invalid_value", param,
                           "Invalid value for '%s': expected 'function'.",
                           param);
    }

    if (json_string_length(args) > p->lim->max_text - p->text) {
        return fg_oai_fail(p, "string_above_max_length", param,
                           "Invalid '%s': the messages' text passes the "
                           "%zu bytes allowed.", param, p->lim->max_text);
    }

    p->text += json_string_length(args);

    if (fg_oai_copy(p, &out->id, json_string_value(id),
                    json_string_length(id)) != 0
        || fg_oai_copy(p, &out->name, json_string_value(name),
                       json_string_length(name)) != 0)
    {
        return -1;
    }

    return fg_oai_copy(p, &out->arguments, json_string_value(args),
                       json_string_length(args));
}


/* message i's tool_calls (an assistant's) and tool_call_id (a tool's) */
int
fg_oai_message_tools(fg_oai_parse_t *p, size_t i, json_t *m,
    fg_oai_message_t *out)
{
    char                 param[96];
    size_t               j, n;
    json_t              *calls, *id, *c;
    fg_oai_tool_call_t  *a;

    /* the request's memory is not zeroed */
    out->tool_calls = NULL;
    out->n_tool_calls = 0;
    out->tool_call_id.data = NULL;
    out->tool_call_id.len = 0;
    out->null_content = 0;

    calls = json_object_get(m, "tool_calls");
    id = json_object_get(m, "tool_call_id");

    if (calls && !json_is_null(calls)
        && !(json_is_array(calls) && json_array_size(calls) == 0))
    {
        snprintf(param, sizeof(param), "messages[%zu].tool_calls", i);

        if (out->role != FG_OAI_ASSISTANT) {
            return fg_oai_fail(p, "invalid_value", param,
                               "Invalid parameter: only messages with role "
                               "'assistant' can have 'tool_calls'.");
        }

        if (!json_is_array(calls)) {
            return fg_oai_bad_type(p, param, "an array", calls);
        }

        n = json_array_size(calls);

        a = fg_oai_array(p, param, n, FG_OAI_MAX_CALLS,
                         sizeof(fg_oai_tool_call_t));
        if (a == NULL) {
            return -1;
        }

        json_array_foreach(calls, j, c) {
            if (fg_oai_tool_call(p, i, j, c, &a[j]) != 0) {
                return -1;
            }
        }

        out->tool_calls = a;
        out->n_tool_calls = n;
    }

    snprintf(param, sizeof(param), "messages[%zu].tool_call_id", i);

    if (out->role != FG_OAI_TOOL) {
        if (id && !json_is_null(id)) {
            return fg_oai_fail(p, "invalid_value", param,
                               "Invalid parameter: only messages with role "
                               "'tool' have a 'tool_call_id'.");
        }

        return 0;
    }

    if (id == NULL) {
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    if (!json_is_string(id)) {
        return fg_oai_bad_type(p, param, "a string", id);
    }

    return fg_oai_copy(p, &out->tool_call_id, json_string_value(id),
                       json_string_length(id));
}


/* does message a (an assistant's) hold a call of this id? */
static int
fg_oai_call_of(const fg_oai_message_t *a, const fg_oai_str_t *id)
{
    size_t  j;

    for (j = 0; j < a->n_tool_calls; j++) {
        if (a->tool_calls[j].id.len == id->len
            && memcmp(a->tool_calls[j].id.data, id->data, id->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * The tool messages after message i, an assistant's with calls: each
 * answers one of its calls, and every call is answered, as OpenAI
 * requires.
 */
static int
fg_oai_answers_check(fg_oai_parse_t *p, size_t i)
{
    size_t                   j, k, n;
    const fg_oai_str_t      *id;
    const fg_oai_message_t  *msgs;

    msgs = p->req->messages;
    n = p->req->n_messages;

    for (j = i + 1; j < n && msgs[j].role == FG_OAI_TOOL; j++) {
        if (!fg_oai_call_of(&msgs[i], &msgs[j].tool_call_id)) {
            return fg_oai_fail(p, "invalid_value", "messages",
                               "Invalid parameter: 'tool_call_id' of "
                               "'%.64s' (messages[%zu]) not found in "
                               "'tool_calls' of previous message.",
                               msgs[j].tool_call_id.data, j);
        }
    }

    for (k = 0; k < msgs[i].n_tool_calls; k++) {
        id = &msgs[i].tool_calls[k].id;

        for (j = i + 1; j < n && msgs[j].role == FG_OAI_TOOL; j++) {
            if (msgs[j].tool_call_id.len == id->len
                && memcmp(msgs[j].tool_call_id.data, id->data, id->len)
                   == 0)
            {
                break;
            }
        }

        if (j == n || msgs[j].role != FG_OAI_TOOL) {
            return fg_oai_fail(p, "invalid_value", "messages",
                               "An assistant message with 'tool_calls' "
                               "(messages[%zu]) must be followed by tool "
                               "messages responding to each "
                               "'tool_call_id'. The following tool_call_ids "
                               "did not have response messages: %.64s", i,
                               id->data);
        }
    }

    return 0;
}


/* the tool messages: each follows an assistant's calls, answering them */
static int
fg_oai_tool_messages_check(fg_oai_parse_t *p)
{
    char                     param[96];
    size_t                   i;
    const fg_oai_message_t  *msgs;

    msgs = p->req->messages;

    for (i = 0; i < p->req->n_messages; i++) {

        if (msgs[i].n_tool_calls) {
            if (fg_oai_answers_check(p, i) != 0) {
                return -1;
            }

            continue;
        }

        if (msgs[i].role != FG_OAI_TOOL) {
            continue;
        }

        /* a tool message after a tool message was checked with the run */
        if (i > 0 && (msgs[i - 1].role == FG_OAI_TOOL
                      || msgs[i - 1].n_tool_calls))
        {
            continue;
        }

        snprintf(param, sizeof(param), "messages[%zu].role", i);

        return fg_oai_fail(p, "invalid_value", param,
                           "Invalid parameter: messages with role 'tool' "
                           "must be a response to a preceding message with "
                           "'tool_calls'.");
    }

    return 0;
}


/* what needs the whole body: the choice names a tool; the answers */
int
fg_oai_tools_check(fg_oai_parse_t *p)
{
    size_t             i;
    fg_oai_request_t  *r;

    r = p->req;

    /* a Response's: once its input is messages (fg_openai_responses.c) */
    if (r->kind != FG_OAI_CHAT
        && (r->kind != FG_OAI_RESPONSES || r->messages == NULL))
    {
        return 0;
    }

    if (r->n_tools == 0 && p->tool_choice
        && r->tool_choice != FG_OAI_TOOLS_NONE)
    {
        return fg_oai_fail(p, "invalid_value", "tool_choice",
                           "Invalid value for 'tool_choice': "
                           "'tool_choice' is only allowed when 'tools' are "
                           "specified.");
    }

    if (r->tool_choice == FG_OAI_TOOLS_NAMED) {
        for (i = 0; i < r->n_tools; i++) {
            if (strcmp(r->tool_names[i].data, r->tool_choice_name.data)
                == 0)
            {
                break;
            }
        }

        if (i == r->n_tools) {
            return fg_oai_fail(p, "invalid_value", "tool_choice",
                               "Invalid 'tool_choice': the function "
                               "'%s' is not among the 'tools'.",
                               r->tool_choice_name.data);
        }
    }

    return fg_oai_tool_messages_check(p);
}


int
fg_oai_request_uses_tools(const fg_oai_request_t *r)
{
    size_t  i;

    if (r->n_tools) {
        return 1;
    }

    for (i = 0; i < r->n_messages; i++) {
        if (r->messages[i].n_tool_calls
            || r->messages[i].role == FG_OAI_TOOL)
        {
            return 1;
        }
    }

    return 0;
}


int
fg_oai_request_reads_calls(const fg_oai_request_t *r)
{
    return r->n_tools && r->tool_choice != FG_OAI_TOOLS_NONE;
}


int
fg_oai_tools_answer(const fg_oai_request_t *r, fg_tool_format_e fmt,
    const char *text, size_t len, fg_tool_parsed_t *out)
{
    int  rc;

    if (r->tool_choice == FG_OAI_TOOLS_NAMED) {
        rc = fg_tool_parse(fmt, text, len, &r->tool_choice_name, 1, out);

    } else {
        rc = fg_tool_parse(fmt, text, len, r->tool_names, r->n_tools, out);
    }

    /* parallel_tool_calls false: one call at most, as OpenAI answers */
    while (rc == 0 && !r->parallel_tool_calls && out->n_calls > 1) {
        out->n_calls--;
        free(out->calls[out->n_calls].name);
        free(out->calls[out->n_calls].arguments);
    }

    return rc;
}
