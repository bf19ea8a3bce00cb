
/*
 * fairgate: the Jinja renderer's memory and values: arenas, the value
 * constructors, objects as small ordered maps (chat templates' objects
 * have a few keys), JSON brought in, and errors with their places.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_jinja_int.h"


#define FG_JINJA_CHUNK   (64 * 1024)
#define FG_JINJA_HDR     ((sizeof(fg_jinja_chunk_t) + 15) & ~(size_t) 15)


fg_jv_t  fg_jv_undef = { .type = FG_JV_UNDEF };
fg_jv_t  fg_jv_none = { .type = FG_JV_NONE };
fg_jv_t  fg_jv_true = { .type = FG_JV_BOOL, .u.b = 1 };
fg_jv_t  fg_jv_false = { .type = FG_JV_BOOL, .u.b = 0 };


void *
fg_jinja_alloc(fg_jinja_arena_t *a, size_t n)
{
    size_t             size;
    fg_jinja_chunk_t  *ch;

    n = (n + 15) & ~(size_t) 15;
    ch = a->head;

    if (ch == NULL || ch->size - ch->used < n) {
        size = n > FG_JINJA_CHUNK ? n : FG_JINJA_CHUNK;

        if (a->max && a->total + size > a->max) {
            return NULL;
        }

        ch = malloc(FG_JINJA_HDR + size);
        if (ch == NULL) {
            return NULL;
        }

        ch->size = size;
        ch->used = 0;
        ch->next = a->head;
        a->head = ch;
        a->total += size;
    }

    ch->used += n;

    /* the header is padded to 16 bytes: every block stays aligned */
    return (char *) ch + FG_JINJA_HDR + ch->used - n;
}


void
fg_jinja_arena_free(fg_jinja_arena_t *a)
{
    fg_jinja_chunk_t  *ch, *next;

    for (ch = a->head; ch; ch = next) {
        next = ch->next;
        free(ch);
    }

    a->head = NULL;
    a->total = 0;
}


void *
fg_jctx_alloc(fg_jctx_t *c, size_t n)
{
    void  *p;

    p = fg_jinja_alloc(&c->arena, n);

    if (p == NULL) {
        fg_jfail(c, NULL, c->arena.max && c->arena.total + n > c->arena.max
                          ? FG_JINJA_ELIMIT : FG_JINJA_ENOMEM,
                 "the render needs more than %zu bytes of memory",
                 c->arena.max);
    }

    return p;
}


/* the line and column of a place in the source */
void
fg_jinja_where(const fg_jinja_t *t, size_t pos, fg_jinja_err_t *err)
{
    size_t  i;

    err->line = 1;
    err->column = 1;

    if (t == NULL || t->src == NULL) {
        return;
    }

    for (i = 0; i < pos && i < t->len; i++) {
        if (t->src[i] == '\n') {
            err->line++;
            err->column = 1;

        } else {
            err->column++;
        }
    }
}


void
fg_jfail(fg_jctx_t *c, const fg_jnode_t *n, fg_jinja_rc_e rc,
    const char *fmt, ...)
{
    va_list  args;

    c->err->rc = rc;

    va_start(args, fmt);
    vsnprintf(c->err->message, sizeof(c->err->message), fmt, args);
    va_end(args);

    if (n) {
        fg_jinja_where(c->tpl, n->pos, c->err);

    } else {
        c->err->line = 0;
        c->err->column = 0;
    }

    longjmp(c->fail, 1);
}


fg_jv_t *
fg_jv_new(fg_jctx_t *c, fg_jv_type_e type)
{
    fg_jv_t  *v;

    v = fg_jctx_alloc(c, sizeof(fg_jv_t));
    memset(v, 0, sizeof(fg_jv_t));
    v->type = type;

    return v;
}


fg_jv_t *
fg_jv_bool(int b)
{
    return b ? &fg_jv_true : &fg_jv_false;
}


fg_jv_t *
fg_jv_int(fg_jctx_t *c, int64_t i)
{
    fg_jv_t  *v;

    v = fg_jv_new(c, FG_JV_INT);
    v->u.i = i;

    return v;
}


/* a whole number as an integer where int64 holds it, else as the double
 * it is (JavaScript's numbers are doubles) */
fg_jv_t *
fg_jv_whole(fg_jctx_t *c, double f)
{
    if (f >= -9223372036854775808.0 && f < 9223372036854775808.0) {
        return fg_jv_int(c, (int64_t) f);
    }

    return fg_jv_float(c, f);
}


fg_jv_t *
fg_jv_float(fg_jctx_t *c, double f)
{
    fg_jv_t  *v;

    v = fg_jv_new(c, FG_JV_FLOAT);
    v->u.f = f;

    return v;
}


fg_jv_t *
fg_jv_str(fg_jctx_t *c, const char *s, size_t len, int user)
{
    char     *d;
    fg_jv_t  *v;
    uint8_t  *u;

    v = fg_jv_new(c, FG_JV_STR);
    d = fg_jctx_alloc(c, len + 1);
    memcpy(d, s, len);
    d[len] = '\0';

    v->u.s.data = d;
    v->u.s.len = len;

    if (user && len) {
        u = fg_jctx_alloc(c, len);
        memset(u, 1, len);
        v->u.s.user = u;
    }

    return v;
}


fg_jv_t *
fg_jv_jstr(fg_jctx_t *c, fg_jstr_t s)
{
    fg_jv_t  *v;

    v = fg_jv_new(c, FG_JV_STR);
    v->u.s = s;

    return v;
}


fg_jv_t *
fg_jv_array(fg_jctx_t *c, size_t n)
{
    fg_jv_t  *v;

    v = fg_jv_new(c, FG_JV_ARRAY);
    v->u.a.items = fg_jctx_alloc(c, (n ? n : 1) * sizeof(fg_jv_t *));
    v->u.a.n = n;

    return v;
}


fg_jv_t *
fg_jv_object(fg_jctx_t *c)
{
    return fg_jv_new(c, FG_JV_OBJECT);
}


int
fg_jstr_eq(fg_jstr_t s, const char *lit)
{
    size_t  len;

    len = strlen(lit);

    return s.len == len && memcmp(s.data, lit, len) == 0;
}


fg_jv_t *
fg_jv_get(const fg_jv_t *o, const char *key, size_t len)
{
    size_t  i;

    for (i = 0; i < o->u.o.n; i++) {
        if (o->u.o.keys[i].len == len
            && memcmp(o->u.o.keys[i].data, key, len) == 0)
        {
            return o->u.o.vals[i];
        }
    }

    return NULL;
}


/* a key set again keeps its place, as a JavaScript Map's does */
void
fg_jv_set(fg_jctx_t *c, fg_jv_t *o, fg_jstr_t key, fg_jv_t *v)
{
    size_t      i, cap;
    fg_jv_t   **vals;
    fg_jstr_t  *keys;

    for (i = 0; i < o->u.o.n; i++) {
        if (o->u.o.keys[i].len == key.len
            && memcmp(o->u.o.keys[i].data, key.data, key.len) == 0)
        {
            o->u.o.vals[i] = v;
            return;
        }
    }

    if (o->u.o.n == o->u.o.cap) {
        cap = o->u.o.cap ? 2 * o->u.o.cap : 8;
        keys = fg_jctx_alloc(c, cap * sizeof(fg_jstr_t));
        vals = fg_jctx_alloc(c, cap * sizeof(fg_jv_t *));

        if (o->u.o.n) {
            memcpy(keys, o->u.o.keys, o->u.o.n * sizeof(fg_jstr_t));
            memcpy(vals, o->u.o.vals, o->u.o.n * sizeof(fg_jv_t *));
        }

        o->u.o.keys = keys;
        o->u.o.vals = vals;
        o->u.o.cap = cap;
    }

    o->u.o.keys[o->u.o.n] = key;
    o->u.o.vals[o->u.o.n] = v;
    o->u.o.n++;
}


/*
 * JSON in: the reference gets its variables from JavaScript, where a
 * number with no fraction is an integer (1.0 is 1).
 */
fg_jv_t *
fg_jv_from_json(fg_jctx_t *c, const json_t *j, int user)
{
    size_t       i;
    double       f;
    fg_jv_t     *v;
    fg_jstr_t    k;
    const char  *key;
    json_t      *item;

    switch (json_typeof(j)) {

    case JSON_OBJECT:
        v = fg_jv_object(c);

        /* keys too: a tool's parameters are named by the request */
        json_object_foreach((json_t *) j, key, item) {
            k = fg_jv_str(c, key, strlen(key), user)->u.s;
            fg_jv_set(c, v, k, fg_jv_from_json(c, item, user));
        }

        return v;

    case JSON_ARRAY:
        v = fg_jv_array(c, json_array_size(j));

        json_array_foreach(j, i, item) {
            v->u.a.items[i] = fg_jv_from_json(c, item, user);
        }

        return v;

    case JSON_STRING:
        return fg_jv_str(c, json_string_value(j), json_string_length(j),
                         user);

    case JSON_INTEGER:
        return fg_jv_int(c, json_integer_value(j));

    case JSON_REAL:
        f = json_real_value(j);

        if (f == floor(f) && fabs(f) < 9007199254740992.0) {
            return fg_jv_int(c, (int64_t) f);
        }

        return fg_jv_float(c, f);

    case JSON_TRUE:
        return &fg_jv_true;

    case JSON_FALSE:
        return &fg_jv_false;

    default:
        return &fg_jv_none;
    }
}


/* the reference's __bool__: a namespace is always true */
int
fg_jv_truthy(const fg_jv_t *v)
{
    switch (v->type) {
    case FG_JV_BOOL:
        return v->u.b;
    case FG_JV_INT:
        return v->u.i != 0;
    case FG_JV_FLOAT:
        return v->u.f != 0 && !isnan(v->u.f);
    case FG_JV_STR:
        return v->u.s.len != 0;
    case FG_JV_ARRAY:
        return v->u.a.n != 0;
    case FG_JV_OBJECT:
        return v->u.o.n != 0;
    case FG_JV_NS:
    case FG_JV_MACRO:
        return 1;
    default:
        return 0;
    }
}


const char *
fg_jv_type_name(const fg_jv_t *v)
{
    static const char  *names[] = {
        "undefined", "none", "boolean", "integer", "float", "string",
        "list", "mapping", "namespace", "macro"
    };

    return names[v->type];
}


/* a part of a string, with which of its bytes came from the request */
fg_jstr_t
fg_jstr_sub(fg_jctx_t *c, fg_jstr_t s, size_t from, size_t to)
{
    size_t     i;
    fg_jstr_t  r;

    (void) c;

    r.data = s.data + from;
    r.len = to - from;
    r.user = NULL;

    if (s.user) {
        for (i = from; i < to; i++) {
            if (s.user[i]) {
                r.user = s.user + from;
                break;
            }
        }
    }

    return r;
}


int
fg_jv_numeric(const fg_jv_t *v, double *f)
{
    switch (v->type) {
    case FG_JV_INT:
        *f = (double) v->u.i;
        return 1;
    case FG_JV_FLOAT:
        *f = v->u.f;
        return 1;
    case FG_JV_BOOL:
        *f = v->u.b;
        return 1;
    default:
        return 0;
    }
}


static int
fg_jv_str_eq(const fg_jv_t *a, const fg_jv_t *b)
{
    return a->u.s.len == b->u.s.len
           && memcmp(a->u.s.data, b->u.s.data, a->u.s.len) == 0;
}


/* JavaScript's == on the values */
int
fg_jv_equal(const fg_jv_t *a, const fg_jv_t *b)
{
    double  x, y;

    if (a->type <= FG_JV_NONE || b->type <= FG_JV_NONE) {
        return a->type <= FG_JV_NONE && b->type <= FG_JV_NONE;
    }

    if (fg_jv_numeric(a, &x) && fg_jv_numeric(b, &y)) {
        return x == y;
    }

    if (a->type == FG_JV_STR && b->type == FG_JV_STR) {
        return fg_jv_str_eq(a, b);
    }

    return a == b;
}


/* JavaScript's === on the values */
int
fg_jv_strict_equal(const fg_jv_t *a, const fg_jv_t *b)
{
    double  x, y;

    if (a->type == FG_JV_BOOL || b->type == FG_JV_BOOL) {
        return a->type == b->type && a->u.b == b->u.b;
    }

    if (a->type != FG_JV_BOOL && b->type != FG_JV_BOOL
        && fg_jv_numeric(a, &x) && fg_jv_numeric(b, &y))
    {
        return x == y;
    }

    if (a->type == FG_JV_STR && b->type == FG_JV_STR) {
        return fg_jv_str_eq(a, b);
    }

    if (a->type <= FG_JV_NONE || b->type <= FG_JV_NONE) {
        return a->type == b->type;
    }

    return a == b;
}


fg_jv_t *
fg_jarg(const fg_jargs_t *a, size_t i, const char *kw)
{
    if (i < a->n_pos) {
        return a->pos[i];
    }

    if (kw && a->kw) {
        return fg_jv_get(a->kw, kw, strlen(kw));
    }

    return NULL;
}
