
/*
 * fairgate: the methods templates call on strings ("x.strip()",
 * "x.split('</think>')") and mappings ("d.get('k')", "d.items()"), and
 * the global functions: raise_exception, namespace, range, strftime_now.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fg_jinja_int.h"


#define FG_JIS(name, lit)  fg_jstr_eq(name, lit)


static int
fg_jmethod_affix(fg_jstr_t s, const fg_jv_t *p, int end)
{
    if (p->type != FG_JV_STR || p->u.s.len > s.len) {
        return 0;
    }

    return memcmp(s.data + (end ? s.len - p->u.s.len : 0), p->u.s.data,
                  p->u.s.len) == 0;
}


/* startswith, endswith: a string or a list of them */
static fg_jv_t *
fg_jmethod_affixes(fg_jctx_t *c, fg_jstr_t s, const fg_jargs_t *a, int end,
    const fg_jnode_t *n)
{
    size_t    i;
    fg_jv_t  *p;

    p = fg_jarg(a, 0, NULL);

    if (p && p->type == FG_JV_STR) {
        return fg_jv_bool(fg_jmethod_affix(s, p, end));
    }

    if (p && p->type == FG_JV_ARRAY) {
        for (i = 0; i < p->u.a.n; i++) {
            if (p->u.a.items[i]->type != FG_JV_STR) {
                break;
            }

            if (fg_jmethod_affix(s, p->u.a.items[i], end)) {
                return &fg_jv_true;
            }
        }

        if (i == p->u.a.n) {
            return &fg_jv_false;
        }
    }

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "startswith and endswith take a "
             "string or a list of strings");
}


static fg_jv_t *
fg_jmethod_str(fg_jctx_t *c, fg_jv_t *v, fg_jstr_t name,
    const fg_jargs_t *a, const fg_jnode_t *n)
{
    fg_jv_t  *x, *y, *k;

    /* the reference's strip family takes no characters: white space */
    if (FG_JIS(name, "strip")) {
        return fg_jv_jstr(c, fg_jstr_trim(c, v->u.s, 1, 1));
    }

    if (FG_JIS(name, "lstrip")) {
        return fg_jv_jstr(c, fg_jstr_trim(c, v->u.s, 1, 0));
    }

    if (FG_JIS(name, "rstrip")) {
        return fg_jv_jstr(c, fg_jstr_trim(c, v->u.s, 0, 1));
    }

    if (FG_JIS(name, "upper")) {
        return fg_jstr_case(c, v->u.s, FG_JCASE_UPPER);
    }

    if (FG_JIS(name, "lower")) {
        return fg_jstr_case(c, v->u.s, FG_JCASE_LOWER);
    }

    if (FG_JIS(name, "title")) {
        return fg_jstr_case(c, v->u.s, FG_JCASE_TITLE);
    }

    if (FG_JIS(name, "capitalize")) {
        return fg_jstr_case(c, v->u.s, FG_JCASE_CAP);
    }

    if (FG_JIS(name, "startswith") || FG_JIS(name, "endswith")) {
        return fg_jmethod_affixes(c, v->u.s, a, FG_JIS(name, "endswith"), n);
    }

    if (FG_JIS(name, "split")) {
        x = fg_jarg(a, 0, "sep");
        y = fg_jarg(a, 1, "maxsplit");

        if (y && y->type != FG_JV_INT) {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "maxsplit must be a number");
        }

        return fg_jstr_split(c, v->u.s, x, y ? y->u.i : -1, n);
    }

    if (FG_JIS(name, "replace")) {
        x = fg_jarg(a, 0, NULL);
        y = fg_jarg(a, 1, NULL);
        k = fg_jarg(a, 2, "count");

        if (x == NULL || y == NULL || x->type != FG_JV_STR
            || y->type != FG_JV_STR
            || (k && k->type != FG_JV_INT && k->type != FG_JV_NONE))
        {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "replace() takes two strings "
                     "and a count");
        }

        return fg_jstr_replace(c, v->u.s, x->u.s, y->u.s,
                               k && k->type == FG_JV_INT ? k->u.i : -1);
    }

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "unknown string method %.*s",
             (int) name.len, name.data);
}


/* dictsort(case_sensitive, by, reverse): the [key, value] pairs sorted */
static fg_jv_t *
fg_jmethod_dictsort(fg_jctx_t *c, fg_jv_t *v, const fg_jargs_t *a,
    const fg_jnode_t *n)
{
    int        by_value;
    size_t     i;
    fg_jv_t   *r, *pair, **keys, *cased, *by, *rev;

    cased = fg_jarg(a, 0, "case_sensitive");
    by = fg_jarg(a, 1, "by");
    rev = fg_jarg(a, 2, "reverse");

    if ((cased && cased->type != FG_JV_BOOL)
        || (rev && rev->type != FG_JV_BOOL)
        || (by && (by->type != FG_JV_STR
                   || (!fg_jstr_eq(by->u.s, "key")
                       && !fg_jstr_eq(by->u.s, "value")))))
    {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "dictsort takes booleans "
                 "case_sensitive and reverse, and by 'key' or 'value'");
    }

    by_value = by && fg_jstr_eq(by->u.s, "value");
    r = fg_jv_array(c, v->u.o.n);
    keys = fg_jctx_alloc(c, (v->u.o.n + 1) * sizeof(fg_jv_t *));

    for (i = 0; i < v->u.o.n; i++) {
        pair = fg_jv_array(c, 2);
        pair->u.a.items[0] = fg_jv_jstr(c, v->u.o.keys[i]);
        pair->u.a.items[1] = v->u.o.vals[i];
        r->u.a.items[i] = pair;
        keys[i] = pair->u.a.items[by_value];
    }

    fg_jv_sort(c, r->u.a.items, keys, v->u.o.n, cased && cased->u.b,
               rev && rev->u.b, n);

    return r;
}


static fg_jv_t *
fg_jmethod_object(fg_jctx_t *c, fg_jv_t *v, fg_jstr_t name,
    const fg_jargs_t *a, const fg_jnode_t *n)
{
    size_t    i;
    fg_jv_t  *r, *pair, *x;

    if (FG_JIS(name, "get")) {
        x = fg_jarg(a, 0, NULL);

        if (x == NULL || x->type != FG_JV_STR) {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "get() takes a string key");
        }

        r = fg_jv_get(v, x->u.s.data, x->u.s.len);

        if (r == NULL) {
            r = fg_jarg(a, 1, NULL);
        }

        return r ? r : &fg_jv_none;
    }

    if (FG_JIS(name, "dictsort")) {
        return fg_jmethod_dictsort(c, v, a, n);
    }

    if (!FG_JIS(name, "items") && !FG_JIS(name, "keys")
        && !FG_JIS(name, "values"))
    {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "unknown mapping method %.*s",
                 (int) name.len, name.data);
    }

    r = fg_jv_array(c, v->u.o.n);

    for (i = 0; i < v->u.o.n; i++) {
        if (FG_JIS(name, "keys")) {
            r->u.a.items[i] = fg_jv_jstr(c, v->u.o.keys[i]);

        } else if (FG_JIS(name, "values")) {
            r->u.a.items[i] = v->u.o.vals[i];

        } else {
            pair = fg_jv_array(c, 2);
            pair->u.a.items[0] = fg_jv_jstr(c, v->u.o.keys[i]);
            pair->u.a.items[1] = v->u.o.vals[i];
            r->u.a.items[i] = pair;
        }
    }

    return r;
}


fg_jv_t *
fg_jmethod(fg_jctx_t *c, fg_jv_t *obj, fg_jstr_t name, const fg_jargs_t *a,
    const fg_jnode_t *n)
{
    if (obj->type == FG_JV_STR) {
        return fg_jmethod_str(c, obj, name, a, n);
    }

    if (obj->type == FG_JV_OBJECT) {
        return fg_jmethod_object(c, obj, name, a, n);
    }

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "a %s has no method %.*s",
             fg_jv_type_name(obj), (int) name.len, name.data);
}


static fg_jv_t *
fg_jglobal_range(fg_jctx_t *c, const fg_jargs_t *a, const fg_jnode_t *n)
{
    size_t    i, k;
    int64_t   start, stop, step, x;
    fg_jv_t  *r;

    for (i = 0; i < a->n_pos; i++) {
        if (a->pos[i]->type != FG_JV_INT) {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "range() takes integers");
        }
    }

    if (a->n_pos == 0 || a->n_pos > 3) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "range() takes 1 to 3 integers");
    }

    start = a->n_pos > 1 ? a->pos[0]->u.i : 0;
    stop = a->n_pos > 1 ? a->pos[1]->u.i : a->pos[0]->u.i;
    step = a->n_pos > 2 ? a->pos[2]->u.i : 1;

    if (step == 0) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "range() step must not be zero");
    }

    k = 0;

    for (x = start; step > 0 ? x < stop : x > stop; ) {
        if (++k > c->lim->max_steps) {
            fg_jfail(c, n, FG_JINJA_ELIMIT, "range() is too long");
        }

        if (__builtin_add_overflow(x, step, &x)) {
            break;
        }
    }

    r = fg_jv_array(c, k);

    for (i = 0, x = start; i < k; i++) {
        r->u.a.items[i] = fg_jv_int(c, x);

        if (i + 1 < k) {
            x += step;
        }
    }

    return r;
}


static fg_jv_t *
fg_jglobal_namespace(fg_jctx_t *c, const fg_jargs_t *a, const fg_jnode_t *n)
{
    size_t    i;
    fg_jv_t  *ns, *src, *pair;

    ns = fg_jv_new(c, FG_JV_NS);

    if (a->n_pos > 1) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "namespace() takes at most one "
                 "positional argument");
    }

    src = a->n_pos ? a->pos[0] : NULL;

    if (src && src->type == FG_JV_OBJECT) {
        for (i = 0; i < src->u.o.n; i++) {
            fg_jv_set(c, ns, src->u.o.keys[i], src->u.o.vals[i]);
        }

    } else if (src && src->type == FG_JV_ARRAY) {
        for (i = 0; i < src->u.a.n; i++) {
            pair = src->u.a.items[i];

            if (pair->type != FG_JV_ARRAY || pair->u.a.n != 2
                || pair->u.a.items[0]->type != FG_JV_STR)
            {
                fg_jfail(c, n, FG_JINJA_ERUNTIME, "namespace() takes pairs "
                         "of a string key and a value");
            }

            fg_jv_set(c, ns, pair->u.a.items[0]->u.s, pair->u.a.items[1]);
        }

    } else if (src) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "namespace() cannot take a %s",
                 fg_jv_type_name(src));
    }

    for (i = 0; a->kw && i < a->kw->u.o.n; i++) {
        fg_jv_set(c, ns, a->kw->u.o.keys[i], a->kw->u.o.vals[i]);
    }

    return ns;
}


/* the reference's strftime: %Y %m %d %b %B %H %M %%, local time */
static fg_jv_t *
fg_jglobal_strftime(fg_jctx_t *c, const fg_jargs_t *a, const fg_jnode_t *n)
{
    char        tmp[32];
    size_t      i;
    fg_jv_t    *f;
    time_t      now;
    struct tm   tm;
    fg_jbuf_t   buf;

    static const char  *months[] = {
        "January", "February", "March", "April", "May", "June", "July",
        "August", "September", "October", "November", "December"
    };

    f = fg_jarg(a, 0, NULL);

    if (f == NULL || f->type != FG_JV_STR) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "strftime_now() takes a format");
    }

    now = time(NULL);
    localtime_r(&now, &tm);
    fg_jbuf_init(&buf);

    for (i = 0; i < f->u.s.len; i++) {
        tmp[0] = '\0';

        if (f->u.s.data[i] == '%' && i + 1 < f->u.s.len) {
            switch (f->u.s.data[i + 1]) {
            case 'Y': snprintf(tmp, sizeof(tmp), "%d", tm.tm_year + 1900);
                      break;
            case 'm': snprintf(tmp, sizeof(tmp), "%02d", tm.tm_mon + 1);
                      break;
            case 'd': snprintf(tmp, sizeof(tmp), "%02d", tm.tm_mday); break;
            case 'H': snprintf(tmp, sizeof(tmp), "%02d", tm.tm_hour); break;
            case 'M': snprintf(tmp, sizeof(tmp), "%02d", tm.tm_min); break;
            case 'b': snprintf(tmp, sizeof(tmp), "%.3s",
                               months[tm.tm_mon]); break;
            case 'B': snprintf(tmp, sizeof(tmp), "%s", months[tm.tm_mon]);
                      break;
            case '%': strcpy(tmp, "%"); break;
            }
        }

        if (tmp[0]) {
            fg_jbuf_lit(c, &buf, tmp);
            i++;

        } else {
            fg_jbuf_add(c, &buf, f->u.s.data + i, 1, NULL, 0);
        }
    }

    return fg_jbuf_value(c, &buf);
}


fg_jv_t *
fg_jglobal(fg_jctx_t *c, fg_jstr_t name, const fg_jargs_t *a,
    const fg_jnode_t *n)
{
    fg_jv_t  *m;

    if (FG_JIS(name, "raise_exception")) {
        m = fg_jarg(a, 0, NULL);

        if (m && m->type == FG_JV_STR) {
            fg_jfail(c, n, FG_JINJA_ERAISED, "%.*s", (int) m->u.s.len,
                     m->u.s.data);
        }

        fg_jfail(c, n, FG_JINJA_ERAISED, "the template raised an error");
    }

    if (FG_JIS(name, "namespace")) {
        return fg_jglobal_namespace(c, a, n);
    }

    if (FG_JIS(name, "range")) {
        return fg_jglobal_range(c, a, n);
    }

    if (FG_JIS(name, "strftime_now")) {
        return fg_jglobal_strftime(c, a, n);
    }

    fg_jfail(c, n, FG_JINJA_ERUNTIME, "unknown function %.*s",
             (int) name.len, name.data);
}
