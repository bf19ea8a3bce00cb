
/*
 * fairgate: the JSON Schema compiler's own header: its text buffer, its
 * state, the JSON builtins and the leaf types (fg_gram_json.c) that the
 * structure's compiler (fg_gram_schema.c) calls.
 */

#ifndef _FG_GRAM_SCHEMA_H_INCLUDED_
#define _FG_GRAM_SCHEMA_H_INCLUDED_


#include <jansson.h>

#include "fg_gram_int.h"


#define FG_GS_NAME       64                 /* a rule's name, with NUL */
#define FG_GS_PATH       256                /* a schema path, for errors */
#define FG_GS_MAX_DEPTH  64                 /* schemas nested */


typedef struct {
    char     *a;
    size_t    n;
    size_t    cap;
} fg_gs_text_t;


typedef struct {
    fg_gs_text_t    out;                    /* the rules written */
    const json_t   *root;
    json_t         *refs;                   /* "$ref" text: its rule */
    uint32_t        n_rules;
    uint32_t        have;                   /* builtins written */
    uint32_t        depth;
    char           *err;
    size_t          errlen;
} fg_gs_t;


/* the builtins' bits */
#define FG_GS_WS        0x0001
#define FG_GS_VALUE     0x0002
#define FG_GS_OBJECT    0x0004
#define FG_GS_ARRAY     0x0008
#define FG_GS_STRING    0x0010
#define FG_GS_CHAR      0x0020
#define FG_GS_INTEGER   0x0040
#define FG_GS_NUMBER    0x0080
#define FG_GS_BOOLEAN   0x0100
#define FG_GS_NULL      0x0200
#define FG_GS_DATE      0x0400
#define FG_GS_TIME      0x0800
#define FG_GS_DATETIME  0x1000
#define FG_GS_UUID      0x2000
#define FG_GS_EMAIL     0x4000
#define FG_GS_NATURAL   0x8000
#define FG_GS_POSITIVE  0x10000


int fg_gs_add(fg_gs_text_t *t, const char *s);
int fg_gs_printf(fg_gs_text_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s as a GBNF string literal */
int fg_gs_literal(fg_gs_text_t *t, const char *s, size_t len);
/* a JSON value as the literal of its compact text */
int fg_gs_json_literal(fg_gs_t *s, fg_gs_text_t *t, const json_t *v);
/* a builtin rule and those it needs, written once */
int fg_gs_need(fg_gs_t *s, uint32_t bits);
/* an error about keyword at path: -1 */
int fg_gs_error(fg_gs_t *s, const char *keyword, const char *path,
    const char *why);

/* a count keyword: absent (dflt), or an integer in 0..FG_GRAM_MAX_REPEAT */
int fg_gs_count(fg_gs_t *s, const json_t *schema, const char *key,
    const char *path, int64_t dflt, int64_t *v);

/* the body of a leaf type's rule into t */
int fg_gs_string(fg_gs_t *s, const json_t *schema, const char *path,
    fg_gs_text_t *t);
int fg_gs_number(fg_gs_t *s, const json_t *schema, const char *path,
    int integer, fg_gs_text_t *t);
/* a string that a regular expression matches (fg_gram_regex.c) */
int fg_gs_pattern(fg_gs_t *s, const char *pattern, const char *path,
    fg_gs_text_t *t);
/* an integer within its bounds (fg_gram_range.c) */
int fg_gs_integer(fg_gs_t *s, const json_t *schema, const char *path,
    fg_gs_text_t *t);
/* a number, within bounds that are integers (fg_gram_range.c) */
int fg_gs_number_range(fg_gs_t *s, const json_t *schema, const char *path,
    fg_gs_text_t *t);


#endif /* _FG_GRAM_SCHEMA_H_INCLUDED_ */
