
/*
 * fairgate: expressions evaluated, with the reference's semantics:
 * JavaScript's loose "==", "+" joining strings, "in" over lists,
 * strings and mappings, names looked up from the inner scope out, a
 * missing attribute undefined rather than an error.
 */


#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg_jinja_int.h"


fg_jv_t *
fg_jlookup(fg_jscope_t *s, fg_jstr_t name)
{
    fg_jv_t  *v;

    for ( /* void */ ; s; s = s->parent) {
        v = fg_jv_get(s->vars, name.data, name.len);

        if (v) {
            return v;
        }
    }

    if (fg_jstr_eq(name, "true") || fg_jstr_eq(name, "True")) {
        return &fg_jv_true;
    }

    if (fg_jstr_eq(name, "false") || fg_jstr_eq(name, "False")) {
        return &fg_jv_false;
    }

    if (fg_jstr_eq(name, "none") || fg_jstr_eq(name, "None")) {
        return &fg_jv_none;
    }

    return NULL;
}


static fg_jv_t *
fg_jeval_in(fg_jctx_t *c, const fg_jv_t *a, const fg_jv_t *b,
    const fg_jnode_t *n)
{
    size_t       i;
    const char  *p;

    if (b->type == FG_JV_ARRAY) {
        for (i = 0; i < b->u.a.n; i++) {
            if (fg_jv_strict_equal(a, b->u.a.items[i])) {
                return &fg_jv_true;
            }
        }

        return &fg_jv_false;
    }

    if (a->type == FG_JV_STR && b->type == FG_JV_STR) {
        if (a->u.s.len == 0) {
            return &fg_jv_true;
        }

        for (p = b->u.s.data;
             p + a->u.s.len <= b->u.s.data + b->u.s.len;
             p++)
        {
            if (memcmp(p, a->u.s.data, a->u.s.len) == 0) {
                return &fg_jv_true;
            }
        }

        return &fg_jv_false;
    }

    if (a->type == FG_JV_STR && b->type == FG_JV_OBJECT) {
        return fg_jv_bool(fg_jv_get(b, a->u.s.data, a->u.s.len) != NULL);
    }

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot test whether a %s is in a %s",
             fg_jv_type_name(a), fg_jv_type_name(b));
}


static fg_jv_t *
fg_jeval_arith(fg_jctx_t *c, int op, const fg_jv_t *a, const fg_jv_t *b,
    const fg_jnode_t *n)
{
    int      is_float;
    double   x, y, r;
    int64_t  i;

    is_float = a->type == FG_JV_FLOAT || b->type == FG_JV_FLOAT;
    x = a->type == FG_JV_FLOAT ? a->u.f : (double) a->u.i;
    y = b->type == FG_JV_FLOAT ? b->u.f : (double) b->u.i;

    switch (op) {
    case FG_JOP_LT: return fg_jv_bool(x < y);
    case FG_JOP_GT: return fg_jv_bool(x > y);
    case FG_JOP_LE: return fg_jv_bool(x <= y);
    case FG_JOP_GE: return fg_jv_bool(x >= y);
    case FG_JOP_DIV: return fg_jv_float(c, x / y);
    }

    if (!is_float) {
        /* past int64: the double JavaScript would have */
        switch (op) {
        case FG_JOP_ADD:
            return __builtin_add_overflow(a->u.i, b->u.i, &i)
                   ? fg_jv_float(c, x + y) : fg_jv_int(c, i);
        case FG_JOP_SUB:
            return __builtin_sub_overflow(a->u.i, b->u.i, &i)
                   ? fg_jv_float(c, x - y) : fg_jv_int(c, i);
        case FG_JOP_MUL:
            return __builtin_mul_overflow(a->u.i, b->u.i, &i)
                   ? fg_jv_float(c, x * y) : fg_jv_int(c, i);
        }

        if (b->u.i == 0 && (op == FG_JOP_MOD || op == FG_JOP_FLOORDIV)) {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "integer division by zero");
        }
    }

    switch (op) {
    case FG_JOP_ADD: r = x + y; break;
    case FG_JOP_SUB: r = x - y; break;
    case FG_JOP_MUL: r = x * y; break;
    case FG_JOP_FLOORDIV: r = floor(x / y); break;
    case FG_JOP_MOD: r = fmod(x, y); break;
    default:
        r = pow(x, y);

        if (!isfinite(r)) {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "the power is not finite");
        }

        is_float = is_float || y < 0;
    }

    return is_float ? fg_jv_float(c, r) : fg_jv_whole(c, r);
}


static fg_jv_t *
fg_jeval_binary(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n)
{
    fg_jv_t    *a, *b, *r;
    fg_jbuf_t   buf;

    a = fg_jeval(c, s, n->a);

    if (n->op == FG_JOP_AND) {
        return fg_jv_truthy(a) ? fg_jeval(c, s, n->b) : a;
    }

    if (n->op == FG_JOP_OR) {
        return fg_jv_truthy(a) ? a : fg_jeval(c, s, n->b);
    }

    b = fg_jeval(c, s, n->b);

    switch (n->op) {
    case FG_JOP_EQ: return fg_jv_bool(fg_jv_equal(a, b));
    case FG_JOP_NE: return fg_jv_bool(!fg_jv_equal(a, b));
    }

    if (b->type == FG_JV_UNDEF
        && (n->op == FG_JOP_IN || n->op == FG_JOP_NOT_IN))
    {
        return fg_jv_bool(n->op == FG_JOP_NOT_IN);
    }

    if (a->type <= FG_JV_NONE || b->type <= FG_JV_NONE) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot compute with %s",
                 a->type <= FG_JV_NONE ? fg_jv_type_name(a)
                                       : fg_jv_type_name(b));
    }

    if (n->op == FG_JOP_IN || n->op == FG_JOP_NOT_IN) {
        r = fg_jeval_in(c, a, b, n);
        return n->op == FG_JOP_IN ? r : fg_jv_bool(!r->u.b);
    }

    if (n->op == FG_JOP_CONCAT
        || (n->op == FG_JOP_ADD
            && (a->type == FG_JV_STR || b->type == FG_JV_STR)))
    {
        fg_jbuf_init(&buf);
        fg_jbuf_scalar(c, &buf, a, n);
        fg_jbuf_scalar(c, &buf, b, n);
        return fg_jbuf_value(c, &buf);
    }

    if ((a->type == FG_JV_INT || a->type == FG_JV_FLOAT)
        && (b->type == FG_JV_INT || b->type == FG_JV_FLOAT))
    {
        return fg_jeval_arith(c, n->op, a, b, n);
    }

    if (n->op == FG_JOP_ADD && a->type == FG_JV_ARRAY
        && b->type == FG_JV_ARRAY)
    {
        r = fg_jv_array(c, a->u.a.n + b->u.a.n);
        memcpy(r->u.a.items, a->u.a.items, a->u.a.n * sizeof(fg_jv_t *));
        memcpy(r->u.a.items + a->u.a.n, b->u.a.items,
               b->u.a.n * sizeof(fg_jv_t *));
        return r;
    }

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "unsupported operation between a %s "
             "and a %s", fg_jv_type_name(a), fg_jv_type_name(b));
}


static fg_jv_t *
fg_jeval_unary(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n)
{
    fg_jv_t  *a;

    a = fg_jeval(c, s, n->a);

    if (n->op == FG_JOP_NOT) {
        return fg_jv_bool(!fg_jv_truthy(a));
    }

    switch (a->type) {
    case FG_JV_INT:
        return n->op == FG_JOP_NEG ? fg_jv_whole(c, -(double) a->u.i)
                                   : a;
    case FG_JV_BOOL:
        return fg_jv_int(c, n->op == FG_JOP_NEG ? -a->u.b : a->u.b);
    case FG_JV_FLOAT:
        return fg_jv_float(c, n->op == FG_JOP_NEG ? -a->u.f : a->u.f);
    default:
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot negate a %s",
                 fg_jv_type_name(a));
    }
}


static fg_jv_t *
fg_jeval_member(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n)
{
    int64_t    i;
    fg_jv_t   *obj, *key, *v;

    obj = fg_jeval(c, s, n->a);

    if (n->op) {
        key = fg_jeval(c, s, n->b);

    } else if (n->b->type == FG_JN_LITERAL) {
        key = n->b->value;

    } else {
        key = fg_jv_jstr(c, n->b->name);
    }

    if (obj->type == FG_JV_OBJECT || obj->type == FG_JV_NS) {
        if (key->type != FG_JV_STR) {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "a mapping's key must be a "
                     "string, not a %s", fg_jv_type_name(key));
        }

        v = fg_jv_get(obj, key->u.s.data, key->u.s.len);

        return v ? v : &fg_jv_undef;
    }

    if ((obj->type == FG_JV_ARRAY || obj->type == FG_JV_STR)
        && key->type == FG_JV_INT)
    {
        i = key->u.i;

        if (obj->type == FG_JV_STR) {
            return fg_jstr_index(c, obj->u.s, i);
        }

        if (i < 0) {
            i += obj->u.a.n;
        }

        return i >= 0 && (size_t) i < obj->u.a.n ? obj->u.a.items[i]
                                                 : &fg_jv_undef;
    }

    if (key->type != FG_JV_STR) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot index a %s with a %s",
                 fg_jv_type_name(obj), fg_jv_type_name(key));
    }

    if (fg_jstr_eq(key->u.s, "length")) {
        if (obj->type == FG_JV_ARRAY) {
            return fg_jv_int(c, obj->u.a.n);
        }

        if (obj->type == FG_JV_STR) {
            return fg_jv_int(c, fg_jstr_units(obj->u.s));
        }
    }

    return &fg_jv_undef;
}


static fg_jv_t *
fg_jeval_call(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n)
{
    fg_jv_t           *f, *obj;
    fg_jargs_t         a;
    const fg_jnode_t  *callee;

    fg_jeval_args(c, s, n, &a);
    callee = n->a;

    if (callee->type == FG_JN_NAME) {
        f = fg_jlookup(s, callee->name);

        if (f == NULL) {
            return fg_jglobal(c, callee->name, &a, n);
        }

    } else if (callee->type == FG_JN_MEMBER && callee->op == 0
               && callee->b->type == FG_JN_NAME)
    {
        obj = fg_jeval(c, s, callee->a);

        f = (obj->type == FG_JV_OBJECT || obj->type == FG_JV_NS)
            ? fg_jv_get(obj, callee->b->name.data, callee->b->name.len)
            : NULL;

        if (f == NULL) {
            return fg_jmethod(c, obj, callee->b->name, &a, n);
        }

    } else {
        f = fg_jeval(c, s, callee);
    }

    if (f->type != FG_JV_MACRO) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot call a %s",
                 fg_jv_type_name(f));
    }

    return c->call(c, s, f, &a, n);
}


static fg_jv_t *
fg_jeval_display(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n)
{
    size_t    i;
    fg_jv_t  *v, *k;

    if (n->type != FG_JN_DICT) {
        v = fg_jv_array(c, n->n_args);

        for (i = 0; i < n->n_args; i++) {
            v->u.a.items[i] = fg_jeval(c, s, n->args[i]);
        }

        return v;
    }

    v = fg_jv_object(c);

    for (i = 0; i + 1 < n->n_args; i += 2) {
        k = fg_jeval(c, s, n->args[i]);

        if (k->type != FG_JV_STR) {
            fg_jfail(c, n->args[i], FG_JINJA_ERUNTIME, "a mapping's key "
                     "must be a string, not a %s", fg_jv_type_name(k));
        }

        fg_jv_set(c, v, k->u.s, fg_jeval(c, s, n->args[i + 1]));
    }

    return v;
}


fg_jv_t *
fg_jeval(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n)
{
    fg_jv_t  *v;

    if (n == NULL) {
        return &fg_jv_undef;
    }

    if (++c->steps > c->lim->max_steps) {
        fg_jfail(c, n, FG_JINJA_ELIMIT, "the template took more than %llu "
                 "steps", (unsigned long long) c->lim->max_steps);
    }

    switch (n->type) {

    case FG_JN_LITERAL:
        return n->value;

    case FG_JN_NAME:
        v = fg_jlookup(s, n->name);
        return v ? v : &fg_jv_undef;

    case FG_JN_MEMBER:
        return fg_jeval_member(c, s, n);

    case FG_JN_SLICE:
        return fg_jslice(c, fg_jeval(c, s, n->a),
                         fg_jeval(c, s, n->n_args > 0 ? n->args[0] : NULL),
                         fg_jeval(c, s, n->n_args > 1 ? n->args[1] : NULL),
                         fg_jeval(c, s, n->n_args > 2 ? n->args[2] : NULL),
                         n);

    case FG_JN_CALL:
        return fg_jeval_call(c, s, n);

    case FG_JN_FILTER:
        return fg_jfilter(c, s, fg_jeval(c, s, n->a), n);

    case FG_JN_TEST:
        return fg_jtest(c, fg_jeval(c, s, n->a), n);

    case FG_JN_BINARY:
        return fg_jeval_binary(c, s, n);

    case FG_JN_UNARY:
        return fg_jeval_unary(c, s, n);

    case FG_JN_TERNARY:
        return fg_jv_truthy(fg_jeval(c, s, n->a)) ? fg_jeval(c, s, n->b)
                                                   : fg_jeval(c, s, n->c);

    case FG_JN_SELECT:
        return fg_jv_truthy(fg_jeval(c, s, n->b)) ? fg_jeval(c, s, n->a)
                                                   : &fg_jv_undef;

    case FG_JN_LIST:
    case FG_JN_TUPLE:
    case FG_JN_DICT:
        return fg_jeval_display(c, s, n);

    default:
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "not an expression");
    }
}
