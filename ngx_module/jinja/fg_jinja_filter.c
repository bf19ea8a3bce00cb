
/*
 * fairgate: filters ("|trim", "|tojson(indent=4)", "|selectattr(...)")
 * and tests ("is defined", "is string"), those of the reference, each on
 * the types it takes there.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_jinja_int.h"


#define FG_JNAME(n, lit)  fg_jstr_eq((n)->name, lit)


/* the arguments of a call evaluated: eval.c's calls and the filters' */
void
fg_jeval_args(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n,
    fg_jargs_t *a)
{
    size_t       i;
    fg_jnode_t  *arg;

    a->pos = fg_jctx_alloc(c, (n->n_args + 1) * sizeof(fg_jv_t *));
    a->n_pos = 0;
    a->kw = NULL;

    for (i = 0; i < n->n_args; i++) {
        arg = n->args[i];

        if (arg->type != FG_JN_KWARG) {
            a->pos[a->n_pos++] = c->eval(c, s, arg);
            continue;
        }

        if (a->kw == NULL) {
            a->kw = fg_jv_object(c);
        }

        if (fg_jv_get(a->kw, arg->name.data, arg->name.len)) {
            fg_jfail(c, arg, FG_JINJA_ERUNTIME, "keyword argument %.*s "
                     "given twice", (int) arg->name.len, arg->name.data);
        }

        fg_jv_set(c, a->kw, arg->name, c->eval(c, s, arg->a));
    }
}


static fg_jv_t *
fg_jfilter_tojson(fg_jctx_t *c, fg_jscope_t *s, fg_jv_t *v,
    const fg_jnode_t *n)
{
    fg_jv_t          *x;
    fg_jargs_t        a;
    fg_jbuf_t         buf;
    fg_jjson_opts_t   o;

    memset(&o, 0, sizeof(o));
    o.indent = -1;
    o.undef_null = 1;

    if (n->op) {
        fg_jeval_args(c, s, n, &a);

        if ((x = fg_jarg(&a, 99, "indent")) && x->type == FG_JV_INT) {
            o.indent = x->u.i;
        }

        if ((x = fg_jarg(&a, 99, "ensure_ascii")) && x->type == FG_JV_BOOL) {
            o.ascii = x->u.b;
        }

        if ((x = fg_jarg(&a, 99, "sort_keys")) && x->type == FG_JV_BOOL) {
            o.sort_keys = x->u.b;
        }

        x = fg_jarg(&a, 99, "separators");

        if (x && x->type == FG_JV_ARRAY && x->u.a.n == 2
            && x->u.a.items[0]->type == FG_JV_STR
            && x->u.a.items[1]->type == FG_JV_STR)
        {
            o.item_sep = &x->u.a.items[0]->u.s;
            o.key_sep = &x->u.a.items[1]->u.s;
        }
    }

    fg_jbuf_init(&buf);
    fg_jbuf_json(c, &buf, v, &o, 0, n);

    return fg_jbuf_value(c, &buf);
}


static fg_jv_t *
fg_jfilter_join(fg_jctx_t *c, fg_jv_t *v, const fg_jargs_t *a,
    const fg_jnode_t *n)
{
    size_t      i;
    fg_jv_t    *sep, *item;
    fg_jbuf_t   buf;

    sep = fg_jarg(a, 0, "separator");

    if (sep && sep->type != FG_JV_STR) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "join's separator must be a "
                 "string");
    }

    fg_jbuf_init(&buf);

    if (v->type == FG_JV_STR) {
        /* its characters joined */
        for (i = 0; i < v->u.s.len; i++) {
            if (i && sep && ((uint8_t) v->u.s.data[i] & 0xc0) != 0x80) {
                fg_jbuf_jstr(c, &buf, sep->u.s);
            }

            fg_jbuf_jstr(c, &buf, fg_jstr_sub(c, v->u.s, i, i + 1));
        }

        return fg_jbuf_value(c, &buf);
    }

    if (v->type != FG_JV_ARRAY) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot join a %s",
                 fg_jv_type_name(v));
    }

    for (i = 0; i < v->u.a.n; i++) {
        if (i && sep) {
            fg_jbuf_jstr(c, &buf, sep->u.s);
        }

        item = v->u.a.items[i];

        if (item->type > FG_JV_NONE) {
            fg_jbuf_scalar(c, &buf, item, n);
        }
    }

    return fg_jbuf_value(c, &buf);
}


/* JavaScript's parseInt and parseFloat: a number at the start, or none */
static fg_jv_t *
fg_jfilter_number(fg_jctx_t *c, fg_jv_t *v, int is_int, fg_jv_t *dflt,
    const fg_jnode_t *n)
{
    char    tmp[64], *end;
    double  f;
    size_t  len;

    switch (v->type) {

    case FG_JV_STR:
        len = v->u.s.len < sizeof(tmp) ? v->u.s.len : sizeof(tmp) - 1;
        memcpy(tmp, v->u.s.data, len);
        tmp[len] = '\0';
        f = is_int ? (double) strtoll(tmp, &end, 10) : strtod(tmp, &end);

        if (end == tmp) {
            return dflt ? dflt : is_int ? fg_jv_int(c, 0)
                                        : fg_jv_float(c, 0);
        }

        return is_int ? fg_jv_whole(c, f) : fg_jv_float(c, f);

    case FG_JV_INT:
        return is_int || n->op ? v : fg_jv_float(c, (double) v->u.i);

    case FG_JV_FLOAT:
        return !is_int || n->op ? v : fg_jv_whole(c, floor(v->u.f));

    case FG_JV_BOOL:
        return is_int ? fg_jv_int(c, v->u.b) : fg_jv_float(c, v->u.b);

    default:
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot make a number of a %s",
                 fg_jv_type_name(v));
    }
}


/* an attribute by a dotted path ("function.name", "0") */
static fg_jv_t *
fg_jattr_path(fg_jctx_t *c, fg_jv_t *v, fg_jstr_t path)
{
    size_t       i, from;
    int64_t      k;
    fg_jstr_t    part;

    from = 0;

    for (i = 0; i <= path.len; i++) {
        if (i < path.len && path.data[i] != '.') {
            continue;
        }

        part = fg_jstr_sub(c, path, from, i);
        from = i + 1;

        if (v->type == FG_JV_OBJECT || v->type == FG_JV_NS) {
            v = fg_jv_get(v, part.data, part.len);
            v = v ? v : &fg_jv_undef;

        } else if (v->type == FG_JV_ARRAY && part.len
                   && part.data[0] >= '0' && part.data[0] <= '9')
        {
            k = strtoll(part.data, NULL, 10);
            v = (size_t) k < v->u.a.n ? v->u.a.items[k] : &fg_jv_undef;

        } else {
            return &fg_jv_undef;
        }
    }

    return v;
}


static fg_jv_t *
fg_jfilter_select(fg_jctx_t *c, fg_jscope_t *s, fg_jv_t *v,
    const fg_jnode_t *n, int select)
{
    int        ok;
    size_t     i, k;
    fg_jv_t   *r, *attr, *test, *arg, *x;

    for (i = 0; i < n->n_args; i++) {
        if (n->args[i]->type != FG_JN_LITERAL
            || n->args[i]->value->type != FG_JV_STR)
        {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "the arguments of selectattr "
                     "and rejectattr must be strings");
        }
    }

    if (n->n_args == 0) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "selectattr needs an attribute");
    }

    attr = c->eval(c, s, n->args[0]);
    test = n->n_args > 1 ? c->eval(c, s, n->args[1]) : NULL;
    arg = n->n_args > 2 ? c->eval(c, s, n->args[2]) : &fg_jv_undef;

    r = fg_jv_array(c, v->u.a.n);
    k = 0;

    for (i = 0; i < v->u.a.n; i++) {
        x = v->u.a.items[i];

        if (x->type != FG_JV_OBJECT && x->type != FG_JV_NS) {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "selectattr and rejectattr "
                     "take a list of mappings");
        }

        x = fg_jv_get(x, attr->u.s.data, attr->u.s.len);

        ok = x == NULL ? 0
             : test ? fg_jtest_named(c, test->u.s, x, arg, n)
             : fg_jv_truthy(x);

        if (ok == select) {
            r->u.a.items[k++] = v->u.a.items[i];
        }
    }

    r->u.a.n = k;

    return r;
}


static fg_jv_t *
fg_jfilter_map(fg_jctx_t *c, fg_jv_t *v, const fg_jargs_t *a,
    const fg_jnode_t *n)
{
    size_t    i;
    fg_jv_t  *r, *attr, *dflt, *x;

    attr = a->kw ? fg_jv_get(a->kw, "attribute", 9) : NULL;

    if (attr == NULL || attr->type != FG_JV_STR) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "map is supported with a string "
                 "attribute= only");
    }

    dflt = fg_jv_get(a->kw, "default", 7);
    r = fg_jv_array(c, v->u.a.n);

    for (i = 0; i < v->u.a.n; i++) {
        x = v->u.a.items[i];

        if (x->type != FG_JV_OBJECT && x->type != FG_JV_NS) {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "map takes a list of "
                     "mappings");
        }

        x = fg_jattr_path(c, x, attr->u.s);
        r->u.a.items[i] = x->type == FG_JV_UNDEF && dflt ? dflt : x;
    }

    return r;
}


static fg_jv_t *
fg_jfilter_indent(fg_jctx_t *c, fg_jv_t *v, const fg_jargs_t *a)
{
    size_t      i, from, line;
    int64_t     k, width;
    fg_jv_t    *x;
    fg_jbuf_t   buf;
    int         first, blank;

    x = fg_jarg(a, 0, "width");
    width = x && x->type == FG_JV_INT ? x->u.i : 4;
    x = fg_jarg(a, 1, "first");
    first = x ? fg_jv_truthy(x) : 0;
    x = fg_jarg(a, 2, "blank");
    blank = x ? fg_jv_truthy(x) : 0;

    fg_jbuf_init(&buf);
    from = 0;
    line = 0;

    for (i = 0; i <= v->u.s.len; i++) {
        if (i < v->u.s.len && v->u.s.data[i] != '\n') {
            continue;
        }

        if ((first || line > 0) && (blank || i > from)) {
            for (k = 0; k < width; k++) {
                fg_jbuf_lit(c, &buf, " ");
            }
        }

        fg_jbuf_jstr(c, &buf, fg_jstr_sub(c, v->u.s, from,
                                          i < v->u.s.len ? i + 1 : i));
        from = i + 1;
        line++;
    }

    return fg_jbuf_value(c, &buf);
}


/* sort(reverse, case_sensitive, attribute): by the items, or by an
 * attribute of each ("name", "function.name", "0") */
static fg_jv_t *
fg_jfilter_sort(fg_jctx_t *c, fg_jv_t *v, const fg_jargs_t *a,
    const fg_jnode_t *n)
{
    char       num[32];
    size_t     i;
    fg_jv_t   *r, **keys, *rev, *cased, *attr;
    fg_jstr_t  path;

    rev = fg_jarg(a, 0, "reverse");
    cased = fg_jarg(a, 1, "case_sensitive");
    attr = fg_jarg(a, 2, "attribute");

    if ((rev && rev->type != FG_JV_BOOL)
        || (cased && cased->type != FG_JV_BOOL)
        || (attr && attr->type != FG_JV_STR && attr->type != FG_JV_INT
            && attr->type != FG_JV_NONE))
    {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "sort takes booleans reverse and "
                 "case_sensitive, and an attribute");
    }

    r = fg_jv_array(c, v->u.a.n);
    keys = fg_jctx_alloc(c, (v->u.a.n + 1) * sizeof(fg_jv_t *));
    memcpy(r->u.a.items, v->u.a.items, v->u.a.n * sizeof(fg_jv_t *));

    if (attr && attr->type == FG_JV_INT) {
        path.len = snprintf(num, sizeof(num), "%lld",
                            (long long) attr->u.i);
        path.data = num;
        path.user = NULL;

    } else if (attr && attr->type == FG_JV_STR) {
        path = attr->u.s;
    }

    for (i = 0; i < v->u.a.n; i++) {
        keys[i] = attr && attr->type != FG_JV_NONE
                  ? fg_jattr_path(c, v->u.a.items[i], path)
                  : v->u.a.items[i];
    }

    fg_jv_sort(c, r->u.a.items, keys, v->u.a.n, cased && cased->u.b,
               rev && rev->u.b, n);

    return r;
}


static fg_jv_t *
fg_jfilter_unique(fg_jctx_t *c, fg_jv_t *v)
{
    size_t    i, k, j;
    fg_jv_t  *r;

    r = fg_jv_array(c, v->u.a.n);
    k = 0;

    for (i = 0; i < v->u.a.n; i++) {
        for (j = 0; j < k; j++) {
            if (fg_jv_strict_equal(r->u.a.items[j], v->u.a.items[i])) {
                break;
            }
        }

        if (j == k) {
            r->u.a.items[k++] = v->u.a.items[i];
        }
    }

    r->u.a.n = k;

    return r;
}


/* a filter with arguments: "|default('x')", "|join(', ')" ... */
static fg_jv_t *
fg_jfilter_called(fg_jctx_t *c, fg_jscope_t *s, fg_jv_t *v,
    const fg_jnode_t *n)
{
    fg_jv_t     *x, *y;
    fg_jargs_t   a;

    if (FG_JNAME(n, "selectattr") || FG_JNAME(n, "rejectattr")) {
        if (v->type != FG_JV_ARRAY) {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot select from a %s",
                     fg_jv_type_name(v));
        }

        return fg_jfilter_select(c, s, v, n, FG_JNAME(n, "selectattr"));
    }

    fg_jeval_args(c, s, n, &a);

    if (FG_JNAME(n, "join")) {
        return fg_jfilter_join(c, v, &a, n);
    }

    if (FG_JNAME(n, "int") || FG_JNAME(n, "float")) {
        return fg_jfilter_number(c, v, FG_JNAME(n, "int"),
                                 fg_jarg(&a, 0, "default"), n);
    }

    if (FG_JNAME(n, "default")) {
        x = fg_jarg(&a, 0, NULL);
        y = fg_jarg(&a, 1, "boolean");

        if (v->type == FG_JV_UNDEF || (y && fg_jv_truthy(y)
                                       && !fg_jv_truthy(v)))
        {
            return x ? x : fg_jv_str(c, "", 0, 0);
        }

        return v;
    }

    if (v->type == FG_JV_ARRAY && FG_JNAME(n, "map")) {
        return fg_jfilter_map(c, v, &a, n);
    }

    if (v->type == FG_JV_ARRAY && FG_JNAME(n, "sort")) {
        return fg_jfilter_sort(c, v, &a, n);
    }

    if (v->type == FG_JV_STR && FG_JNAME(n, "indent")) {
        return fg_jfilter_indent(c, v, &a);
    }

    if (v->type == FG_JV_STR || v->type == FG_JV_OBJECT) {
        return fg_jmethod(c, v, n->name, &a, n);
    }

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "unknown filter %.*s for a %s",
             (int) n->name.len, n->name.data, fg_jv_type_name(v));
}


static fg_jv_t *
fg_jfilter_array(fg_jctx_t *c, fg_jv_t *v, const fg_jnode_t *n)
{
    size_t    i;
    fg_jv_t  *r;

    if (FG_JNAME(n, "list")) {
        return v;
    }

    if (FG_JNAME(n, "first")) {
        return v->u.a.n ? v->u.a.items[0] : &fg_jv_undef;
    }

    if (FG_JNAME(n, "last")) {
        return v->u.a.n ? v->u.a.items[v->u.a.n - 1] : &fg_jv_undef;
    }

    if (FG_JNAME(n, "length")) {
        return fg_jv_int(c, v->u.a.n);
    }

    if (FG_JNAME(n, "reverse")) {
        r = fg_jv_array(c, v->u.a.n);

        for (i = 0; i < v->u.a.n; i++) {
            r->u.a.items[i] = v->u.a.items[v->u.a.n - 1 - i];
        }

        return r;
    }

    if (FG_JNAME(n, "join") || FG_JNAME(n, "sort")) {
        fg_jargs_t  a;

        memset(&a, 0, sizeof(a));
        return FG_JNAME(n, "join") ? fg_jfilter_join(c, v, &a, n)
                                   : fg_jfilter_sort(c, v, &a, n);
    }

    if (FG_JNAME(n, "unique")) {
        return fg_jfilter_unique(c, v);
    }

    if (FG_JNAME(n, "string")) {
        fg_jbuf_t  buf;

        fg_jbuf_init(&buf);
        fg_jbuf_value_text(c, &buf, v);
        return fg_jbuf_value(c, &buf);
    }

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "unknown filter %.*s for a list",
             (int) n->name.len, n->name.data);
}


static fg_jv_t *
fg_jfilter_string(fg_jctx_t *c, fg_jv_t *v, const fg_jnode_t *n)
{
    if (FG_JNAME(n, "length")) {
        return fg_jv_int(c, fg_jstr_units(v->u.s));
    }

    if (FG_JNAME(n, "upper")) {
        return fg_jstr_case(c, v->u.s, FG_JCASE_UPPER);
    }

    if (FG_JNAME(n, "lower")) {
        return fg_jstr_case(c, v->u.s, FG_JCASE_LOWER);
    }

    if (FG_JNAME(n, "title")) {
        return fg_jstr_case(c, v->u.s, FG_JCASE_TITLE);
    }

    if (FG_JNAME(n, "capitalize")) {
        return fg_jstr_case(c, v->u.s, FG_JCASE_CAP);
    }

    if (FG_JNAME(n, "trim")) {
        return fg_jv_jstr(c, fg_jstr_trim(c, v->u.s, 1, 1));
    }

    if (FG_JNAME(n, "indent")) {
        fg_jargs_t  a;

        memset(&a, 0, sizeof(a));
        return fg_jfilter_indent(c, v, &a);
    }

    if (FG_JNAME(n, "join") || FG_JNAME(n, "string")) {
        return v;
    }

    if (FG_JNAME(n, "int") || FG_JNAME(n, "float")) {
        return fg_jfilter_number(c, v, FG_JNAME(n, "int"), NULL, n);
    }

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "unknown filter %.*s for a string",
             (int) n->name.len, n->name.data);
}


static fg_jv_t *
fg_jfilter_scalar(fg_jctx_t *c, fg_jv_t *v, const fg_jnode_t *n)
{
    fg_jbuf_t  buf;

    if (FG_JNAME(n, "string")) {
        fg_jbuf_init(&buf);
        fg_jbuf_value_text(c, &buf, v);
        return fg_jbuf_value(c, &buf);
    }

    if (FG_JNAME(n, "int") || FG_JNAME(n, "float")) {
        return fg_jfilter_number(c, v, FG_JNAME(n, "int"), NULL, n);
    }

    if (FG_JNAME(n, "abs") && v->type == FG_JV_INT) {
        return v->u.i < 0 ? fg_jv_whole(c, -(double) v->u.i) : v;
    }

    if (FG_JNAME(n, "abs") && v->type == FG_JV_FLOAT) {
        return fg_jv_float(c, fabs(v->u.f));
    }

    if (FG_JNAME(n, "bool") && v->type == FG_JV_BOOL) {
        return v;
    }

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "unknown filter %.*s for a %s",
             (int) n->name.len, n->name.data, fg_jv_type_name(v));
}


fg_jv_t *
fg_jfilter(fg_jctx_t *c, fg_jscope_t *s, fg_jv_t *v, const fg_jnode_t *n)
{
    fg_jv_t     *r;
    fg_jargs_t   a;

    if (FG_JNAME(n, "safe")) {
        return v;
    }

    if (FG_JNAME(n, "tojson")) {
        return fg_jfilter_tojson(c, s, v, n);
    }

    if (n->op) {
        return fg_jfilter_called(c, s, v, n);
    }

    switch (v->type) {

    case FG_JV_ARRAY:
        return fg_jfilter_array(c, v, n);

    case FG_JV_STR:
        return fg_jfilter_string(c, v, n);

    case FG_JV_INT:
    case FG_JV_FLOAT:
    case FG_JV_BOOL:
        return fg_jfilter_scalar(c, v, n);

    case FG_JV_OBJECT:
        if (FG_JNAME(n, "length")) {
            return fg_jv_int(c, v->u.o.n);
        }

        memset(&a, 0, sizeof(a));
        r = fg_jmethod(c, v, n->name, &a, n);
        return r;

    default:
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot apply the filter %.*s to "
                 "a %s", (int) n->name.len, n->name.data,
                 fg_jv_type_name(v));
    }
}


static int
fg_jtest_case(fg_jctx_t *c, fg_jv_t *v, int how)
{
    fg_jv_t  *x;

    if (v->type != FG_JV_STR) {
        return 0;
    }

    x = fg_jstr_case(c, v->u.s, how);

    return memcmp(x->u.s.data, v->u.s.data, v->u.s.len) == 0;
}


int
fg_jtest_named(fg_jctx_t *c, fg_jstr_t name, fg_jv_t *v, fg_jv_t *arg,
    const fg_jnode_t *n)
{
#define FG_JT(lit)  fg_jstr_eq(name, lit)

    if (FG_JT("defined")) return v->type != FG_JV_UNDEF;
    if (FG_JT("undefined")) return v->type == FG_JV_UNDEF;
    if (FG_JT("none")) return v->type == FG_JV_NONE;
    if (FG_JT("string")) return v->type == FG_JV_STR;
    if (FG_JT("boolean")) return v->type == FG_JV_BOOL;
    if (FG_JT("true")) return v->type == FG_JV_BOOL && v->u.b;
    if (FG_JT("false")) return v->type == FG_JV_BOOL && !v->u.b;
    if (FG_JT("integer")) return v->type == FG_JV_INT;
    if (FG_JT("number")) {
        return v->type == FG_JV_INT || v->type == FG_JV_FLOAT;
    }
    if (FG_JT("mapping")) return v->type == FG_JV_OBJECT;
    if (FG_JT("iterable")) {
        return v->type == FG_JV_ARRAY || v->type == FG_JV_STR;
    }
    if (FG_JT("sequence")) {
        return v->type == FG_JV_ARRAY || v->type == FG_JV_STR
               || v->type == FG_JV_OBJECT;
    }
    if (FG_JT("callable")) return v->type == FG_JV_MACRO;
    if (FG_JT("lower")) return fg_jtest_case(c, v, FG_JCASE_LOWER);
    if (FG_JT("upper")) return fg_jtest_case(c, v, FG_JCASE_UPPER);
    if (FG_JT("equalto") || FG_JT("eq")) {
        return fg_jv_strict_equal(v, arg ? arg : &fg_jv_undef);
    }

    if ((FG_JT("odd") || FG_JT("even")) && v->type == FG_JV_INT) {
        return (v->u.i % 2 != 0) == FG_JT("odd");
    }

#undef FG_JT

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "unknown test %.*s for a %s",
             (int) name.len, name.data, fg_jv_type_name(v));
}


fg_jv_t *
fg_jtest(fg_jctx_t *c, fg_jv_t *v, const fg_jnode_t *n)
{
    int  r;

    r = fg_jtest_named(c, n->name, v, NULL, n);

    return fg_jv_bool(n->op ? !r : r);
}
