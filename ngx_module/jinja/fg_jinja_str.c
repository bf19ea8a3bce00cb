
/*
 * fairgate: strings as the reference's JavaScript methods treat them:
 * white space is Unicode's (trim, split), lengths and indexes count
 * UTF-16 units, slices count code points; upper and lower case change
 * ASCII letters only.  Every result keeps which bytes came from the
 * request.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_jinja_int.h"


/* the length of a white space character at s, 0 when there is none */
size_t
fg_jstr_space(const char *s, size_t len)
{
    const uint8_t  *p = (const uint8_t *) s;

    if (len == 0) {
        return 0;
    }

    if (p[0] == ' ' || (p[0] >= '\t' && p[0] <= '\r')) {
        return 1;
    }

    if (len >= 2 && p[0] == 0xc2 && p[1] == 0xa0) {
        return 2;
    }

    if (len < 3) {
        return 0;
    }

    if ((p[0] == 0xe1 && p[1] == 0x9a && p[2] == 0x80)
        || (p[0] == 0xe2 && p[1] == 0x80
            && (p[2] <= 0x8a || p[2] == 0xa8 || p[2] == 0xa9
                || p[2] == 0xaf))
        || (p[0] == 0xe2 && p[1] == 0x81 && p[2] == 0x9f)
        || (p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x80)
        || (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf))
    {
        return 3;
    }

    return 0;
}


/* the same for the character that ends s */
size_t
fg_jstr_space_back(const char *s, size_t len)
{
    size_t  n;

    for (n = 1; n <= 3 && n <= len; n++) {
        if (fg_jstr_space(s + len - n, n) == n) {
            return n;
        }
    }

    return 0;
}


fg_jstr_t
fg_jstr_trim(fg_jctx_t *c, fg_jstr_t s, int left, int right)
{
    size_t  from, to, n;

    from = 0;
    to = s.len;

    while (left && (n = fg_jstr_space(s.data + from, to - from)) != 0) {
        from += n;
    }

    while (right && to > from
           && (n = fg_jstr_space_back(s.data + from, to - from)) != 0)
    {
        to -= n;
    }

    return fg_jstr_sub(c, s, from, to);
}


static int
fg_jstr_word(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
           || (ch >= '0' && ch <= '9') || ch == '_';
}


fg_jv_t *
fg_jstr_case(fg_jctx_t *c, fg_jstr_t s, int how)
{
    char      *d;
    size_t     i;
    fg_jstr_t  r;

    d = fg_jctx_alloc(c, s.len + 1);
    memcpy(d, s.data, s.len);

    for (i = 0; i < s.len; i++) {
        if (how == FG_JCASE_LOWER) {
            if (d[i] >= 'A' && d[i] <= 'Z') {
                d[i] += 'a' - 'A';
            }

            continue;
        }

        if (how == FG_JCASE_TITLE && i > 0 && fg_jstr_word(d[i - 1])) {
            continue;
        }

        if (how == FG_JCASE_CAP && i > 0) {
            continue;
        }

        if (d[i] >= 'a' && d[i] <= 'z') {
            d[i] -= 'a' - 'A';
        }
    }

    r.data = d;
    r.len = s.len;
    r.user = s.user;

    return fg_jv_jstr(c, r);
}


/* JavaScript's length: UTF-16 units */
size_t
fg_jstr_units(fg_jstr_t s)
{
    size_t          i, n;
    const uint8_t  *p = (const uint8_t *) s.data;

    n = 0;

    for (i = 0; i < s.len; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            n += p[i] >= 0xf0 ? 2 : 1;
        }
    }

    return n;
}


/* the code points' offsets: n + 1 of them */
static size_t *
fg_jstr_points(fg_jctx_t *c, fg_jstr_t s, size_t *n)
{
    size_t  i, k, *at;

    at = fg_jctx_alloc(c, (s.len + 1) * sizeof(size_t));
    k = 0;

    for (i = 0; i < s.len; i++) {
        if (((uint8_t) s.data[i] & 0xc0) != 0x80) {
            at[k++] = i;
        }
    }

    at[k] = s.len;
    *n = k;

    return at;
}


/* s[i]: a character, counted in code points here (UTF-16 units in the
 * reference: the same outside the astral planes) */
fg_jv_t *
fg_jstr_index(fg_jctx_t *c, fg_jstr_t s, int64_t i)
{
    size_t  n, *at;

    at = fg_jstr_points(c, s, &n);

    if (i < 0) {
        i += n;
    }

    if (i < 0 || (size_t) i >= n) {
        return &fg_jv_undef;
    }

    return fg_jv_jstr(c, fg_jstr_sub(c, s, at[i], at[i + 1]));
}


static int
fg_jslice_bound(const fg_jv_t *v, int64_t *x, const fg_jnode_t *n,
    fg_jctx_t *c)
{
    if (v->type == FG_JV_UNDEF) {
        return 0;
    }

    if (v->type != FG_JV_INT) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "a slice's bounds must be "
                 "integers");
    }

    /* far past any length is as good as the length: no overflow below */
    *x = v->u.i > ((int64_t) 1 << 40) ? ((int64_t) 1 << 40)
         : v->u.i < -((int64_t) 1 << 40) ? -((int64_t) 1 << 40) : v->u.i;

    return 1;
}


/* the reference's slice(): Python's rules for start, stop and step */
fg_jv_t *
fg_jslice(fg_jctx_t *c, const fg_jv_t *v, const fg_jv_t *start,
    const fg_jv_t *stop, const fg_jv_t *step, const fg_jnode_t *n)
{
    size_t     len, k, *at;
    int64_t    a, b, d, i, cnt;
    fg_jv_t   *r;
    fg_jbuf_t  buf;

    if (v->type != FG_JV_ARRAY && v->type != FG_JV_STR) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot slice a %s",
                 fg_jv_type_name(v));
    }

    at = NULL;
    len = v->type == FG_JV_ARRAY ? v->u.a.n : 0;

    if (v->type == FG_JV_STR) {
        at = fg_jstr_points(c, v->u.s, &len);
    }

    d = 1;
    fg_jslice_bound(step, &d, n, c);

    if (d == 0) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "a slice's step cannot be zero");
    }

    if (d > 0) {
        a = fg_jslice_bound(start, &a, n, c) ? a : 0;
        b = fg_jslice_bound(stop, &b, n, c) ? b : (int64_t) len;
        a = a < 0 ? (a + (int64_t) len > 0 ? a + (int64_t) len : 0)
                  : (a < (int64_t) len ? a : (int64_t) len);
        b = b < 0 ? (b + (int64_t) len > 0 ? b + (int64_t) len : 0)
                  : (b < (int64_t) len ? b : (int64_t) len);

    } else {
        a = fg_jslice_bound(start, &a, n, c) ? a : (int64_t) len - 1;
        b = fg_jslice_bound(stop, &b, n, c) ? b : -1;
        a = a < 0 ? (a + (int64_t) len > -1 ? a + (int64_t) len : -1)
                  : (a < (int64_t) len - 1 ? a : (int64_t) len - 1);
        b = b < -1 ? (b + (int64_t) len > -1 ? b + (int64_t) len : -1)
                   : (b < (int64_t) len - 1 ? b : (int64_t) len - 1);
    }

    cnt = 0;

    for (i = a; d > 0 ? i < b : i > b; i += d) {
        cnt++;
    }

    if (v->type == FG_JV_ARRAY) {
        r = fg_jv_array(c, cnt);
        k = 0;

        for (i = a; d > 0 ? i < b : i > b; i += d) {
            r->u.a.items[k++] = v->u.a.items[i];
        }

        return r;
    }

    fg_jbuf_init(&buf);

    for (i = a; d > 0 ? i < b : i > b; i += d) {
        fg_jbuf_jstr(c, &buf, fg_jstr_sub(c, v->u.s, at[i], at[i + 1]));
    }

    return fg_jbuf_value(c, &buf);
}


static void
fg_jstr_push(fg_jctx_t *c, fg_jv_t *arr, size_t *cap, fg_jstr_t s)
{
    fg_jv_t  **items;

    if (arr->u.a.n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        items = fg_jctx_alloc(c, *cap * sizeof(fg_jv_t *));

        if (arr->u.a.n) {
            memcpy(items, arr->u.a.items, arr->u.a.n * sizeof(fg_jv_t *));
        }

        arr->u.a.items = items;
    }

    arr->u.a.items[arr->u.a.n++] = fg_jv_jstr(c, s);
}


/* Python's str.split(sep=None, maxsplit=-1), as the reference has it */
fg_jv_t *
fg_jstr_split(fg_jctx_t *c, fg_jstr_t s, const fg_jv_t *sep, int64_t max,
    const fg_jnode_t *n)
{
    size_t      i, from, cap, sp;
    fg_jv_t    *r;
    fg_jstr_t   p;

    r = fg_jv_array(c, 0);
    cap = 0;

    if (sep == NULL || sep->type == FG_JV_NONE) {
        i = 0;

        for ( ;; ) {
            while (i < s.len && (sp = fg_jstr_space(s.data + i, s.len - i))) {
                i += sp;
            }

            if (i >= s.len) {
                return r;
            }

            from = i;

            if (max >= 0 && (int64_t) r->u.a.n >= max) {
                fg_jstr_push(c, r, &cap, fg_jstr_sub(c, s, from, s.len));
                return r;
            }

            while (i < s.len && fg_jstr_space(s.data + i, s.len - i) == 0) {
                i++;
            }

            fg_jstr_push(c, r, &cap, fg_jstr_sub(c, s, from, i));
        }
    }

    if (sep->type != FG_JV_STR || sep->u.s.len == 0) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "split() needs a separator that "
                 "is a string, not empty");
    }

    p = sep->u.s;
    from = 0;

    for (i = 0; i + p.len <= s.len; ) {
        if (memcmp(s.data + i, p.data, p.len) != 0
            || (max >= 0 && (int64_t) r->u.a.n >= max))
        {
            i++;
            continue;
        }

        fg_jstr_push(c, r, &cap, fg_jstr_sub(c, s, from, i));
        i += p.len;
        from = i;
    }

    fg_jstr_push(c, r, &cap, fg_jstr_sub(c, s, from, s.len));

    return r;
}


/* every (or the first count) from replaced; an empty from matches
 * between the characters, as JavaScript's does */
fg_jv_t *
fg_jstr_replace(fg_jctx_t *c, fg_jstr_t s, fg_jstr_t from, fg_jstr_t to,
    int64_t count)
{
    size_t     i, last, n, *at;
    fg_jbuf_t  buf;

    fg_jbuf_init(&buf);

    if (count == 0) {
        return fg_jv_jstr(c, s);
    }

    if (from.len == 0) {
        at = fg_jstr_points(c, s, &n);

        for (i = 0; i <= n; i++) {
            if (count < 0 || (int64_t) i < count) {
                fg_jbuf_jstr(c, &buf, to);
            }

            if (i < n) {
                fg_jbuf_jstr(c, &buf, fg_jstr_sub(c, s, at[i], at[i + 1]));
            }
        }

        return fg_jbuf_value(c, &buf);
    }

    last = 0;

    for (i = 0; i + from.len <= s.len && count != 0; ) {
        if (memcmp(s.data + i, from.data, from.len) != 0) {
            i++;
            continue;
        }

        fg_jbuf_jstr(c, &buf, fg_jstr_sub(c, s, last, i));
        fg_jbuf_jstr(c, &buf, to);
        i += from.len;
        last = i;

        if (count > 0) {
            count--;
        }
    }

    fg_jbuf_jstr(c, &buf, fg_jstr_sub(c, s, last, s.len));

    return fg_jbuf_value(c, &buf);
}
