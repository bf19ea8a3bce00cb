
/*
 * fairgate: what the request parser's checks share, below all of them:
 * errors (in OpenAI's words), JSON type names, booleans, array sizes, and
 * the request's memory, which grows in blocks and is freed in one go.
 * fg_openai_request.c walks the body and calls the checks beside it
 * (fg_openai_params.c, _messages.c, _prompt.c, _unsupported.c); all of
 * them call down to these helpers, which call none of them.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_openai_request_int.h"


/* the request's memory grows in blocks of at least this */
#define FG_OAI_BLOCK         4096


typedef struct fg_oai_block_s  fg_oai_block_t;

struct fg_oai_block_s {
    fg_oai_block_t          *next;
    size_t                   size;
    size_t                   used;
    /* the data follows, 16-byte aligned */
};


static void
fg_oai_error_vset(fg_oai_error_t *err, int status, const char *code,
    const char *param, const char *fmt, va_list args)
{
    err->status = status;
    err->type = status >= 500 ? "server_error" : "invalid_request_error";
    err->code = code;

    snprintf(err->param, sizeof(err->param), "%s", param ? param : "");
    vsnprintf(err->message, sizeof(err->message), fmt, args);
}


void
fg_oai_error_set(fg_oai_error_t *err, int status, const char *code,
    const char *param, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    fg_oai_error_vset(err, status, code, param, fmt, args);
    va_end(args);
}


/* a 400 about param; returns -1 so that checks can "return fg_oai_fail()" */
int
fg_oai_fail(fg_oai_parse_t *p, const char *code, const char *param,
    const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    fg_oai_error_vset(p->err, 400, code, param, fmt, args);
    va_end(args);

    return -1;
}


int
fg_oai_nomem(fg_oai_parse_t *p)
{
    fg_oai_error_set(p->err, 500, NULL, NULL, "out of memory");

    return -1;
}


/* the article and name of a JSON type, as OpenAI's messages say it */
const char *
fg_oai_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a decimal";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }

    return "an unknown value";
}


/*
 * A field's value against its type: 1 if it is null (the field's default),
 * 0 if it has the type, -1 (p->err filled) if not.
 */
int
fg_oai_typed(fg_oai_parse_t *p, const char *key, json_t *v,
    fg_oai_type_e type)
{
    json_type  t;

    /* by fg_oai_type_e; a number is an integer or a real */
    static const json_type    types[] = {
        JSON_NULL, JSON_INTEGER, JSON_REAL, JSON_STRING, JSON_OBJECT,
        JSON_ARRAY
    };
    static const char * const  want[] = {
        NULL, "an integer", "a number", "a string", "an object", "an array"
    };

    if (type == FG_OAI_T_ANY) {
        return 0;
    }

    if (json_is_null(v)) {
        return 1;
    }

    t = json_typeof(v);

    if (t == types[type]
        || (type == FG_OAI_T_NUMBER && t == JSON_INTEGER))
    {
        return 0;
    }

    return fg_oai_bad_type(p, key, want[type], v);
}


int
fg_oai_bad_type(fg_oai_parse_t *p, const char *param, const char *want,
    const json_t *v)
{
    return fg_oai_fail(p, "invalid_type", param,
                       "Invalid type for '%s': expected %s, but got %s "
                       "instead.", param, want, fg_oai_type_name(v));
}


int
fg_oai_bool(fg_oai_parse_t *p, const char *param, json_t *v, int *out)
{
    if (json_is_null(v)) {
        return 1;
    }

    if (!json_is_boolean(v)) {
        return fg_oai_bad_type(p, param, "a boolean", v);
    }

    *out = json_is_true(v);

    return 0;
}


/* memory owned by the request: freed in one go by fg_oai_request_free() */
/* an array of n elements at param: 1 .. max of them */
int
fg_oai_array_size(fg_oai_parse_t *p, const char *param, size_t n,
    size_t max)
{
    if (n == 0) {
        return fg_oai_fail(p, "empty_array", param,
                           "Invalid '%s': empty array. Expected an array "
                           "with minimum length 1, but got an empty array "
                           "instead.", param);
    }

    if (n > max) {
        return fg_oai_fail(p, "array_above_max_length", param,
                           "Invalid '%s': array too long. Expected an "
                           "array with maximum length %zu, but got an "
                           "array with length %zu instead.", param, max, n);
    }

    return 0;
}


/* room for the n elements of an array at param, checked as above; NULL
 * with p->err set when refused or out of memory */
void *
fg_oai_array(fg_oai_parse_t *p, const char *param, size_t n, size_t max,
    size_t size)
{
    void  *a;

    if (fg_oai_array_size(p, param, n, max) != 0) {
        return NULL;
    }

    a = fg_oai_alloc(p->req, n * size);
    if (a == NULL) {
        (void) fg_oai_nomem(p);
    }

    return a;
}


void *
fg_oai_alloc(fg_oai_request_t *r, size_t size)
{
    size_t           hdr, n;
    fg_oai_block_t  *b;

    hdr = (sizeof(fg_oai_block_t) + 15) & ~(size_t) 15;
    size = (size + 15) & ~(size_t) 15;

    b = r->mem;

    if (b == NULL || b->size - b->used < size) {
        n = size > FG_OAI_BLOCK ? size : FG_OAI_BLOCK;

        b = malloc(hdr + n);
        if (b == NULL) {
            return NULL;
        }

        b->next = r->mem;
        b->size = n;
        b->used = 0;
        r->mem = b;
    }

    b->used += size;

    return (char *) b + hdr + b->used - size;
}


int
fg_oai_copy(fg_oai_parse_t *p, fg_oai_str_t *dst, const char *s, size_t len)
{
    char  *d;

    d = fg_oai_alloc(p->req, len + 1);
    if (d == NULL) {
        return fg_oai_nomem(p);
    }

    memcpy(d, s, len);
    d[len] = '\0';

    dst->data = d;
    dst->len = len;

    return 0;
}


void
fg_oai_request_free(fg_oai_request_t *r)
{
    fg_oai_block_t  *b, *next;

    if (r == NULL) {
        return;
    }

    for (b = r->mem; b; b = next) {
        next = b->next;
        free(b);
    }

    free(r);
}
