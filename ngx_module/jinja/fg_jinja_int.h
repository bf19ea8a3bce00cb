
/*
 * fairgate: the Jinja renderer's insides, for its own files.
 *
 * Values are a small type of their own rather than jansson's json_t: a
 * string must carry which of its bytes came from the request (the
 * segments of the output are cut by it), and the language needs values
 * JSON has not (undefined, namespaces, macros).  Every value of a render
 * lives in the render's arena and is freed with it: values are shared
 * freely and never freed one by one; only objects change in place
 * (namespaces and scopes), as the reference's maps do.
 */

#ifndef _FG_JINJA_INT_H_INCLUDED_
#define _FG_JINJA_INT_H_INCLUDED_


#include <setjmp.h>
#include <stdarg.h>

#include "fg_jinja.h"


#define FG_JINJA_MAX_NEST     200        /* parser's nesting */


/* the arena of a parse or of a render */

typedef struct fg_jinja_chunk_s  fg_jinja_chunk_t;

struct fg_jinja_chunk_s {
    fg_jinja_chunk_t    *next;
    size_t               size;
    size_t               used;
};

typedef struct {
    fg_jinja_chunk_t    *head;
    size_t               total;
    size_t               max;
} fg_jinja_arena_t;


/* a string: user NULL when none of its bytes came from the request, else
 * one byte per byte of data, 1 where it did */
typedef struct {
    const char          *data;
    const uint8_t       *user;
    size_t               len;
} fg_jstr_t;


typedef enum {
    FG_JV_UNDEF = 0,
    FG_JV_NONE,
    FG_JV_BOOL,
    FG_JV_INT,
    FG_JV_FLOAT,
    FG_JV_STR,
    FG_JV_ARRAY,
    FG_JV_OBJECT,
    FG_JV_NS,                   /* namespace(): an object set by attribute */
    FG_JV_MACRO
} fg_jv_type_e;


typedef struct fg_jv_s    fg_jv_t;
typedef struct fg_jnode_s  fg_jnode_t;

struct fg_jv_s {
    fg_jv_type_e         type;

    union {
        int              b;
        int64_t          i;
        double           f;
        fg_jstr_t        s;

        struct {
            fg_jv_t    **items;
            size_t       n;
        } a;

        struct {
            fg_jstr_t   *keys;
            fg_jv_t    **vals;
            size_t       n;
            size_t       cap;
        } o;

        const fg_jnode_t  *macro;
    } u;
};


/* the syntax tree */

typedef enum {
    /* statements */
    FG_JN_TEXT = 1,             /* value */
    FG_JN_OUTPUT,               /* a */
    FG_JN_IF,                   /* a, body, alt */
    FG_JN_FOR,                  /* a target, b iterable, c its test */
    FG_JN_SET,                  /* a target, b value or body */
    FG_JN_MACRO,                /* name, args, body */
    FG_JN_BREAK,
    FG_JN_CONTINUE,
    FG_JN_FILTERED,             /* a filter (its a unused), body */

    /* expressions */
    FG_JN_LITERAL,              /* value */
    FG_JN_NAME,                 /* name */
    FG_JN_MEMBER,               /* a object, b property; op: 1 computed */
    FG_JN_SLICE,                /* a object, args: start, stop, step */
    FG_JN_CALL,                 /* a callee, args */
    FG_JN_FILTER,               /* a operand, name, args; op: 1 called */
    FG_JN_TEST,                 /* a operand, name; op: 1 negated */
    FG_JN_BINARY,               /* op, a, b */
    FG_JN_UNARY,                /* op, a */
    FG_JN_TERNARY,              /* a condition, b then, c else */
    FG_JN_SELECT,               /* a value, b condition */
    FG_JN_LIST,                 /* args */
    FG_JN_TUPLE,                /* args */
    FG_JN_DICT,                 /* args: key, value, key, value ... */
    FG_JN_KWARG                 /* name = a */
} fg_jnode_type_e;


typedef enum {
    FG_JOP_AND = 1, FG_JOP_OR, FG_JOP_NOT, FG_JOP_EQ, FG_JOP_NE, FG_JOP_LT,
    FG_JOP_GT, FG_JOP_LE, FG_JOP_GE, FG_JOP_IN, FG_JOP_NOT_IN, FG_JOP_ADD,
    FG_JOP_SUB, FG_JOP_CONCAT, FG_JOP_MUL, FG_JOP_DIV, FG_JOP_FLOORDIV,
    FG_JOP_MOD, FG_JOP_POW, FG_JOP_NEG, FG_JOP_POS
} fg_jop_e;


struct fg_jnode_s {
    fg_jnode_type_e      type;
    int                  op;
    size_t               pos;       /* in the template's source */

    fg_jnode_t          *a;
    fg_jnode_t          *b;
    fg_jnode_t          *c;

    fg_jnode_t         **args;      /* arguments, items, parameters */
    size_t               n_args;
    fg_jnode_t         **body;
    size_t               n_body;
    fg_jnode_t         **alt;       /* else */
    size_t               n_alt;

    fg_jstr_t            name;
    fg_jv_t             *value;
};


struct fg_jinja_s {
    fg_jinja_arena_t     arena;
    fg_jnode_t         **body;
    size_t               n_body;

    /* line starts of the source, for the places in errors */
    char                *src;
    size_t               len;
};


/* the output being written, or a text being gathered (set blocks,
 * macros) */
typedef struct {
    char                *data;
    uint8_t             *user;
    size_t               len;
    size_t               cap;
    unsigned             any_user:1;
} fg_jbuf_t;


/* a scope: its variables, and the scope it is in */
typedef struct fg_jscope_s  fg_jscope_t;

struct fg_jscope_s {
    fg_jv_t             *vars;
    fg_jscope_t         *parent;
};


typedef struct fg_jctx_s  fg_jctx_t;
typedef struct fg_jargs_s  fg_jargs_t;

/* the evaluator and the macro call, for the files below them (filters)
 * and beside them (eval.c calls exec.c's macros) */
typedef fg_jv_t *(*fg_jeval_pt)(fg_jctx_t *c, fg_jscope_t *s,
    const fg_jnode_t *n);
typedef fg_jv_t *(*fg_jcall_pt)(fg_jctx_t *c, fg_jscope_t *s,
    const fg_jv_t *m, const fg_jargs_t *a, const fg_jnode_t *n);

struct fg_jctx_s {
    const fg_jinja_t        *tpl;
    const fg_jinja_limits_t *lim;
    fg_jinja_arena_t         arena;
    fg_jbuf_t               *out;
    uint64_t                 steps;
    unsigned                 depth;
    fg_jinja_err_t          *err;
    fg_jeval_pt              eval;
    fg_jcall_pt              call;
    jmp_buf                  fail;
};


/* fg_jinja_value.c */
void *fg_jinja_alloc(fg_jinja_arena_t *a, size_t n);
void fg_jinja_arena_free(fg_jinja_arena_t *a);
void *fg_jctx_alloc(fg_jctx_t *c, size_t n);
void fg_jinja_where(const fg_jinja_t *t, size_t pos, fg_jinja_err_t *err);
void fg_jfail(fg_jctx_t *c, const fg_jnode_t *n, fg_jinja_rc_e rc,
    const char *fmt, ...) __attribute__((noreturn, format(printf, 4, 5)));

extern fg_jv_t  fg_jv_undef, fg_jv_none, fg_jv_true, fg_jv_false;

fg_jv_t *fg_jv_new(fg_jctx_t *c, fg_jv_type_e type);
fg_jv_t *fg_jv_bool(int b);
fg_jv_t *fg_jv_int(fg_jctx_t *c, int64_t i);
fg_jv_t *fg_jv_float(fg_jctx_t *c, double f);
fg_jv_t *fg_jv_whole(fg_jctx_t *c, double f);
fg_jv_t *fg_jv_str(fg_jctx_t *c, const char *s, size_t len, int user);
fg_jv_t *fg_jv_jstr(fg_jctx_t *c, fg_jstr_t s);
fg_jv_t *fg_jv_array(fg_jctx_t *c, size_t n);
fg_jv_t *fg_jv_object(fg_jctx_t *c);
fg_jv_t *fg_jv_get(const fg_jv_t *o, const char *key, size_t len);
void fg_jv_set(fg_jctx_t *c, fg_jv_t *o, fg_jstr_t key, fg_jv_t *v);
fg_jv_t *fg_jv_from_json(fg_jctx_t *c, const json_t *j, int user);
int fg_jv_truthy(const fg_jv_t *v);
/* an int, float or bool as a double: 1, or 0 for other types */
int fg_jv_numeric(const fg_jv_t *v, double *f);
const char *fg_jv_type_name(const fg_jv_t *v);
fg_jstr_t fg_jstr_sub(fg_jctx_t *c, fg_jstr_t s, size_t from, size_t to);
int fg_jstr_eq(fg_jstr_t s, const char *lit);

/* fg_jinja_buf.c: texts written, numbers and JSON as JavaScript writes
 * them */
void fg_jbuf_init(fg_jbuf_t *b);
void fg_jbuf_add(fg_jctx_t *c, fg_jbuf_t *b, const char *s, size_t len,
    const uint8_t *user, int all_user);
void fg_jbuf_lit(fg_jctx_t *c, fg_jbuf_t *b, const char *s);
void fg_jbuf_jstr(fg_jctx_t *c, fg_jbuf_t *b, fg_jstr_t s);
fg_jv_t *fg_jbuf_value(fg_jctx_t *c, fg_jbuf_t *b);
void fg_jbuf_number(fg_jctx_t *c, fg_jbuf_t *b, double f);
void fg_jbuf_scalar(fg_jctx_t *c, fg_jbuf_t *b, const fg_jv_t *v,
    const fg_jnode_t *n);
void fg_jbuf_value_text(fg_jctx_t *c, fg_jbuf_t *b, const fg_jv_t *v);

typedef struct {
    int64_t              indent;        /* -1: none */
    int                  undef_null;
    int                  ascii;
    int                  sort_keys;
    const fg_jstr_t     *item_sep;
    const fg_jstr_t     *key_sep;
} fg_jjson_opts_t;

void fg_jbuf_json(fg_jctx_t *c, fg_jbuf_t *b, const fg_jv_t *v,
    const fg_jjson_opts_t *o, int depth, const fg_jnode_t *n);

/* fg_jinja_lex.c */
typedef enum {
    FG_JT_END = 0, FG_JT_TEXT, FG_JT_COMMENT, FG_JT_OPEN_STMT,
    FG_JT_CLOSE_STMT, FG_JT_OPEN_EXPR, FG_JT_CLOSE_EXPR, FG_JT_INT,
    FG_JT_FLOAT, FG_JT_STRING, FG_JT_NAME, FG_JT_LPAREN, FG_JT_RPAREN,
    FG_JT_LBRACKET, FG_JT_RBRACKET, FG_JT_LBRACE, FG_JT_RBRACE, FG_JT_COMMA,
    FG_JT_DOT, FG_JT_COLON, FG_JT_PIPE, FG_JT_ASSIGN, FG_JT_ADD, FG_JT_MUL,
    FG_JT_POW, FG_JT_CMP, FG_JT_UNARY
} fg_jtok_type_e;

typedef struct {
    fg_jtok_type_e       type;
    size_t               pos;
    const char          *data;      /* the text, the string's value */
    size_t               len;
} fg_jtok_t;

typedef struct {
    fg_jtok_t           *toks;
    size_t               n;
    char                *src;       /* preprocessed */
    size_t               len;
    size_t              *map;       /* its bytes' places in the source */
} fg_jlex_t;

int fg_jinja_lex(fg_jinja_t *t, const char *src, size_t len, fg_jlex_t *lx,
    fg_jinja_err_t *err);

/* fg_jinja_tok.c (the cursor), fg_jinja_parse.c, fg_jinja_expr.c */
typedef struct {
    fg_jinja_t          *tpl;
    fg_jlex_t           *lx;
    size_t               cur;
    unsigned             depth;
    fg_jinja_err_t      *err;
    jmp_buf              fail;
} fg_jparser_t;

void fg_jparse_fail(fg_jparser_t *p, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
fg_jnode_t *fg_jparse_node(fg_jparser_t *p, fg_jnode_type_e type);
int fg_jparse_is(fg_jparser_t *p, fg_jtok_type_e type);
int fg_jparse_is_name(fg_jparser_t *p, size_t ahead, const char *name);
void fg_jparse_expect(fg_jparser_t *p, fg_jtok_type_e type,
    const char *what);
fg_jnode_t *fg_jparse_expr(fg_jparser_t *p);
fg_jnode_t *fg_jparse_primary(fg_jparser_t *p);
fg_jnode_t *fg_jparse_sequence(fg_jparser_t *p, int primary);
void fg_jparse_args(fg_jparser_t *p, fg_jnode_t *n);
void fg_jparse_push(fg_jparser_t *p, fg_jnode_t ***list, size_t *n,
    size_t *cap, fg_jnode_t *item);

/* fg_jinja_eval.c; equality and fg_jarg() in fg_jinja_value.c,
 * fg_jeval_args() in fg_jinja_filter.c */
fg_jv_t *fg_jeval(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n);
fg_jv_t *fg_jlookup(fg_jscope_t *s, fg_jstr_t name);
int fg_jv_equal(const fg_jv_t *a, const fg_jv_t *b);
int fg_jv_strict_equal(const fg_jv_t *a, const fg_jv_t *b);

/* the arguments of a call, evaluated */
struct fg_jargs_s {
    fg_jv_t            **pos;
    size_t               n_pos;
    fg_jv_t             *kw;        /* an object, NULL when none */
};

void fg_jeval_args(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n,
    fg_jargs_t *a);
fg_jv_t *fg_jarg(const fg_jargs_t *a, size_t i, const char *kw);

/* fg_jinja_exec.c */
void fg_jexec_block(fg_jctx_t *c, fg_jscope_t *s, fg_jnode_t **body,
    size_t n);
fg_jscope_t *fg_jscope_new(fg_jctx_t *c, fg_jscope_t *parent);
fg_jv_t *fg_jcall_macro(fg_jctx_t *c, fg_jscope_t *s, const fg_jv_t *m,
    const fg_jargs_t *a, const fg_jnode_t *n);

/* fg_jinja_filter.c */
fg_jv_t *fg_jfilter(fg_jctx_t *c, fg_jscope_t *s, fg_jv_t *v,
    const fg_jnode_t *n);
fg_jv_t *fg_jtest(fg_jctx_t *c, fg_jv_t *v, const fg_jnode_t *n);
int fg_jtest_named(fg_jctx_t *c, fg_jstr_t name, fg_jv_t *v, fg_jv_t *arg,
    const fg_jnode_t *n);

/* fg_jinja_method.c */
fg_jv_t *fg_jmethod(fg_jctx_t *c, fg_jv_t *obj, fg_jstr_t name,
    const fg_jargs_t *a, const fg_jnode_t *n);
fg_jv_t *fg_jglobal(fg_jctx_t *c, fg_jstr_t name, const fg_jargs_t *a,
    const fg_jnode_t *n);

/* fg_jinja_sort.c */
int fg_jv_compare(fg_jctx_t *c, const fg_jv_t *a, const fg_jv_t *b,
    int cased, const fg_jnode_t *n);
void fg_jv_sort(fg_jctx_t *c, fg_jv_t **items, fg_jv_t **keys, size_t n,
    int cased, int reverse, const fg_jnode_t *nd);

/* fg_jinja_str.c: strings as JavaScript's methods treat them */
size_t fg_jstr_space(const char *s, size_t len);
size_t fg_jstr_space_back(const char *s, size_t len);
fg_jstr_t fg_jstr_trim(fg_jctx_t *c, fg_jstr_t s, int left, int right);
fg_jv_t *fg_jstr_case(fg_jctx_t *c, fg_jstr_t s, int how);
size_t fg_jstr_units(fg_jstr_t s);
fg_jv_t *fg_jstr_split(fg_jctx_t *c, fg_jstr_t s, const fg_jv_t *sep,
    int64_t max, const fg_jnode_t *n);
fg_jv_t *fg_jstr_replace(fg_jctx_t *c, fg_jstr_t s, fg_jstr_t from,
    fg_jstr_t to, int64_t count);
fg_jv_t *fg_jslice(fg_jctx_t *c, const fg_jv_t *v, const fg_jv_t *start,
    const fg_jv_t *stop, const fg_jv_t *step, const fg_jnode_t *n);
fg_jv_t *fg_jstr_index(fg_jctx_t *c, fg_jstr_t s, int64_t i);

#define FG_JCASE_UPPER  1
#define FG_JCASE_LOWER  2
#define FG_JCASE_TITLE  3
#define FG_JCASE_CAP    4


#endif /* _FG_JINJA_INT_H_INCLUDED_ */
