
/*
 * fairgate: a model's answer read back as tool calls, per family
 * (fg_tool_parse.h says which forms).  The JSON is read with jansson: a
 * call is an object with "name" and "arguments" (or Llama's
 * "parameters"); several may follow each other, separated by white space,
 * "," or ";", or stand in an array, or in {"tool_calls": [...]}.
 */


#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_tool_parse.h"


static const char  *fg_tool_markers[] = {
    NULL, "<tool_call>", "<|python_tag|>", "[TOOL_CALLS]"
};

static const char  *fg_tool_names[] = {
    "json", "hermes", "llama3", "mistral"
};


static const char *
fg_tool_find(const char *s, size_t len, const char *what)
{
    size_t  n;

    n = strlen(what);

    while (len >= n) {
        if (memcmp(s, what, n) == 0) {
            return s;
        }

        s++;
        len--;
    }

    return NULL;
}


fg_tool_format_e
fg_tool_format_detect(const char *tmpl, size_t len)
{
    if (tmpl == NULL) {
        return FG_TOOL_FMT_JSON;
    }

    if (fg_tool_find(tmpl, len, "<tool_call>")) {
        return FG_TOOL_FMT_HERMES;
    }

    if (fg_tool_find(tmpl, len, "[TOOL_CALLS]")) {
        return FG_TOOL_FMT_MISTRAL;
    }

    if (fg_tool_find(tmpl, len, "<|python_tag|>")
        || fg_tool_find(tmpl, len, "<|start_header_id|>"))
    {
        return FG_TOOL_FMT_LLAMA3;
    }

    return FG_TOOL_FMT_JSON;
}


const char *
fg_tool_format_name(fg_tool_format_e fmt)
{
    return fg_tool_names[fmt];
}


const char *
fg_tool_format_marker(fg_tool_format_e fmt)
{
    return fg_tool_markers[fmt];
}


static int
fg_tool_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}


void
fg_tool_parsed_free(fg_tool_parsed_t *out)
{
    size_t  i;

    for (i = 0; i < out->n_calls; i++) {
        free(out->calls[i].name);
        free(out->calls[i].arguments);
    }

    free(out->calls);
    memset(out, 0, sizeof(fg_tool_parsed_t));
}


static int
fg_tool_known(const char *name, const fg_oai_str_t *names, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (strcmp(names[i].data, name) == 0) {
            return 1;
        }
    }

    return n == 0;
}


/* a call's arguments: an object, or a string holding one; absent: {} */
static json_t *
fg_tool_arguments(json_t *call)
{
    json_t  *a;

    a = json_object_get(call, "arguments");

    if (a == NULL) {
        a = json_object_get(call, "parameters");
    }

    if (a == NULL) {
        return json_object();
    }

    if (json_is_object(a)) {
        return json_incref(a);
    }

    if (json_is_string(a)) {
        a = json_loadb(json_string_value(a), json_string_length(a), 0, NULL);

        if (json_is_object(a)) {
            return a;
        }

        json_decref(a);
    }

    return NULL;
}


/* one call object into out: 1, 0 when it is none, -1 out of memory */
static int
fg_tool_call(json_t *v, const fg_oai_str_t *names, size_t n_names,
    fg_tool_parsed_t *out)
{
    json_t          *name, *args, *fn;
    fg_tool_call_t  *c;

    fn = json_object_get(v, "function");

    if (json_is_object(fn) && json_object_get(v, "name") == NULL) {
        v = fn;
    }

    name = json_object_get(v, "name");

    if (!json_is_object(v) || !json_is_string(name)
        || !fg_tool_known(json_string_value(name), names, n_names)
        || out->n_calls == FG_TOOL_MAX_CALLS)
    {
        return 0;
    }

    args = fg_tool_arguments(v);
    if (args == NULL) {
        return 0;
    }

    c = realloc(out->calls, (out->n_calls + 1) * sizeof(fg_tool_call_t));
    if (c == NULL) {
        json_decref(args);
        return -1;
    }

    out->calls = c;
    c = &c[out->n_calls];

    c->name = strdup(json_string_value(name));
    c->arguments = json_dumps(args, JSON_COMPACT|JSON_PRESERVE_ORDER);
    json_decref(args);

    if (c->name == NULL || c->arguments == NULL) {
        free(c->name);
        free(c->arguments);
        return -1;
    }

    c->arguments_len = strlen(c->arguments);
    out->n_calls++;

    return 1;
}


/* a JSON value of calls: a call, an array of them, {"tool_calls": [..]} */
static int
fg_tool_value(json_t *v, const fg_oai_str_t *names, size_t n_names,
    fg_tool_parsed_t *out)
{
    int      rc;
    size_t   i;
    json_t  *x, *list;

    list = json_is_object(v) ? json_object_get(v, "tool_calls") : NULL;

    if (json_is_array(list)) {
        v = list;
    }

    if (!json_is_array(v)) {
        return fg_tool_call(v, names, n_names, out);
    }

    if (json_array_size(v) == 0) {
        return 0;
    }

    json_array_foreach(v, i, x) {
        rc = fg_tool_call(x, names, n_names, out);

        if (rc <= 0) {
            return rc;
        }
    }

    return 1;
}


/*
 * len bytes holding only calls, in JSON values separated by space, ","
 * or ";", in a ```json fence or not: 1, 0 when they are not all calls,
 * -1 out of memory.
 */
static int
fg_tool_values(const char *s, size_t len, const fg_oai_str_t *names,
    size_t n_names, fg_tool_parsed_t *out)
{
    int           rc;
    json_t       *v;
    const char   *end, *nl;
    json_error_t  jerr;

    end = s + len;

    while (s < end && fg_tool_space(*s)) {
        s++;
    }

    while (end > s && fg_tool_space(end[-1])) {
        end--;
    }

    if (end - s >= 6 && memcmp(s, "```", 3) == 0
        && memcmp(end - 3, "```", 3) == 0)
    {
        nl = memchr(s, '\n', end - s);
        s = nl ? nl + 1 : s + 3;
        end -= 3;
    }

    rc = 0;

    while (s < end) {
        if (fg_tool_space(*s) || *s == ',' || *s == ';') {
            s++;
            continue;
        }

        v = json_loadb(s, end - s, JSON_DISABLE_EOF_CHECK|JSON_DECODE_ANY,
                       &jerr);
        if (v == NULL) {
            return 0;
        }

        rc = fg_tool_value(v, names, n_names, out);
        json_decref(v);

        if (rc <= 0) {
            return rc;
        }

        s += jerr.position;
    }

    return rc;
}


/* Hermes: <tool_call> blocks, each closed or ended by the text's end */
static int
fg_tool_hermes(const char *s, size_t len, const fg_oai_str_t *names,
    size_t n_names, fg_tool_parsed_t *out)
{
    int          rc;
    const char  *p, *end, *close;

    end = s + len;
    p = fg_tool_find(s, len, "<tool_call>");
    rc = 0;

    while (p != NULL) {
        p += sizeof("<tool_call>") - 1;

        close = fg_tool_find(p, end - p, "</tool_call>");

        rc = fg_tool_values(p, (close ? close : end) - p, names, n_names,
                            out);
        if (rc <= 0) {
            return rc;
        }

        if (close == NULL) {
            break;
        }

        p = close + sizeof("</tool_call>") - 1;
        p = fg_tool_find(p, end - p, "<tool_call>");
    }

    return rc;
}


int
fg_tool_parse(fg_tool_format_e fmt, const char *text, size_t len,
    const fg_oai_str_t *names, size_t n_names, fg_tool_parsed_t *out)
{
    int          rc;
    const char  *marker, *at;

    memset(out, 0, sizeof(fg_tool_parsed_t));

    marker = fg_tool_markers[fmt];
    at = marker ? fg_tool_find(text, len, marker) : NULL;

    if (at == NULL) {
        out->content_len = 0;
        rc = fg_tool_values(text, len, names, n_names, out);

    } else {
        out->content_len = at - text;

        if (fmt == FG_TOOL_FMT_HERMES) {
            rc = fg_tool_hermes(at, len - (at - text), names, n_names, out);

        } else {
            at += strlen(marker);
            rc = fg_tool_values(at, len - (at - text), names, n_names, out);
        }
    }

    if (rc <= 0) {
        fg_tool_parsed_free(out);
        out->content_len = len;
        return rc;
    }

    while (out->content_len && fg_tool_space(text[out->content_len - 1])) {
        out->content_len--;
    }

    return 0;
}
