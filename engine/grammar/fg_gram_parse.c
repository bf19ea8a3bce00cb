
/*
 * fairgate: GBNF, llama.cpp's grammar text, parsed into rules.
 *
 *     root  ::= "{" ws pair ("," ws pair)* "}"    # a comment
 *     pair  ::= [a-z]+ ":" ws [0-9]{1,3}
 *     ws    ::= [ \t\n]*
 *
 * A rule is alternatives (|) of sequences; an item is a string literal,
 * a character class ([a-z], [^"\\], escapes), . (any character), a rule's
 * name or a group (...), followed by *, +, ? or {m}, {m,}, {m,n}, {,n}.
 * Newlines end a rule except after | and inside a group.  Repetitions and
 * groups become rules of their own, so that a matcher sees only classes
 * and references.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gram_int.h"
#include "fg_utf8.h"


#define FG_GP_INF  0xffffffffu


typedef struct {
    const char       *p;
    const char       *end;
    const char       *line_start;
    uint32_t          line;
    uint32_t          nest;
    fg_gram_build_t  *b;
    int64_t           ascii[128];           /* a character's own class */
} fg_gram_parser_t;


static int fg_gp_rule(fg_gram_parser_t *ps);
static int fg_gp_alts(fg_gram_parser_t *ps, uint32_t r, int nested);
static int fg_gp_seq(fg_gram_parser_t *ps, uint32_t r, int nested);
static int fg_gp_item(fg_gram_parser_t *ps, uint32_t r);
static int fg_gp_group(fg_gram_parser_t *ps, uint32_t r);
static int fg_gp_literal(fg_gram_parser_t *ps, uint32_t r);
static int fg_gp_class(fg_gram_parser_t *ps, uint32_t r);
static int fg_gp_char(fg_gram_parser_t *ps, uint32_t *cp);
static int fg_gp_bounds(fg_gram_parser_t *ps, uint32_t *min,
    uint32_t *max);
static int fg_gp_repeat(fg_gram_parser_t *ps, uint32_t r, uint32_t last,
    uint32_t min, uint32_t max);
static void fg_gp_space(fg_gram_parser_t *ps, int newlines);
static int fg_gp_error(fg_gram_parser_t *ps, const char *fmt, ...);


static int
fg_gp_is_name(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '-' || c == '_';
}


fg_gram_t *
fg_gram_from_gbnf(const char *text, size_t len, char *err, size_t errlen)
{
    fg_gram_t         *g;
    fg_gram_build_t    b;
    fg_gram_parser_t   ps;

    if (len > FG_GRAM_MAX_TEXT) {
        snprintf(err, errlen, "the grammar is over %u bytes",
                 FG_GRAM_MAX_TEXT);
        return NULL;
    }

    memset(&b, 0, sizeof(b));
    memset(&ps, 0, sizeof(ps));
    b.err = err;
    b.errlen = errlen;
    ps.b = &b;
    ps.p = text;
    ps.end = text + len;
    ps.line_start = text;
    ps.line = 1;
    memset(ps.ascii, 0xff, sizeof(ps.ascii));
    g = NULL;

    if (fg_gram_build_rule(&b, "root", 4, 0, 0) != 0) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }

    for ( ;; ) {
        fg_gp_space(&ps, 1);

        if (ps.p == ps.end) {
            break;
        }

        if (fg_gp_rule(&ps) != 0) {
            goto done;
        }
    }

    g = fg_gram_build_finish(&b);

done:

    fg_gram_build_free(&b);

    return g;
}


static int
fg_gp_rule(fg_gram_parser_t *ps)
{
    int64_t           r;
    uint32_t          line, col;
    const char       *name;
    fg_gram_brule_t  *rule;

    name = ps->p;
    line = ps->line;
    col = ps->p - ps->line_start + 1;

    while (ps->p < ps->end && fg_gp_is_name((unsigned char) *ps->p)) {
        ps->p++;
    }

    if (ps->p == name) {
        return fg_gp_error(ps, "expected a rule's name");
    }

    r = fg_gram_build_rule(ps->b, name, ps->p - name, line, col);

    if (r < 0) {
        return fg_gp_error(ps, "out of memory");
    }

    fg_gp_space(ps, 0);

    if (ps->end - ps->p < 3 || memcmp(ps->p, "::=", 3) != 0) {
        return fg_gp_error(ps, "expected \"::=\"");
    }

    rule = &ps->b->rules[r];

    if (rule->defined) {
        return fg_gp_error(ps, "rule \"%s\" is defined twice", rule->name);
    }

    rule->defined = 1;
    ps->p += 3;
    fg_gp_space(ps, 1);

    if (fg_gp_alts(ps, r, 0) != 0) {
        return -1;
    }

    if (ps->p < ps->end && *ps->p != '\n' && *ps->p != '\r') {
        return fg_gp_error(ps, "unexpected \"%c\"", *ps->p);
    }

    return 0;
}


static int
fg_gp_alts(fg_gram_parser_t *ps, uint32_t r, int nested)
{
    if (fg_gp_seq(ps, r, nested) != 0) {
        return -1;
    }

    while (ps->p < ps->end && *ps->p == '|') {
        ps->p++;
        fg_gp_space(ps, 1);

        if (fg_gram_build_emit(ps->b, r, fg_gram_el(FG_GRAM_ALT, 0)) != 0
            || fg_gp_seq(ps, r, nested) != 0)
        {
            return -1;
        }
    }

    return 0;
}


static int
fg_gp_seq(fg_gram_parser_t *ps, uint32_t r, int nested)
{
    int       c;
    uint32_t  last, min, max;

    last = FG_GRAM_NIL;

    while (ps->p < ps->end) {
        c = (unsigned char) *ps->p;

        if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (last == FG_GRAM_NIL) {
                return fg_gp_error(ps, "\"%c\" follows nothing to repeat",
                                   c);
            }

            if (fg_gp_bounds(ps, &min, &max) != 0
                || fg_gp_repeat(ps, r, last, min, max) != 0)
            {
                return -1;
            }

        } else if (c == '"' || c == '[' || c == '.' || c == '('
                   || fg_gp_is_name(c))
        {
            last = ps->b->rules[r].el.n;

            if (fg_gp_item(ps, r) != 0) {
                return -1;
            }

        } else {
            break;
        }

        fg_gp_space(ps, nested);
    }

    return 0;
}


static int
fg_gp_item(fg_gram_parser_t *ps, uint32_t r)
{
    int64_t      ref, cls;
    uint32_t     line, col;
    const char  *name;

    switch (*ps->p) {

    case '"':
        return fg_gp_literal(ps, r);

    case '[':
        return fg_gp_class(ps, r);

    case '(':
        return fg_gp_group(ps, r);

    case '.':
        ps->p++;
        cls = fg_gram_build_class(ps->b, NULL, 0, 1);

        if (cls < 0) {
            return fg_gp_error(ps, "out of memory");
        }

        return fg_gram_build_emit(ps->b, r, fg_gram_el(FG_GRAM_CLASS, cls));
    }

    name = ps->p;
    line = ps->line;
    col = ps->p - ps->line_start + 1;

    while (ps->p < ps->end && fg_gp_is_name((unsigned char) *ps->p)) {
        ps->p++;
    }

    ref = fg_gram_build_rule(ps->b, name, ps->p - name, line, col);

    if (ref < 0) {
        return fg_gp_error(ps, "out of memory");
    }

    return fg_gram_build_emit(ps->b, r, fg_gram_el(FG_GRAM_REF, ref));
}


static int
fg_gp_group(fg_gram_parser_t *ps, uint32_t r)
{
    int64_t  sub;

    if (++ps->nest > FG_GRAM_MAX_NEST) {
        return fg_gp_error(ps, "groups nest over %u deep", FG_GRAM_MAX_NEST);
    }

    sub = fg_gram_build_rule(ps->b, NULL, 0, 0, 0);

    if (sub < 0) {
        return fg_gp_error(ps, "out of memory");
    }

    ps->b->rules[sub].defined = 1;
    ps->p++;
    fg_gp_space(ps, 1);

    if (fg_gp_alts(ps, sub, 1) != 0) {
        return -1;
    }

    if (ps->p == ps->end || *ps->p != ')') {
        return fg_gp_error(ps, "expected \")\"");
    }

    ps->p++;
    ps->nest--;

    return fg_gram_build_emit(ps->b, r, fg_gram_el(FG_GRAM_REF, sub));
}


static int
fg_gp_literal(fg_gram_parser_t *ps, uint32_t r)
{
    int64_t   cls;
    uint32_t  cp, rg[2];

    ps->p++;

    for ( ;; ) {
        if (ps->p == ps->end || *ps->p == '\n' || *ps->p == '\r') {
            return fg_gp_error(ps, "the string is not closed");
        }

        if (*ps->p == '"') {
            ps->p++;
            return 0;
        }

        if (fg_gp_char(ps, &cp) != 0) {
            return -1;
        }

        cls = cp < 128 ? ps->ascii[cp] : -1;

        if (cls < 0) {
            rg[0] = cp;
            rg[1] = cp;
            cls = fg_gram_build_class(ps->b, rg, 1, 0);

            if (cls < 0) {
                return fg_gp_error(ps, "out of memory");
            }

            if (cp < 128) {
                ps->ascii[cp] = cls;
            }
        }

        if (fg_gram_build_emit(ps->b, r, fg_gram_el(FG_GRAM_CLASS, cls))
            != 0)
        {
            return -1;
        }
    }
}


static int
fg_gp_class(fg_gram_parser_t *ps, uint32_t r)
{
    int            negate;
    int64_t        cls;
    uint32_t       lo, hi;
    fg_gram_vec_t  rg;

    ps->p++;
    negate = 0;
    memset(&rg, 0, sizeof(rg));

    if (ps->p < ps->end && *ps->p == '^') {
        negate = 1;
        ps->p++;
    }

    while (ps->p < ps->end && *ps->p != ']') {
        if (*ps->p == '\n' || *ps->p == '\r') {
            break;
        }

        if (fg_gp_char(ps, &lo) != 0) {
            free(rg.a);
            return -1;
        }

        hi = lo;

        if (ps->end - ps->p >= 2 && ps->p[0] == '-' && ps->p[1] != ']') {
            ps->p++;

            if (fg_gp_char(ps, &hi) != 0) {
                free(rg.a);
                return -1;
            }

            if (hi < lo) {
                free(rg.a);
                return fg_gp_error(ps, "the range ends before it begins");
            }
        }

        if (fg_gram_vec_push(&rg, lo) != 0 || fg_gram_vec_push(&rg, hi)) {
            free(rg.a);
            return fg_gp_error(ps, "out of memory");
        }
    }

    if (ps->p == ps->end || *ps->p != ']') {
        free(rg.a);
        return fg_gp_error(ps, "the class is not closed");
    }

    ps->p++;
    cls = fg_gram_build_class(ps->b, rg.a, rg.n / 2, negate);
    free(rg.a);

    if (cls < 0) {
        return fg_gp_error(ps, "out of memory");
    }

    return fg_gram_build_emit(ps->b, r, fg_gram_el(FG_GRAM_CLASS, cls));
}


static int
fg_gp_hex(fg_gram_parser_t *ps, uint32_t n, uint32_t *cp)
{
    int       c;
    uint32_t  i, v;

    v = 0;

    for (i = 0; i < n; i++) {
        c = ps->p < ps->end ? (unsigned char) *ps->p : 0;

        if (c >= '0' && c <= '9') {
            v = v * 16 + (c - '0');

        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            v = v * 16 + ((c | 0x20) - 'a' + 10);

        } else {
            return fg_gp_error(ps, "expected %u hex digits", n);
        }

        ps->p++;
    }

    if (v > 0x10ffff) {
        return fg_gp_error(ps, "U+%X is not a character", v);
    }

    *cp = v;

    return 0;
}


/* one character of a literal or class: an escape or a UTF-8 character */
static int
fg_gp_char(fg_gram_parser_t *ps, uint32_t *cp)
{
    int     c;
    size_t  n;

    if (*ps->p != '\\') {
        n = fg_utf8_decode((const uint8_t *) ps->p, ps->end - ps->p, cp);

        if (n == 0) {
            return fg_gp_error(ps, "invalid UTF-8");
        }

        ps->p += n;
        return 0;
    }

    if (++ps->p == ps->end) {
        return fg_gp_error(ps, "the escape is cut short");
    }

    c = *ps->p++;

    switch (c) {
    case 'n': *cp = '\n'; return 0;
    case 'r': *cp = '\r'; return 0;
    case 't': *cp = '\t'; return 0;
    case 'x': return fg_gp_hex(ps, 2, cp);
    case 'u': return fg_gp_hex(ps, 4, cp);
    case 'U': return fg_gp_hex(ps, 8, cp);
    case '\\': case '"': case '[': case ']': case '-': case '^': case '/':
        *cp = c;
        return 0;
    }

    ps->p--;

    return fg_gp_error(ps, "unknown escape \"\\%c\"", c);
}


static int
fg_gp_number(fg_gram_parser_t *ps, uint32_t *v)
{
    uint64_t  x;

    x = 0;

    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        x = x * 10 + (*ps->p++ - '0');

        if (x > FG_GRAM_MAX_REPEAT) {
            return fg_gp_error(ps, "a repetition over %u",
                               FG_GRAM_MAX_REPEAT);
        }
    }

    *v = x;

    return 0;
}


static int
fg_gp_bounds(fg_gram_parser_t *ps, uint32_t *min, uint32_t *max)
{
    const char  *start;

    switch (*ps->p++) {
    case '*': *min = 0; *max = FG_GP_INF; return 0;
    case '+': *min = 1; *max = FG_GP_INF; return 0;
    case '?': *min = 0; *max = 1; return 0;
    }

    fg_gp_space(ps, 1);
    start = ps->p;

    if (fg_gp_number(ps, min) != 0) {
        return -1;
    }

    *max = *min;
    fg_gp_space(ps, 1);

    if (ps->p < ps->end && *ps->p == ',') {
        ps->p++;
        fg_gp_space(ps, 1);
        start = ps->p;

        if (fg_gp_number(ps, max) != 0) {
            return -1;
        }

        *max = ps->p == start ? FG_GP_INF : *max;
        fg_gp_space(ps, 1);

    } else if (ps->p == start) {
        return fg_gp_error(ps, "expected a number");
    }

    if (ps->p == ps->end || *ps->p != '}') {
        return fg_gp_error(ps, "expected \"}\"");
    }

    ps->p++;

    if (*max < *min) {
        return fg_gp_error(ps, "{%u,%u}: the most is under the least",
                           *min, *max);
    }

    return 0;
}


/* the items from last on, repeated min to max times: min copies, then a
 * rule for the rest (x* is R ::= x R |, a tail call that keeps a stack's
 * depth; {m,n} is n - m nested optional rules) */
static int
fg_gp_repeat(fg_gram_parser_t *ps, uint32_t r, uint32_t last, uint32_t min,
    uint32_t max)
{
    int64_t           sub, prev;
    uint32_t          item, i, n;
    fg_gram_vec_t    *el;
    fg_gram_build_t  *b;

    b = ps->b;
    el = &b->rules[r].el;
    n = el->n - last;

    if (n == 1) {
        item = el->a[last];

    } else {
        sub = fg_gram_build_rule(b, NULL, 0, 0, 0);

        if (sub < 0) {
            return fg_gp_error(ps, "out of memory");
        }

        el = &b->rules[r].el;
        b->rules[sub].defined = 1;

        for (i = 0; i < n; i++) {
            if (fg_gram_build_emit(b, sub, el->a[last + i]) != 0) {
                return -1;
            }
        }

        item = fg_gram_el(FG_GRAM_REF, sub);
    }

    b->rules[r].el.n = last;
    b->n_elems -= n;

    for (i = 0; i < min; i++) {
        if (fg_gram_build_emit(b, r, item) != 0) {
            return -1;
        }
    }

    if (max == min) {
        return 0;
    }

    prev = -1;
    n = max == FG_GP_INF ? 1 : max - min;

    for (i = 0; i < n; i++) {
        sub = fg_gram_build_rule(b, NULL, 0, 0, 0);

        if (sub < 0) {
            return fg_gp_error(ps, "out of memory");
        }

        b->rules[sub].defined = 1;

        if (max == FG_GP_INF) {
            prev = sub;

        } else {
            /* the chain's rules are made one after the other: its i-th
             * is its first's id + i (fg_gram_mask.c's cache keys) */
            b->rules[sub].chain = i + 1;
        }

        if (fg_gram_build_emit(b, sub, item) != 0
            || (prev >= 0
                && fg_gram_build_emit(b, sub, fg_gram_el(FG_GRAM_REF, prev))
                   != 0)
            || fg_gram_build_emit(b, sub, fg_gram_el(FG_GRAM_ALT, 0)) != 0)
        {
            return -1;
        }

        prev = sub;
    }

    return fg_gram_build_emit(b, r, fg_gram_el(FG_GRAM_REF, prev));
}


/* spaces, tabs and comments; newlines too when asked */
static void
fg_gp_space(fg_gram_parser_t *ps, int newlines)
{
    while (ps->p < ps->end) {
        if (*ps->p == ' ' || *ps->p == '\t') {
            ps->p++;

        } else if (*ps->p == '#') {
            while (ps->p < ps->end && *ps->p != '\n' && *ps->p != '\r') {
                ps->p++;
            }

        } else if (newlines && (*ps->p == '\n' || *ps->p == '\r')) {
            if (*ps->p++ == '\n') {
                ps->line++;
                ps->line_start = ps->p;
            }

        } else {
            break;
        }
    }
}


static int
fg_gp_error(fg_gram_parser_t *ps, const char *fmt, ...)
{
    int      n;
    size_t   len;
    va_list  args;

    n = snprintf(ps->b->err, ps->b->errlen, "line %u, column %u: ",
                 ps->line, (uint32_t) (ps->p - ps->line_start + 1));
    len = n < 0 ? 0 : (size_t) n;

    if (len < ps->b->errlen) {
        va_start(args, fmt);
        vsnprintf(ps->b->err + len, ps->b->errlen - len, fmt, args);
        va_end(args);
    }

    return -1;
}
