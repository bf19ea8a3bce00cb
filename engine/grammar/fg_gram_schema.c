
/*
 * fairgate: a JSON Schema (OpenAI's structured outputs) compiled to GBNF.
 *
 * Each schema becomes a rule, sN.  Objects keep their properties in the
 * schema's order; the required must be there, the others may be left
 * out, and no other property may come (additionalProperties false, as
 * strict mode has it; an object without properties takes any properties,
 * of its additionalProperties' schema).  Arrays: items, minItems,
 * maxItems.  enum and const are their values' JSON text; anyOf and oneOf
 * alternatives (oneOf's "only one" is not checked: its alternatives should
 * not overlap); type may be a list.  $ref names #, #/$defs/NAME or
 * #/definitions/NAME, each one rule, so refs may recurse.  Any other
 * keyword that constrains a value is refused, by name.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gram_schema.h"


static int fg_gs_value(fg_gs_t *s, const json_t *schema, const char *path,
    char *name);
static int fg_gs_body(fg_gs_t *s, const json_t *schema, const char *path,
    const char *name, fg_gs_text_t *t);
static int fg_gs_typed(fg_gs_t *s, const json_t *schema, const char *path,
    const char *type, const char *name, fg_gs_text_t *t);
static int fg_gs_object(fg_gs_t *s, const json_t *schema, const char *path,
    const char *name, fg_gs_text_t *t);
static int fg_gs_array(fg_gs_t *s, const json_t *schema, const char *path,
    const char *name, fg_gs_text_t *t);
static int fg_gs_ref(fg_gs_t *s, const char *ref, const char *path,
    char *name);
static int fg_gs_define(fg_gs_t *s, const json_t *schema, const char *path,
    const char *name);
static int fg_gs_key(fg_gs_t *s, const char *key);
static int fg_gs_string_of(fg_gs_t *s, const json_t *schema,
    const char *path, fg_gs_text_t *t);


/* keywords that say nothing of the value, and those this compiler does */
static const char  *fg_gs_known[] = {
    "$schema", "$id", "$comment", "title", "description", "default",
    "examples", "deprecated", "readOnly", "writeOnly", "$defs",
    "definitions", "strict", "name",
    "type", "properties", "required", "additionalProperties", "items",
    "minItems", "maxItems", "enum", "const", "anyOf", "oneOf",
    "minLength", "maxLength", "format", "minimum", "exclusiveMinimum",
    "maximum", "exclusiveMaximum", "multipleOf", "pattern", "$ref", NULL
};


char *
fg_gram_schema_gbnf(const json_t *schema, char *err, size_t errlen)
{
    char     name[FG_GS_NAME];
    fg_gs_t  s;

    memset(&s, 0, sizeof(s));
    s.root = schema;
    s.err = err;
    s.errlen = errlen;
    s.refs = json_object();

    if (s.refs == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    if (schema == NULL) {
        if (fg_gs_need(&s, FG_GS_OBJECT) != 0
            || fg_gs_add(&s.out, "root ::= object\n") != 0)
        {
            goto failed;
        }

    } else if (fg_gs_ref(&s, "#", "", name) != 0
               || fg_gs_printf(&s.out, "root ::= %s\n", name) != 0)
    {
        goto failed;
    }

    json_decref(s.refs);

    return s.out.a;

failed:

    if (err[0] == '\0') {
        snprintf(err, errlen, "the schema's grammar is too large");
    }

    json_decref(s.refs);
    free(s.out.a);

    return NULL;
}


fg_gram_t *
fg_gram_from_schema(const json_t *schema, char *err, size_t errlen)
{
    char       *text;
    fg_gram_t  *g;

    err[0] = '\0';
    text = fg_gram_schema_gbnf(schema, err, errlen);

    if (text == NULL) {
        return NULL;
    }

    g = fg_gram_from_gbnf(text, strlen(text), err, errlen);
    free(text);

    return g;
}


/* a rule for the schema; its name into name */
static int
fg_gs_value(fg_gs_t *s, const json_t *schema, const char *path, char *name)
{
    json_t  *ref;

    ref = json_is_object(schema) ? json_object_get(schema, "$ref") : NULL;

    if (ref != NULL) {
        if (!json_is_string(ref)) {
            return fg_gs_error(s, "$ref", path, "must be a string");
        }

        return fg_gs_ref(s, json_string_value(ref), path, name);
    }

    snprintf(name, FG_GS_NAME, "s%u", s->n_rules++);

    return fg_gs_define(s, schema, path, name);
}


/* the rule name ::= the schema's body */
static int
fg_gs_define(fg_gs_t *s, const json_t *schema, const char *path,
    const char *name)
{
    int            rc;
    char           alias[FG_GS_NAME];
    json_t        *ref;
    fg_gs_text_t   body;

    if (++s->depth > FG_GS_MAX_DEPTH) {
        return fg_gs_error(s, "properties", path, "nest too deep");
    }

    memset(&body, 0, sizeof(body));
    ref = json_is_object(schema) ? json_object_get(schema, "$ref") : NULL;

    if (ref != NULL) {
        rc = fg_gs_value(s, schema, path, alias);
        rc = rc == 0 ? fg_gs_add(&body, alias) : rc;

    } else {
        rc = fg_gs_body(s, schema, path, name, &body);
    }

    if (rc == 0) {
        rc = fg_gs_printf(&s->out, "%s ::= ", name);
    }

    if (rc == 0) {
        rc = fg_gs_add(&s->out, body.a ? body.a : "");
        rc = rc == 0 ? fg_gs_add(&s->out, "\n") : rc;
    }

    free(body.a);
    s->depth--;

    return rc;
}


/* a child's path, as a JSON pointer of the schema */
static void
fg_gs_path(char *out, const char *path, const char *a, const char *b)
{
    snprintf(out, FG_GS_PATH, "%s/%s%s%s", path, a, b ? "/" : "", b ? b : "");
}


static int
fg_gs_alts(fg_gs_t *s, const json_t *list, const char *key,
    const char *path, fg_gs_text_t *t)
{
    char     sub[FG_GS_PATH], idx[24], name[FG_GS_NAME];
    size_t   i;

    if (!json_is_array(list) || json_array_size(list) == 0) {
        return fg_gs_error(s, key, path, "must be a list that is not empty");
    }

    for (i = 0; i < json_array_size(list); i++) {
        snprintf(idx, sizeof(idx), "%zu", i);
        fg_gs_path(sub, path, key, idx);

        if (fg_gs_value(s, json_array_get(list, i), sub, name) != 0
            || fg_gs_printf(t, "%s%s", i ? " | " : "", name) != 0)
        {
            return -1;
        }
    }

    return 0;
}


static int
fg_gs_body(fg_gs_t *s, const json_t *schema, const char *path,
    const char *name, fg_gs_text_t *t)
{
    size_t       i, k;
    json_t      *v, *type;
    const char  *key;

    if (json_is_true(schema) || (json_is_object(schema)
                                 && json_object_size(schema) == 0))
    {
        return fg_gs_need(s, FG_GS_VALUE) || fg_gs_add(t, "value");
    }

    if (!json_is_object(schema)) {
        return fg_gs_error(s, json_is_false(schema) ? "false" : "schema",
                           path, "is not a schema that a value can meet");
    }

    json_object_foreach((json_t *) schema, key, v) {
        for (k = 0; fg_gs_known[k] && strcmp(fg_gs_known[k], key); k++) {
            /* void */
        }

        if (fg_gs_known[k] == NULL) {
            return fg_gs_error(s, key, path, "is not supported");
        }
    }

    if ((v = json_object_get(schema, "enum")) != NULL) {
        if (!json_is_array(v) || json_array_size(v) == 0) {
            return fg_gs_error(s, "enum", path, "must be a list that is "
                               "not empty");
        }

        for (i = 0; i < json_array_size(v); i++) {
            if ((i && fg_gs_add(t, " | ") != 0)
                || fg_gs_json_literal(s, t, json_array_get(v, i)) != 0)
            {
                return -1;
            }
        }

        return 0;
    }

    if ((v = json_object_get(schema, "const")) != NULL) {
        return fg_gs_json_literal(s, t, v);
    }

    if ((v = json_object_get(schema, "anyOf")) != NULL) {
        return fg_gs_alts(s, v, "anyOf", path, t);
    }

    if ((v = json_object_get(schema, "oneOf")) != NULL) {
        return fg_gs_alts(s, v, "oneOf", path, t);
    }

    type = json_object_get(schema, "type");

    if (json_is_string(type)) {
        return fg_gs_typed(s, schema, path, json_string_value(type), name, t);
    }

    if (type == NULL) {
        return fg_gs_typed(s, schema, path,
                           json_object_get(schema, "properties") ? "object"
                           : json_object_get(schema, "items") ? "array"
                           : NULL, name, t);
    }

    if (!json_is_array(type) || json_array_size(type) == 0) {
        return fg_gs_error(s, "type", path, "must be a name or a list");
    }

    for (i = 0; i < json_array_size(type); i++) {
        if (!json_is_string(json_array_get(type, i))) {
            return fg_gs_error(s, "type", path, "must list names");
        }

        if ((i && fg_gs_add(t, " | ") != 0)
            || fg_gs_add(t, "( ") != 0
            || fg_gs_typed(s, schema, path,
                           json_string_value(json_array_get(type, i)),
                           name, t) != 0
            || fg_gs_add(t, " )") != 0)
        {
            return -1;
        }
    }

    return 0;
}


static int
fg_gs_typed(fg_gs_t *s, const json_t *schema, const char *path,
    const char *type, const char *name, fg_gs_text_t *t)
{
    if (type == NULL) {
        return fg_gs_need(s, FG_GS_VALUE) || fg_gs_add(t, "value");
    }

    if (strcmp(type, "object") == 0) {
        return fg_gs_object(s, schema, path, name, t);
    }

    if (strcmp(type, "array") == 0) {
        return fg_gs_array(s, schema, path, name, t);
    }

    if (strcmp(type, "string") == 0) {
        return fg_gs_string_of(s, schema, path, t);
    }

    if (strcmp(type, "integer") == 0) {
        return fg_gs_integer(s, schema, path, t);
    }

    if (strcmp(type, "number") == 0) {
        return fg_gs_number_range(s, schema, path, t);
    }

    if (strcmp(type, "boolean") == 0) {
        return fg_gs_need(s, FG_GS_BOOLEAN) || fg_gs_add(t, "boolean");
    }

    if (strcmp(type, "null") == 0) {
        return fg_gs_need(s, FG_GS_NULL) || fg_gs_add(t, "null");
    }

    return fg_gs_error(s, "type", path, "names no JSON type");
}


/*
 * a string: of a pattern, or of bounds and formats.  A pattern beside a
 * format is written alone: JSON Schema 2020-12 makes a format an
 * annotation, and zod sends both for its formats (email(), uuid(),
 * iso.datetime()), the pattern the exact one
 */
static int
fg_gs_string_of(fg_gs_t *s, const json_t *schema, const char *path,
    fg_gs_text_t *t)
{
    json_t  *p;

    p = json_object_get(schema, "pattern");

    if (p == NULL || json_object_get(schema, "minLength")
        || json_object_get(schema, "maxLength"))
    {
        return fg_gs_string(s, schema, path, t);
    }

    if (!json_is_string(p)) {
        return fg_gs_error(s, "pattern", path, "must be a string");
    }

    return fg_gs_pattern(s, json_string_value(p), path, t);
}


/* whether the list of required names holds key */
static int
fg_gs_required(const json_t *req, const char *key)
{
    size_t  i;

    for (i = 0; i < json_array_size(req); i++) {
        if (json_is_string(json_array_get(req, i))
            && strcmp(json_string_value(json_array_get(req, i)), key) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* an object of any properties, each of the schema add */
static int
fg_gs_map(fg_gs_t *s, const json_t *add, const char *path,
    const char *name, fg_gs_text_t *t)
{
    char  sub[FG_GS_PATH], val[FG_GS_NAME];

    if (add == NULL || json_is_true(add)) {
        return fg_gs_need(s, FG_GS_OBJECT) || fg_gs_add(t, "object");
    }

    if (json_is_false(add)) {
        return fg_gs_need(s, FG_GS_WS) || fg_gs_add(t, "\"{\" ws \"}\"");
    }

    fg_gs_path(sub, path, "additionalProperties", NULL);

    if (fg_gs_value(s, add, sub, val) != 0
        || fg_gs_need(s, FG_GS_WS | FG_GS_STRING) != 0
        || fg_gs_printf(&s->out, "%s-kv ::= string ws \":\" ws %s ws\n",
                        name, val) != 0)
    {
        return -1;
    }

    return fg_gs_printf(t, "\"{\" ws ( %s-kv ( \",\" ws %s-kv )* )? \"}\"",
                        name, name);
}


/*
 * Properties in order, the optional ones left out at will: qI is "the
 * properties from I on, none written yet", pI "from I on, after one", so
 * that commas come only between properties.
 */
static int
fg_gs_object(fg_gs_t *s, const json_t *schema, const char *path,
    const char *name, fg_gs_text_t *t)
{
    int          opt;
    char         sub[FG_GS_PATH], val[FG_GS_NAME];
    size_t       i, n;
    json_t      *props, *req, *add, *v;
    const char  *key;

    props = json_object_get(schema, "properties");
    req = json_object_get(schema, "required");
    add = json_object_get(schema, "additionalProperties");

    if (props != NULL && !json_is_object(props)) {
        return fg_gs_error(s, "properties", path, "must be an object");
    }

    if (req != NULL && !json_is_array(req)) {
        return fg_gs_error(s, "required", path, "must be a list");
    }

    if (props == NULL || json_object_size(props) == 0) {
        if (json_array_size(req) > 0) {
            return fg_gs_error(s, "required", path, "names no property");
        }

        return fg_gs_map(s, add, path, name, t);
    }

    if (add != NULL && !json_is_false(add)) {
        return fg_gs_error(s, "additionalProperties", path, "beside "
                           "properties is supported as false only");
    }

    for (i = 0; i < json_array_size(req); i++) {
        v = json_array_get(req, i);

        if (!json_is_string(v)
            || json_object_get(props, json_string_value(v)) == NULL)
        {
            return fg_gs_error(s, "required", path, "names no property");
        }
    }

    n = json_object_size(props);
    i = 0;

    if (fg_gs_need(s, FG_GS_WS) != 0) {
        return -1;
    }

    json_object_foreach(props, key, v) {
        fg_gs_path(sub, path, "properties", key);

        if (fg_gs_value(s, v, sub, val) != 0
            || fg_gs_printf(&s->out, "%s-kv%zu ::= ", name, i) != 0
            || fg_gs_key(s, key) != 0
            || fg_gs_printf(&s->out, " ws \":\" ws %s ws\n", val) != 0)
        {
            return -1;
        }

        opt = !fg_gs_required(req, key);

        if (fg_gs_printf(&s->out, "%s-q%zu ::= %s-kv%zu %s-p%zu",
                         name, i, name, i, name, i + 1) != 0
            || (opt && fg_gs_printf(&s->out, " | %s-q%zu", name, i + 1))
            || fg_gs_printf(&s->out, "\n%s-p%zu ::= \",\" ws %s-kv%zu "
                            "%s-p%zu", name, i, name, i, name, i + 1) != 0
            || (opt && fg_gs_printf(&s->out, " | %s-p%zu", name, i + 1))
            || fg_gs_add(&s->out, "\n") != 0)
        {
            return -1;
        }

        i++;
    }

    if (fg_gs_printf(&s->out, "%s-q%zu ::= \"\"\n%s-p%zu ::= \"\"\n",
                     name, n, name, n) != 0)
    {
        return -1;
    }

    return fg_gs_printf(t, "\"{\" ws %s-q0 \"}\"", name);
}


/* a property's name as its JSON text, a literal */
static int
fg_gs_key(fg_gs_t *s, const char *key)
{
    int      rc;
    json_t  *j;

    j = json_string(key);

    if (j == NULL) {
        return -1;
    }

    rc = fg_gs_json_literal(s, &s->out, j);
    json_decref(j);

    return rc;
}


static int
fg_gs_array(fg_gs_t *s, const json_t *schema, const char *path,
    const char *name, fg_gs_text_t *t)
{
    char     sub[FG_GS_PATH], val[FG_GS_NAME], rep[32];
    json_t  *items;
    int64_t  min, max;

    items = json_object_get(schema, "items");

    if (items != NULL && !json_is_object(items) && !json_is_boolean(items))
    {
        return fg_gs_error(s, "items", path, "as a list is not supported");
    }

    if (fg_gs_count(s, schema, "minItems", path, 0, &min) != 0
        || fg_gs_count(s, schema, "maxItems", path, -1, &max) != 0)
    {
        return -1;
    }

    if (max >= 0 && max < min) {
        return fg_gs_error(s, "maxItems", path, "is under minItems");
    }

    if (fg_gs_need(s, FG_GS_WS) != 0) {
        return -1;
    }

    if (max == 0) {
        return fg_gs_add(t, "\"[\" ws \"]\"");
    }

    fg_gs_path(sub, path, "items", NULL);

    if (fg_gs_value(s, items ? items : json_true(), sub, val) != 0
        || fg_gs_printf(&s->out, "%s-i ::= %s ws\n", name, val) != 0)
    {
        return -1;
    }

    if (max < 0) {
        snprintf(rep, sizeof(rep), "{%d,}", (int) (min ? min - 1 : 0));

    } else {
        snprintf(rep, sizeof(rep), "{%d,%d}", (int) (min ? min - 1 : 0),
                 (int) max - 1);
    }

    return fg_gs_printf(t, "\"[\" ws %s%s-i ( \",\" ws %s-i )%s%s \"]\"",
                        min ? "" : "( ", name, name, rep, min ? "" : " )?");
}


/* a $ref's rule, made on first use (before its body, so that it may
 * refer to itself) */
static int
fg_gs_ref(fg_gs_t *s, const char *ref, const char *path, char *name)
{
    char          sub[FG_GS_PATH];
    json_t       *r;
    const char   *key, *defs;
    const json_t *target;

    r = json_object_get(s->refs, ref);

    if (r != NULL) {
        snprintf(name, FG_GS_NAME, "%s", json_string_value(r));
        return 0;
    }

    target = NULL;
    defs = NULL;
    key = NULL;

    if (strcmp(ref, "#") == 0) {
        target = s->root;

    } else if (strncmp(ref, "#/$defs/", 8) == 0) {
        defs = "$defs";
        key = ref + 8;

    } else if (strncmp(ref, "#/definitions/", 14) == 0) {
        defs = "definitions";
        key = ref + 14;

    } else {
        return fg_gs_error(s, "$ref", path, "must be #, #/$defs/NAME or "
                           "#/definitions/NAME");
    }

    if (key != NULL && strchr(key, '/') == NULL && strchr(key, '~') == NULL)
    {
        target = json_object_get(json_object_get(s->root, defs), key);
    }

    if (target == NULL) {
        return fg_gs_error(s, "$ref", path, "names no definition");
    }

    snprintf(name, FG_GS_NAME, "d%u", s->n_rules++);

    if (json_object_set_new(s->refs, ref, json_string(name)) != 0) {
        return -1;
    }

    snprintf(sub, sizeof(sub), "%s", key ? ref + 1 : "");

    return fg_gs_define(s, target, sub, name);
}
