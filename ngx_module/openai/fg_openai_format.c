
/*
 * fairgate: structured output's fields.  Chat's "response_format"
 * ({"type": "text"}, {"type": "json_object"}, {"type": "json_schema",
 * "json_schema": {"name", "schema", "strict"}}), /v1/responses'
 * "text.format" (the same, json_schema's members flat), and llama.cpp's
 * "grammar" (GBNF text).  Each becomes the GBNF text of the request's
 * grammar (engine/grammar compiles a schema to it), checked here so that
 * a schema or a grammar the engine could not follow is a 400 naming what
 * it does not take, never a failure in the middle of a generation.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_grammar.h"
#include "fg_openai_request_int.h"


static int
fg_oai_format_keep(fg_oai_parse_t *p, const char *param, char *gbnf)
{
    int     rc;
    size_t  len;

    len = strlen(gbnf);

    if (len > FG_OAI_MAX_GRAMMAR) {
        free(gbnf);
        return fg_oai_fail(p, "unsupported_value", param,
                           "Invalid '%s': its grammar takes %zu bytes, more "
                           "than the %d fairgate carries.", param, len,
                           FG_OAI_MAX_GRAMMAR);
    }

    if (p->req->grammar.data != NULL) {
        free(gbnf);
        return fg_oai_fail(p, "unsupported_parameter", param,
                           "Invalid '%s': give one of 'response_format' "
                           "(a JSON one) and 'grammar'.", param);
    }

    rc = fg_oai_copy(p, &p->req->grammar, gbnf, len);
    free(gbnf);

    return rc;
}


/* a JSON Schema (NULL: any JSON object) compiled to GBNF */
static int
fg_oai_format_schema(fg_oai_parse_t *p, const char *param, const char *name,
    const json_t *schema)
{
    char   err[256], *gbnf;

    if (schema != NULL && !json_is_object(schema) && !json_is_boolean(schema))
    {
        return fg_oai_bad_type(p, param, "an object", schema);
    }

    gbnf = fg_gram_schema_gbnf(schema, err, sizeof(err));

    if (gbnf == NULL) {
        return fg_oai_fail(p, "invalid_json_schema", param,
                           "Invalid schema for response_format '%.64s': "
                           "%s", name, err);
    }

    return fg_oai_format_keep(p, param, gbnf);
}


/*
 * A format: v is response_format, or text.format when flat (json_schema's
 * members beside "type"); base names it in errors
 */
int
fg_oai_format(fg_oai_parse_t *p, const char *base, json_t *v, int flat)
{
    char        param[64];
    json_t     *type, *js, *name;
    const char *t;

    type = json_object_get(v, "type");
    snprintf(param, sizeof(param), "%s.type", base);

    if (type == NULL) {
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    if (!json_is_string(type)) {
        return fg_oai_bad_type(p, param, "a string", type);
    }

    t = json_string_value(type);

    if (strcmp(t, "text") == 0) {
        return 0;
    }

    if (strcmp(t, "json_object") == 0) {
        return fg_oai_format_schema(p, base, "json_object", NULL);
    }

    if (strcmp(t, "json_schema") != 0) {
        return fg_oai_fail(p, "unsupported_value", param,
                           "Invalid '%s': '%.64s' is not one of 'text', "
                           "'json_object', 'json_schema'.", param, t);
    }

    js = flat ? v : json_object_get(v, "json_schema");
    snprintf(param, sizeof(param), "%s%s", base, flat ? "" : ".json_schema");

    if (js == NULL || !json_is_object(js)) {
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    name = json_object_get(js, "name");

    if (name == NULL || !json_is_string(name)) {
        snprintf(param, sizeof(param), "%s%s.name", base,
                 flat ? "" : ".json_schema");
        return fg_oai_fail(p, "missing_required_parameter", param,
                           "Missing required parameter: '%s'.", param);
    }

    snprintf(param, sizeof(param), "%s%s.schema", base,
             flat ? "" : ".json_schema");

    return fg_oai_format_schema(p, param, json_string_value(name),
                                json_object_get(js, "schema"));
}


int
fg_oai_field_response_format(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    (void) why;

    return fg_oai_format(p, key, v, 0);
}


/* llama.cpp's "grammar": GBNF text, its root rule "root" */
int
fg_oai_field_grammar(fg_oai_parse_t *p, const char *key, json_t *v,
    const char *why)
{
    char        err[256];
    size_t      len;
    fg_gram_t  *g;

    (void) why;

    len = json_string_length(v);

    if (len == 0) {
        return 0;
    }

    if (len > FG_OAI_MAX_GRAMMAR) {
        return fg_oai_fail(p, "unsupported_value", key,
                           "Invalid '%s': %zu bytes, more than the %d "
                           "fairgate carries.", key, len, FG_OAI_MAX_GRAMMAR);
    }

    g = fg_gram_from_gbnf(json_string_value(v), len, err, sizeof(err));

    if (g == NULL) {
        return fg_oai_fail(p, "invalid_value", key, "Invalid '%s': %s",
                           key, err);
    }

    fg_gram_free(g);

    if (p->req->grammar.data != NULL) {
        return fg_oai_fail(p, "unsupported_parameter", key,
                           "Invalid '%s': give one of 'response_format' "
                           "(a JSON one) and 'grammar'.", key);
    }

    return fg_oai_copy(p, &p->req->grammar, json_string_value(v), len);
}


/*
 * One tool's call as a schema: its name a constant, its arguments its
 * parameters' schema where the compiler takes it (a tool not strict is
 * not refused for a keyword the compiler lacks: its arguments are then
 * any object, as before there was a grammar)
 */
static json_t *
fg_oai_format_call(const json_t *fn)
{
    char     err[256], *gbnf;
    json_t  *call, *props, *args, *params;

    params = json_object_get(fn, "parameters");
    args = NULL;

    if (json_is_object(params)) {
        gbnf = fg_gram_schema_gbnf(params, err, sizeof(err));

        if (gbnf != NULL) {
            free(gbnf);
            args = json_deep_copy(params);
        }
    }

    if (args == NULL) {
        args = json_pack("{s:s}", "type", "object");
    }

    props = json_pack("{s:{s:O},s:o}", "name", "const",
                      json_object_get(fn, "name"), "arguments", args);
    call = json_pack("{s:s,s:o,s:[s,s],s:b}", "type", "object",
                     "properties", props, "required", "name", "arguments",
                     "additionalProperties", 0);

    return call;
}


int
fg_oai_format_tools(fg_oai_parse_t *p)
{
    char              *gbnf, err[256];
    size_t             i;
    json_t            *tools, *fn, *any, *call, *schema;
    const char        *name;
    fg_oai_request_t  *r;

    r = p->req;

    /* a grammar of the client's own (response_format, grammar) stays */
    if (r->n_tools == 0 || r->grammar.data != NULL
        || (r->tool_choice != FG_OAI_TOOLS_REQUIRED
            && r->tool_choice != FG_OAI_TOOLS_NAMED))
    {
        return 0;
    }

    tools = json_loadb(r->tools.data, r->tools.len, 0, NULL);
    any = json_array();

    json_array_foreach(tools, i, call) {
        fn = json_object_get(call, "function");
        name = json_string_value(json_object_get(fn, "name"));

        if (name == NULL || (r->tool_choice == FG_OAI_TOOLS_NAMED
                             && strcmp(name, r->tool_choice_name.data) != 0))
        {
            continue;
        }

        json_array_append_new(any, fg_oai_format_call(fn));
    }

    /* a choice naming no tool offered: the tools' check says so (the
     * Responses API's runs once its input is messages, after this) */
    if (json_array_size(any) == 0) {
        json_decref(any);
        json_decref(tools);
        return 0;
    }

    schema = json_array_size(any) == 1 ? json_incref(json_array_get(any, 0))
                                       : json_pack("{s:O}", "anyOf", any);
    gbnf = schema ? fg_gram_schema_gbnf(schema, err, sizeof(err)) : NULL;

    json_decref(schema);
    json_decref(any);
    json_decref(tools);

    if (gbnf == NULL) {
        return fg_oai_fail(p, "invalid_value", "tools",
                           "Invalid 'tools': their calls make no grammar "
                           "for tool_choice: %s", schema ? err : "no memory");
    }

    return fg_oai_format_keep(p, "tool_choice", gbnf);
}
