
/*
 * fairgate: texts a render writes: the growing buffers of the output and
 * of gathered texts (each byte marked when it came from the request),
 * and values written as the reference writes them: numbers as
 * JavaScript prints them, lists and mappings as its JSON.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_jinja_int.h"


void
fg_jbuf_init(fg_jbuf_t *b)
{
    memset(b, 0, sizeof(fg_jbuf_t));
}


static void
fg_jbuf_grow(fg_jctx_t *c, fg_jbuf_t *b, size_t more)
{
    size_t    cap;
    char     *data;
    uint8_t  *user;

    if (b == c->out && b->len + more > c->lim->max_output) {
        fg_jfail(c, NULL, FG_JINJA_ELIMIT,
                 "the output is longer than %zu bytes", c->lim->max_output);
    }

    if (b->len + more <= b->cap) {
        return;
    }

    cap = b->cap ? 2 * b->cap : 256;

    while (cap < b->len + more) {
        cap *= 2;
    }

    data = fg_jctx_alloc(c, cap + 1);
    user = fg_jctx_alloc(c, cap);

    if (b->len) {
        memcpy(data, b->data, b->len);
        memcpy(user, b->user, b->len);
    }

    b->data = data;
    b->user = user;
    b->cap = cap;
}


void
fg_jbuf_add(fg_jctx_t *c, fg_jbuf_t *b, const char *s, size_t len,
    const uint8_t *user, int all_user)
{
    if (len == 0) {
        return;
    }

    fg_jbuf_grow(c, b, len);
    memcpy(b->data + b->len, s, len);

    if (user) {
        memcpy(b->user + b->len, user, len);
        b->any_user = 1;

    } else {
        memset(b->user + b->len, all_user ? 1 : 0, len);
        b->any_user |= all_user ? 1 : 0;
    }

    b->len += len;
}


void
fg_jbuf_lit(fg_jctx_t *c, fg_jbuf_t *b, const char *s)
{
    fg_jbuf_add(c, b, s, strlen(s), NULL, 0);
}


void
fg_jbuf_jstr(fg_jctx_t *c, fg_jbuf_t *b, fg_jstr_t s)
{
    fg_jbuf_add(c, b, s.data, s.len, s.user, 0);
}


fg_jv_t *
fg_jbuf_value(fg_jctx_t *c, fg_jbuf_t *b)
{
    fg_jstr_t  s;

    s.data = b->data ? b->data : "";
    s.len = b->len;
    s.user = b->any_user ? b->user : NULL;

    return fg_jv_jstr(c, s);
}


/*
 * A double as JavaScript's Number.prototype.toString writes it: the
 * shortest digits that read back the same, plain from 1e-7 to 1e21,
 * else with an exponent ("1e+21", "1.5e-7").
 */
void
fg_jbuf_number(fg_jctx_t *c, fg_jbuf_t *b, double f)
{
    int     p, exp, nd, i;
    char    tmp[64], digits[32], out[64], *e, *o;

    if (isnan(f)) {
        fg_jbuf_lit(c, b, "NaN");
        return;
    }

    if (isinf(f)) {
        fg_jbuf_lit(c, b, f < 0 ? "-Infinity" : "Infinity");
        return;
    }

    if (f == 0) {
        fg_jbuf_lit(c, b, "0");
        return;
    }

    for (p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof(tmp), "%.*e", p - 1, f);

        if (strtod(tmp, NULL) == f) {
            break;
        }
    }

    o = out;
    e = strchr(tmp, 'e');
    exp = atoi(e + 1);

    /* the digits alone, without sign, point or exponent */
    nd = 0;

    for (i = (tmp[0] == '-'); tmp + i < e; i++) {
        if (tmp[i] != '.') {
            digits[nd++] = tmp[i];
        }
    }

    while (nd > 1 && digits[nd - 1] == '0') {
        nd--;
    }

    if (f < 0) {
        *o++ = '-';
    }

    if (exp >= 21 || exp < -7) {
        *o++ = digits[0];

        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, nd - 1);
            o += nd - 1;
        }

        o += sprintf(o, "e%c%d", exp < 0 ? '-' : '+', abs(exp));

    } else if (exp < 0) {
        *o++ = '0';
        *o++ = '.';

        for (i = -1; i > exp; i--) {
            *o++ = '0';
        }

        memcpy(o, digits, nd);
        o += nd;

    } else {
        for (i = 0; i <= exp || i < nd; i++) {
            if (i == exp + 1) {
                *o++ = '.';
            }

            *o++ = i < nd ? digits[i] : '0';
        }
    }

    fg_jbuf_add(c, b, out, o - out, NULL, 0);
}


/* a value as JavaScript's String() of it: the operands of "+" and "~" */
void
fg_jbuf_scalar(fg_jctx_t *c, fg_jbuf_t *b, const fg_jv_t *v,
    const fg_jnode_t *n)
{
    char  tmp[32];

    switch (v->type) {

    case FG_JV_STR:
        fg_jbuf_jstr(c, b, v->u.s);
        return;

    case FG_JV_INT:
        snprintf(tmp, sizeof(tmp), "%lld", (long long) v->u.i);
        fg_jbuf_lit(c, b, tmp);
        return;

    case FG_JV_FLOAT:
        fg_jbuf_number(c, b, v->u.f);
        return;

    case FG_JV_BOOL:
        fg_jbuf_lit(c, b, v->u.b ? "true" : "false");
        return;

    default:
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot join a %s to a string",
                 fg_jv_type_name(v));
    }
}


/* a value as the output writes it ({{ v }}, the string filter) */
void
fg_jbuf_value_text(fg_jctx_t *c, fg_jbuf_t *b, const fg_jv_t *v)
{
    fg_jjson_opts_t  o;

    switch (v->type) {

    case FG_JV_UNDEF:
    case FG_JV_NONE:
        return;

    case FG_JV_FLOAT:
        if (v->u.f == 0 && signbit(v->u.f)) {
            fg_jbuf_lit(c, b, "-0.0");

        } else {
            fg_jbuf_number(c, b, v->u.f);

            if (v->u.f == floor(v->u.f) && fabs(v->u.f) < 1e21) {
                fg_jbuf_lit(c, b, ".0");
            }
        }

        return;

    case FG_JV_ARRAY:
    case FG_JV_OBJECT:
    case FG_JV_NS:
        memset(&o, 0, sizeof(o));
        o.indent = -1;
        fg_jbuf_json(c, b, v, &o, 0, NULL);
        return;

    case FG_JV_MACRO:
        fg_jbuf_lit(c, b, "[object Object]");
        return;

    default:
        fg_jbuf_scalar(c, b, v, NULL);
    }
}


/* JSON.stringify of a string, \u-escaping the rest when asked (what
 * Python's ensure_ascii does, by UTF-16 units) */
static void
fg_jbuf_json_str(fg_jctx_t *c, fg_jbuf_t *b, fg_jstr_t s, int ascii)
{
    int            all;
    char           tmp[16];
    size_t         i, n;
    uint32_t       cp;
    const uint8_t  *p;

    all = s.user != NULL && memchr(s.user, 1, s.len) != NULL;
    p = (const uint8_t *) s.data;

    fg_jbuf_add(c, b, "\"", 1, NULL, all);

    for (i = 0; i < s.len; i += n) {
        n = 1;

        switch (p[i]) {
        case '"':  fg_jbuf_add(c, b, "\\\"", 2, NULL, all); continue;
        case '\\': fg_jbuf_add(c, b, "\\\\", 2, NULL, all); continue;
        case '\b': fg_jbuf_add(c, b, "\\b", 2, NULL, all); continue;
        case '\f': fg_jbuf_add(c, b, "\\f", 2, NULL, all); continue;
        case '\n': fg_jbuf_add(c, b, "\\n", 2, NULL, all); continue;
        case '\r': fg_jbuf_add(c, b, "\\r", 2, NULL, all); continue;
        case '\t': fg_jbuf_add(c, b, "\\t", 2, NULL, all); continue;
        }

        if (p[i] < 0x20) {
            snprintf(tmp, sizeof(tmp), "\\u%04x", p[i]);
            fg_jbuf_add(c, b, tmp, 6, NULL, all);
            continue;
        }

        if (!ascii || p[i] < 0x7f) {
            fg_jbuf_add(c, b, s.data + i, 1, NULL, all);
            continue;
        }

        /* ensure_ascii: one code point, as one or two UTF-16 units */
        cp = p[i];

        if (p[i] >= 0xf0 && i + 3 < s.len + 0) {
            cp = ((p[i] & 7) << 18) | ((p[i + 1] & 63) << 12)
                 | ((p[i + 2] & 63) << 6) | (p[i + 3] & 63);
            n = 4;

        } else if (p[i] >= 0xe0 && i + 2 < s.len) {
            cp = ((p[i] & 15) << 12) | ((p[i + 1] & 63) << 6)
                 | (p[i + 2] & 63);
            n = 3;

        } else if (p[i] >= 0xc0 && i + 1 < s.len) {
            cp = ((p[i] & 31) << 6) | (p[i + 1] & 63);
            n = 2;
        }

        if (cp >= 0x10000) {
            cp -= 0x10000;
            snprintf(tmp, sizeof(tmp), "\\u%04x\\u%04x",
                     0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
            fg_jbuf_add(c, b, tmp, 12, NULL, all);

        } else {
            snprintf(tmp, sizeof(tmp), "\\u%04x", cp);
            fg_jbuf_add(c, b, tmp, 6, NULL, all);
        }
    }

    fg_jbuf_add(c, b, "\"", 1, NULL, all);
}


static void
fg_jbuf_pad(fg_jctx_t *c, fg_jbuf_t *b, const fg_jjson_opts_t *o, int depth)
{
    int64_t  i;

    fg_jbuf_lit(c, b, "\n");

    for (i = 0; i < o->indent * depth; i++) {
        fg_jbuf_lit(c, b, " ");
    }
}


static void
fg_jbuf_json_sep(fg_jctx_t *c, fg_jbuf_t *b, const fg_jstr_t *sep,
    const char *dflt)
{
    if (sep) {
        fg_jbuf_jstr(c, b, *sep);

    } else {
        fg_jbuf_lit(c, b, dflt);
    }
}


static int
fg_jbuf_key_cmp(const void *x, const void *y)
{
    int               r;
    const fg_jstr_t  *a = x, *b = y;

    r = memcmp(a->data, b->data, a->len < b->len ? a->len : b->len);

    return r ? r : (a->len > b->len) - (a->len < b->len);
}


static void
fg_jbuf_json_object(fg_jctx_t *c, fg_jbuf_t *b, const fg_jv_t *v,
    const fg_jjson_opts_t *o, int depth, const fg_jnode_t *n)
{
    size_t      i, k, *order;
    fg_jstr_t  *keys;

    order = fg_jctx_alloc(c, (v->u.o.n + 1) * sizeof(size_t));

    for (i = 0; i < v->u.o.n; i++) {
        order[i] = i;
    }

    if (o->sort_keys && v->u.o.n > 1) {
        keys = fg_jctx_alloc(c, v->u.o.n * sizeof(fg_jstr_t));
        memcpy(keys, v->u.o.keys, v->u.o.n * sizeof(fg_jstr_t));
        qsort(keys, v->u.o.n, sizeof(fg_jstr_t), fg_jbuf_key_cmp);

        for (i = 0; i < v->u.o.n; i++) {
            for (k = 0; k < v->u.o.n; k++) {
                if (v->u.o.keys[k].data == keys[i].data) {
                    order[i] = k;
                }
            }
        }
    }

    fg_jbuf_lit(c, b, "{");

    for (i = 0; i < v->u.o.n; i++) {
        if (i) {
            fg_jbuf_json_sep(c, b, o->item_sep, o->indent > 0 ? "," : ", ");
        }

        if (o->indent > 0) {
            fg_jbuf_pad(c, b, o, depth + 1);
        }

        fg_jbuf_json_str(c, b, v->u.o.keys[order[i]], o->ascii);
        fg_jbuf_json_sep(c, b, o->key_sep, ": ");
        fg_jbuf_json(c, b, v->u.o.vals[order[i]], o, depth + 1, n);
    }

    if (o->indent > 0 && v->u.o.n) {
        fg_jbuf_pad(c, b, o, depth);
    }

    fg_jbuf_lit(c, b, "}");
}


/* the reference's toJSON: Python's json.dumps separators by default */
void
fg_jbuf_json(fg_jctx_t *c, fg_jbuf_t *b, const fg_jv_t *v,
    const fg_jjson_opts_t *o, int depth, const fg_jnode_t *n)
{
    size_t  i;

    if (++c->steps > c->lim->max_steps || depth > 512) {
        fg_jfail(c, n, FG_JINJA_ELIMIT, "too many steps or levels in JSON");
    }

    switch (v->type) {

    case FG_JV_UNDEF:
        fg_jbuf_lit(c, b, o->undef_null ? "null" : "undefined");
        return;

    case FG_JV_NONE:
        fg_jbuf_lit(c, b, "null");
        return;

    case FG_JV_STR:
        fg_jbuf_json_str(c, b, v->u.s, o->ascii);
        return;

    case FG_JV_ARRAY:
        fg_jbuf_lit(c, b, "[");

        for (i = 0; i < v->u.a.n; i++) {
            if (i) {
                fg_jbuf_json_sep(c, b, o->item_sep,
                                 o->indent > 0 ? "," : ", ");
            }

            if (o->indent > 0) {
                fg_jbuf_pad(c, b, o, depth + 1);
            }

            fg_jbuf_json(c, b, v->u.a.items[i], o, depth + 1, n);
        }

        if (o->indent > 0 && v->u.a.n) {
            fg_jbuf_pad(c, b, o, depth);
        }

        fg_jbuf_lit(c, b, "]");
        return;

    case FG_JV_OBJECT:
    case FG_JV_NS:
        fg_jbuf_json_object(c, b, v, o, depth, n);
        return;

    case FG_JV_MACRO:
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot convert a macro to JSON");

    default:
        fg_jbuf_scalar(c, b, v, n);
    }
}
