
/*
 * fairgate: a grammar's rules while it is built, and their flat form: the
 * checks that every rule used is defined, that "root" is, and that no rule
 * is left-recursive (a matcher would expand it forever).
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gram_int.h"


static int fg_gram_nullable(fg_gram_build_t *b, uint8_t *null);
static int fg_gram_left_rec(fg_gram_build_t *b, const uint8_t *null);
static int fg_gram_left_visit(fg_gram_build_t *b, const uint8_t *null,
    uint8_t *color, uint32_t r, uint32_t depth);
static fg_gram_t *fg_gram_flatten(fg_gram_build_t *b);
static void fg_gram_class_fill(fg_gram_t *g, fg_gram_class_t *c);


int
fg_gram_vec_push(fg_gram_vec_t *v, uint32_t x)
{
    uint32_t  *a, cap;

    if (v->n == v->cap) {
        cap = v->cap ? 2 * v->cap : 16;
        a = realloc(v->a, (size_t) cap * sizeof(uint32_t));

        if (a == NULL) {
            return -1;
        }

        v->a = a;
        v->cap = cap;
    }

    v->a[v->n++] = x;

    return 0;
}


void
fg_gram_build_free(fg_gram_build_t *b)
{
    uint32_t  i;

    for (i = 0; i < b->n_rules; i++) {
        free(b->rules[i].name);
        free(b->rules[i].el.a);
    }

    free(b->rules);
    free(b->classes.a);
    free(b->ranges.a);
    memset(b, 0, sizeof(*b));
}


int64_t
fg_gram_build_rule(fg_gram_build_t *b, const char *name, size_t len,
    uint32_t line, uint32_t col)
{
    uint32_t          i, cap;
    fg_gram_brule_t  *r;

    if (name != NULL) {
        for (i = 0; i < b->n_rules; i++) {
            r = &b->rules[i];

            if (r->name && strlen(r->name) == len
                && memcmp(r->name, name, len) == 0)
            {
                return i;
            }
        }
    }

    if (b->n_rules == b->cap_rules) {
        cap = b->cap_rules ? 2 * b->cap_rules : 32;
        r = realloc(b->rules, cap * sizeof(fg_gram_brule_t));

        if (r == NULL) {
            return -1;
        }

        b->rules = r;
        b->cap_rules = cap;
    }

    r = &b->rules[b->n_rules];
    memset(r, 0, sizeof(*r));
    r->line = line;
    r->col = col;

    if (name != NULL) {
        r->name = strndup(name, len);

        if (r->name == NULL) {
            return -1;
        }
    }

    return b->n_rules++;
}


int64_t
fg_gram_build_class(fg_gram_build_t *b, const uint32_t *ranges, uint32_t n,
    int negate)
{
    uint32_t  i, id;

    id = b->classes.n / 3;

    if (fg_gram_vec_push(&b->classes, b->ranges.n / 2) != 0
        || fg_gram_vec_push(&b->classes, n) != 0
        || fg_gram_vec_push(&b->classes, negate ? 1 : 0) != 0)
    {
        return -1;
    }

    for (i = 0; i < 2 * n; i++) {
        if (fg_gram_vec_push(&b->ranges, ranges[i]) != 0) {
            return -1;
        }
    }

    return id;
}


int
fg_gram_build_emit(fg_gram_build_t *b, uint32_t rule, uint32_t el)
{
    if (++b->n_elems > FG_GRAM_MAX_ELEMS) {
        snprintf(b->err, b->errlen, "the grammar has over %u elements",
                 FG_GRAM_MAX_ELEMS);
        return -1;
    }

    if (fg_gram_vec_push(&b->rules[rule].el, el) != 0) {
        snprintf(b->err, b->errlen, "out of memory");
        return -1;
    }

    return 0;
}


fg_gram_t *
fg_gram_build_finish(fg_gram_build_t *b)
{
    int        rc;
    uint8_t   *null;
    uint32_t   i;
    fg_gram_t  *g;

    /* the parser and the schema compiler make "root" rule 0 */
    if (b->n_rules == 0 || b->rules[0].name == NULL
        || strcmp(b->rules[0].name, "root") != 0 || !b->rules[0].defined)
    {
        snprintf(b->err, b->errlen, "no rule named \"root\"");
        return NULL;
    }

    for (i = 0; i < b->n_rules; i++) {
        if (!b->rules[i].defined) {
            snprintf(b->err, b->errlen,
                     "line %u, column %u: rule \"%s\" is not defined",
                     b->rules[i].line, b->rules[i].col, b->rules[i].name);
            return NULL;
        }
    }

    null = calloc(b->n_rules, 1);

    if (null == NULL) {
        snprintf(b->err, b->errlen, "out of memory");
        return NULL;
    }

    rc = fg_gram_nullable(b, null);

    if (rc == 0) {
        rc = fg_gram_left_rec(b, null);
    }

    free(null);

    if (rc != 0) {
        return NULL;
    }

    g = fg_gram_flatten(b);

    if (g == NULL) {
        snprintf(b->err, b->errlen, "out of memory");
    }

    return g;
}


/* which rules can match the empty text: to a fixed point */
static int
fg_gram_nullable(fg_gram_build_t *b, uint8_t *null)
{
    int              changed, ok;
    uint32_t         r, i, e;
    fg_gram_vec_t   *el;

    do {
        changed = 0;

        for (r = 0; r < b->n_rules; r++) {
            if (null[r]) {
                continue;
            }

            el = &b->rules[r].el;
            ok = 1;

            for (i = 0; i <= el->n; i++) {
                e = i < el->n ? el->a[i] : fg_gram_el(FG_GRAM_ALT, 0);

                if (fg_gram_type(e) == FG_GRAM_ALT) {
                    if (ok) {
                        null[r] = 1;
                        changed = 1;
                        break;
                    }

                    ok = 1;

                } else if (fg_gram_type(e) == FG_GRAM_CLASS
                           || !null[fg_gram_val(e)])
                {
                    ok = 0;
                }
            }
        }

    } while (changed);

    return 0;
}


static int
fg_gram_left_rec(fg_gram_build_t *b, const uint8_t *null)
{
    int       rc;
    uint8_t  *color;
    uint32_t  r;

    color = calloc(b->n_rules, 1);

    if (color == NULL) {
        snprintf(b->err, b->errlen, "out of memory");
        return -1;
    }

    rc = 0;

    for (r = 0; r < b->n_rules && rc == 0; r++) {
        rc = fg_gram_left_visit(b, null, color, r, 0);
    }

    free(color);

    return rc;
}


/* depth first over "may begin with": a rule met again on the path is
 * left-recursive */
static int
fg_gram_left_visit(fg_gram_build_t *b, const uint8_t *null, uint8_t *color,
    uint32_t r, uint32_t depth)
{
    int              skip;
    uint32_t         i, e, s;
    fg_gram_vec_t   *el;

    if (color[r] == 2) {
        return 0;
    }

    if (color[r] == 1 || depth > 4 * FG_GRAM_MAX_NEST + 1000) {
        snprintf(b->err, b->errlen, "rule \"%s\" is left-recursive",
                 b->rules[r].name ? b->rules[r].name : "(a group)");
        return -1;
    }

    color[r] = 1;
    el = &b->rules[r].el;
    skip = 0;

    for (i = 0; i < el->n; i++) {
        e = el->a[i];

        if (fg_gram_type(e) == FG_GRAM_ALT) {
            skip = 0;
            continue;
        }

        if (skip) {
            continue;
        }

        if (fg_gram_type(e) == FG_GRAM_CLASS) {
            skip = 1;
            continue;
        }

        s = fg_gram_val(e);

        if (fg_gram_left_visit(b, null, color, s, depth + 1) != 0) {
            return -1;
        }

        skip = !null[s];
    }

    color[r] = 2;

    return 0;
}


static fg_gram_t *
fg_gram_flatten(fg_gram_build_t *b)
{
    size_t            n_alts;
    uint32_t          r, i, e, k;
    fg_gram_t        *g;
    fg_gram_vec_t    *el;

    g = calloc(1, sizeof(fg_gram_t));

    if (g == NULL) {
        return NULL;
    }

    n_alts = 0;

    for (r = 0; r < b->n_rules; r++) {
        el = &b->rules[r].el;
        n_alts++;

        for (i = 0; i < el->n; i++) {
            n_alts += fg_gram_type(el->a[i]) == FG_GRAM_ALT;
        }
    }

    g->n_rules = b->n_rules;
    g->n_classes = b->classes.n / 3;
    g->elems = malloc((b->n_elems + n_alts + 1) * sizeof(uint32_t));
    g->alts = malloc((n_alts + 1) * sizeof(uint32_t));
    g->rule_alt = malloc((b->n_rules + 1) * sizeof(uint32_t));
    g->classes = calloc(g->n_classes + 1, sizeof(fg_gram_class_t));
    g->ranges = malloc((b->ranges.n + 2) * sizeof(uint32_t));
    g->rule_of = malloc((b->n_elems + n_alts + 1) * sizeof(uint32_t));
    g->chain = malloc((b->n_rules + 1) * sizeof(uint32_t));

    if (g->elems == NULL || g->alts == NULL || g->rule_alt == NULL
        || g->classes == NULL || g->ranges == NULL || g->rule_of == NULL
        || g->chain == NULL)
    {
        fg_gram_free(g);
        return NULL;
    }

    if (b->ranges.n > 0) {
        memcpy(g->ranges, b->ranges.a, b->ranges.n * sizeof(uint32_t));
    }
    k = 0;

    for (r = 0; r < b->n_rules; r++) {
        el = &b->rules[r].el;
        g->rule_alt[r] = k;
        g->alts[k++] = g->n_elems;
        g->chain[r] = b->rules[r].chain;

        for (i = 0; i < el->n; i++) {
            e = el->a[i];
            g->rule_of[g->n_elems] = r;

            if (fg_gram_type(e) == FG_GRAM_ALT) {
                g->elems[g->n_elems++] = fg_gram_el(FG_GRAM_END, 0);
                g->alts[k++] = g->n_elems;

            } else {
                g->elems[g->n_elems++] = e;
            }
        }

        g->rule_of[g->n_elems] = r;
        g->elems[g->n_elems++] = fg_gram_el(FG_GRAM_END, 0);
    }

    g->rule_alt[b->n_rules] = k;

    for (i = 0; i < g->n_classes; i++) {
        g->classes[i].first = b->classes.a[3 * i];
        g->classes[i].n = b->classes.a[3 * i + 1];
        g->classes[i].negate = b->classes.a[3 * i + 2];
        fg_gram_class_fill(g, &g->classes[i]);
    }

    g->root = 0;

    return g;
}


static void
fg_gram_class_fill(fg_gram_t *g, fg_gram_class_t *c)
{
    uint32_t  i, lo, hi, cp;

    memset(c->ascii, 0, sizeof(c->ascii));

    for (i = 0; i < c->n; i++) {
        lo = g->ranges[2 * (c->first + i)];
        hi = g->ranges[2 * (c->first + i) + 1];

        for (cp = lo; cp <= hi && cp < 128; cp++) {
            c->ascii[cp >> 5] |= 1u << (cp & 31);
        }
    }

    if (c->negate) {
        for (i = 0; i < 4; i++) {
            c->ascii[i] = ~c->ascii[i];
        }
    }

    c->high = c->negate ? FG_GRAM_HIGH_ALL : FG_GRAM_HIGH_NONE;

    for (i = 0; i < c->n; i++) {
        if (g->ranges[2 * (c->first + i) + 1] >= 128) {
            c->high = FG_GRAM_HIGH_SOME;
        }
    }
}


int
fg_gram_class_has(const fg_gram_t *g, uint32_t cls, uint32_t cp)
{
    uint32_t                i;
    const uint32_t         *rg;
    const fg_gram_class_t  *c;

    c = &g->classes[cls];

    if (cp < 128) {
        return (c->ascii[cp >> 5] >> (cp & 31)) & 1;
    }

    rg = &g->ranges[2 * c->first];

    for (i = 0; i < c->n; i++) {
        if (cp >= rg[2 * i] && cp <= rg[2 * i + 1]) {
            return !c->negate;
        }
    }

    return c->negate != 0;
}


/* whether the class holds any code point in [lo, hi] */
int
fg_gram_class_meets(const fg_gram_t *g, uint32_t cls, uint32_t lo,
    uint32_t hi)
{
    uint32_t                i, z;
    const uint32_t         *rg;
    const fg_gram_class_t  *c;

    c = &g->classes[cls];
    rg = &g->ranges[2 * c->first];

    if (!c->negate) {
        for (i = 0; i < c->n; i++) {
            if (rg[2 * i] <= hi && rg[2 * i + 1] >= lo) {
                return 1;
            }
        }

        return 0;
    }

    /* negated: the first point at or after lo outside every range is lo
     * or the point after some range's end */
    if (fg_gram_class_has(g, cls, lo)) {
        return 1;
    }

    for (i = 0; i < c->n; i++) {
        z = rg[2 * i + 1];

        if (z >= lo && z < hi && fg_gram_class_has(g, cls, z + 1)) {
            return 1;
        }
    }

    return 0;
}


void
fg_gram_free(fg_gram_t *g)
{
    if (g == NULL) {
        return;
    }

    free(g->elems);
    free(g->alts);
    free(g->rule_alt);
    free(g->classes);
    free(g->ranges);
    free(g->rule_of);
    free(g->chain);
    free(g);
}
