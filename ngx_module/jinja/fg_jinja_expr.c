
/*
 * fairgate: the expressions of a template, by the reference's grammar,
 * loosest first: a if b else c; or; and; not; comparisons and "in";
 * + - ~; * / // %; **; "is" tests; "|" filters; unary signs; calls,
 * attributes, items and slices; literals and names.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_jinja_int.h"


static fg_jnode_t *fg_jparse_or(fg_jparser_t *p);
static fg_jnode_t *fg_jparse_unary(fg_jparser_t *p);


static fg_jnode_t *
fg_jparse_binary(fg_jparser_t *p, int op, fg_jnode_t *a, fg_jnode_t *b)
{
    fg_jnode_t  *n;

    n = fg_jparse_node(p, FG_JN_BINARY);
    n->op = op;
    n->pos = a->pos;
    n->a = a;
    n->b = b;

    return n;
}


static int
fg_jparse_op(fg_jtok_t *t)
{
    static const struct {
        const char  *text;
        int          op;
    } ops[] = {
        { "==", FG_JOP_EQ }, { "!=", FG_JOP_NE }, { "<", FG_JOP_LT },
        { ">", FG_JOP_GT }, { "<=", FG_JOP_LE }, { ">=", FG_JOP_GE },
        { "+", FG_JOP_ADD }, { "-", FG_JOP_SUB }, { "~", FG_JOP_CONCAT },
        { "*", FG_JOP_MUL }, { "/", FG_JOP_DIV }, { "//", FG_JOP_FLOORDIV },
        { "%", FG_JOP_MOD }, { "**", FG_JOP_POW }
    };

    size_t  i;

    for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (t->len == strlen(ops[i].text)
            && memcmp(t->data, ops[i].text, t->len) == 0)
        {
            return ops[i].op;
        }
    }

    return 0;
}


fg_jnode_t *
fg_jparse_expr(fg_jparser_t *p)
{
    fg_jnode_t  *a, *n;

    if (++p->depth > FG_JINJA_MAX_NEST) {
        fg_jparse_fail(p, "expression nested too deep");
    }

    a = fg_jparse_or(p);

    if (fg_jparse_is_name(p, 0, "if")) {
        p->cur++;
        n = fg_jparse_node(p, FG_JN_SELECT);
        n->pos = a->pos;
        n->a = a;
        n->b = fg_jparse_or(p);

        if (fg_jparse_is_name(p, 0, "else")) {
            p->cur++;
            n->type = FG_JN_TERNARY;
            n->c = fg_jparse_expr(p);
            a = n->b;
            n->b = n->a;
            n->a = a;
        }

        a = n;
    }

    p->depth--;

    return a;
}


static fg_jnode_t *fg_jparse_level(fg_jparser_t *p, int level);


static fg_jnode_t *
fg_jparse_not(fg_jparser_t *p)
{
    fg_jnode_t  *n;

    if (fg_jparse_is_name(p, 0, "not")) {
        n = fg_jparse_node(p, FG_JN_UNARY);
        n->op = FG_JOP_NOT;
        p->cur++;

        if (++p->depth > FG_JINJA_MAX_NEST) {
            fg_jparse_fail(p, "expression nested too deep");
        }

        n->a = fg_jparse_not(p);
        p->depth--;

        return n;
    }

    return fg_jparse_level(p, 0);
}


static fg_jnode_t *
fg_jparse_and(fg_jparser_t *p)
{
    fg_jnode_t  *a;

    a = fg_jparse_not(p);

    while (fg_jparse_is_name(p, 0, "and")) {
        p->cur++;
        a = fg_jparse_binary(p, FG_JOP_AND, a, fg_jparse_not(p));
    }

    return a;
}


static fg_jnode_t *
fg_jparse_or(fg_jparser_t *p)
{
    fg_jnode_t  *a;

    a = fg_jparse_and(p);

    while (fg_jparse_is_name(p, 0, "or")) {
        p->cur++;
        a = fg_jparse_binary(p, FG_JOP_OR, a, fg_jparse_and(p));
    }

    return a;
}


/* the levels from comparison (0) down to "**" (3) */

static int
fg_jparse_level_op(fg_jparser_t *p, int level, size_t *skip)
{
    fg_jtok_t  *t;

    t = &p->lx->toks[p->cur];
    *skip = 1;

    switch (level) {
    case 0:
        if (fg_jparse_is_name(p, 0, "not") && fg_jparse_is_name(p, 1, "in"))
        {
            *skip = 2;
            return FG_JOP_NOT_IN;
        }

        if (fg_jparse_is_name(p, 0, "in")) {
            return FG_JOP_IN;
        }

        return t->type == FG_JT_CMP ? fg_jparse_op(t) : 0;
    case 1:
        return t->type == FG_JT_ADD ? fg_jparse_op(t) : 0;
    case 2:
        return t->type == FG_JT_MUL ? fg_jparse_op(t) : 0;
    default:
        return t->type == FG_JT_POW ? FG_JOP_POW : 0;
    }
}


static fg_jnode_t *fg_jparse_test(fg_jparser_t *p);


static fg_jnode_t *
fg_jparse_level(fg_jparser_t *p, int level)
{
    int          op;
    size_t       skip;
    fg_jnode_t  *a, *b;

    a = level < 3 ? fg_jparse_level(p, level + 1) : fg_jparse_test(p);

    while ((op = fg_jparse_level_op(p, level, &skip)) != 0) {
        p->cur += skip;
        b = level < 3 ? fg_jparse_level(p, level + 1) : fg_jparse_test(p);
        a = fg_jparse_binary(p, op, a, b);
    }

    return a;
}


static fg_jnode_t *
fg_jparse_filter(fg_jparser_t *p)
{
    fg_jnode_t  *a, *n, *name;

    a = fg_jparse_unary(p);

    while (fg_jparse_is(p, FG_JT_PIPE)) {
        p->cur++;
        n = fg_jparse_node(p, FG_JN_FILTER);
        name = fg_jparse_primary(p);

        if (name->type != FG_JN_NAME) {
            fg_jparse_fail(p, "expected a filter's name");
        }

        n->name = name->name;
        n->a = a;

        if (fg_jparse_is(p, FG_JT_LPAREN)) {
            n->op = 1;
            fg_jparse_args(p, n);
        }

        a = n;
    }

    return a;
}


static fg_jnode_t *
fg_jparse_test(fg_jparser_t *p)
{
    fg_jnode_t  *a, *n, *name;

    a = fg_jparse_filter(p);

    while (fg_jparse_is_name(p, 0, "is")) {
        p->cur++;
        n = fg_jparse_node(p, FG_JN_TEST);

        if (fg_jparse_is_name(p, 0, "not")) {
            p->cur++;
            n->op = 1;
        }

        name = fg_jparse_primary(p);

        if (name->type != FG_JN_NAME) {
            fg_jparse_fail(p, "expected a test's name");
        }

        n->name = name->name;
        n->a = a;
        a = n;
    }

    return a;
}


static fg_jnode_t *fg_jparse_member(fg_jparser_t *p, fg_jnode_t *a);


static fg_jnode_t *
fg_jparse_call(fg_jparser_t *p, fg_jnode_t *callee)
{
    fg_jnode_t  *n;

    n = fg_jparse_node(p, FG_JN_CALL);
    n->pos = callee->pos;
    n->a = callee;
    fg_jparse_args(p, n);

    n = fg_jparse_member(p, n);

    if (fg_jparse_is(p, FG_JT_LPAREN)) {
        n = fg_jparse_call(p, n);
    }

    return n;
}


static fg_jnode_t *
fg_jparse_unary(fg_jparser_t *p)
{
    fg_jtok_t   *t;
    fg_jnode_t  *n;

    t = &p->lx->toks[p->cur];

    if ((t->type == FG_JT_UNARY || t->type == FG_JT_ADD)
        && (t->data[0] == '-' || t->data[0] == '+') && t->len == 1)
    {
        n = fg_jparse_node(p, FG_JN_UNARY);
        n->op = t->data[0] == '-' ? FG_JOP_NEG : FG_JOP_POS;
        p->cur++;

        if (++p->depth > FG_JINJA_MAX_NEST) {
            fg_jparse_fail(p, "expression nested too deep");
        }

        n->a = fg_jparse_unary(p);
        p->depth--;

        return n;
    }

    n = fg_jparse_member(p, fg_jparse_primary(p));

    if (fg_jparse_is(p, FG_JT_LPAREN)) {
        n = fg_jparse_call(p, n);
    }

    return n;
}


/* inside [ ]: an index, or a slice of up to three parts */
static fg_jnode_t *
fg_jparse_subscript(fg_jparser_t *p, fg_jnode_t *obj)
{
    int          slice;
    size_t       cap;
    fg_jnode_t  *n, *part;

    n = fg_jparse_node(p, FG_JN_SLICE);
    n->pos = obj->pos;
    n->a = obj;
    slice = 0;
    cap = 0;

    while (!fg_jparse_is(p, FG_JT_RBRACKET)) {
        if (p->cur >= p->lx->n) {
            fg_jparse_fail(p, "expected ]");
        }

        if (fg_jparse_is(p, FG_JT_COLON)) {
            part = NULL;
            p->cur++;
            slice = 1;

        } else {
            part = fg_jparse_expr(p);

            if (fg_jparse_is(p, FG_JT_COLON)) {
                p->cur++;
                slice = 1;
            }
        }

        fg_jparse_push(p, &n->args, &n->n_args, &cap, part);
    }

    if (n->n_args == 0) {
        fg_jparse_fail(p, "expected an index or a slice");
    }

    if (!slice) {
        n->type = FG_JN_MEMBER;
        n->op = 1;
        n->b = n->args[0];
        n->args = NULL;
        n->n_args = 0;

    } else if (n->n_args > 3) {
        fg_jparse_fail(p, "a slice has at most three parts");
    }

    p->cur++;

    return n;
}


static fg_jnode_t *
fg_jparse_member(fg_jparser_t *p, fg_jnode_t *a)
{
    fg_jnode_t  *n;

    for ( ;; ) {
        if (fg_jparse_is(p, FG_JT_LBRACKET)) {
            p->cur++;
            a = fg_jparse_subscript(p, a);
            continue;
        }

        if (!fg_jparse_is(p, FG_JT_DOT)) {
            return a;
        }

        p->cur++;
        n = fg_jparse_node(p, FG_JN_MEMBER);
        n->pos = a->pos;
        n->a = a;
        n->b = fg_jparse_primary(p);

        if (n->b->type != FG_JN_NAME
            && !(n->b->type == FG_JN_LITERAL
                 && n->b->value->type == FG_JV_INT))
        {
            fg_jparse_fail(p, "expected a name or an integer after a dot");
        }

        a = n;
    }
}


void
fg_jparse_args(fg_jparser_t *p, fg_jnode_t *n)
{
    size_t       cap;
    fg_jnode_t  *a, *kw;

    fg_jparse_expect(p, FG_JT_LPAREN, "(");
    cap = 0;

    while (!fg_jparse_is(p, FG_JT_RPAREN)) {
        if (p->cur >= p->lx->n) {
            fg_jparse_fail(p, "expected )");
        }

        if (fg_jparse_is(p, FG_JT_MUL) || fg_jparse_is(p, FG_JT_POW)) {
            fg_jparse_fail(p, "argument unpacking is not supported");
        }

        a = fg_jparse_expr(p);

        if (fg_jparse_is(p, FG_JT_ASSIGN)) {
            p->cur++;

            if (a->type != FG_JN_NAME) {
                fg_jparse_fail(p, "expected a name for a keyword argument");
            }

            kw = fg_jparse_node(p, FG_JN_KWARG);
            kw->pos = a->pos;
            kw->name = a->name;
            kw->a = fg_jparse_expr(p);
            a = kw;

        } else if (n->n_args && n->args[n->n_args - 1]->type == FG_JN_KWARG)
        {
            fg_jparse_fail(p, "positional arguments must come before "
                           "keyword arguments");
        }

        fg_jparse_push(p, &n->args, &n->n_args, &cap, a);

        if (fg_jparse_is(p, FG_JT_COMMA)) {
            p->cur++;
        }
    }

    p->cur++;
}


static fg_jv_t *
fg_jparse_value(fg_jparser_t *p, fg_jv_type_e type)
{
    fg_jv_t  *v;

    v = fg_jinja_alloc(&p->tpl->arena, sizeof(fg_jv_t));

    if (v == NULL) {
        fg_jparse_fail(p, "out of memory");
    }

    memset(v, 0, sizeof(fg_jv_t));
    v->type = type;

    return v;
}


static fg_jnode_t *
fg_jparse_literal(fg_jparser_t *p, fg_jtok_t *t)
{
    char        *s, num[64];
    size_t       len;
    fg_jnode_t  *n;

    n = fg_jparse_node(p, FG_JN_LITERAL);
    n->pos = t->pos;

    if (t->type != FG_JT_STRING) {
        len = t->len < sizeof(num) ? t->len : sizeof(num) - 1;
        memcpy(num, t->data, len);
        num[len] = '\0';

        if (t->type == FG_JT_INT) {
            n->value = fg_jparse_value(p, FG_JV_INT);
            n->value->u.i = strtoll(num, NULL, 10);

        } else {
            n->value = fg_jparse_value(p, FG_JV_FLOAT);
            n->value->u.f = strtod(num, NULL);
        }

        return n;
    }

    /* adjacent strings are one */
    len = t->len;

    while (p->cur < p->lx->n && p->lx->toks[p->cur].type == FG_JT_STRING) {
        len += p->lx->toks[p->cur].len;
        p->cur++;
    }

    s = fg_jinja_alloc(&p->tpl->arena, len + 1);

    if (s == NULL) {
        fg_jparse_fail(p, "out of memory");
    }

    n->value = fg_jparse_value(p, FG_JV_STR);
    n->value->u.s.data = s;
    n->value->u.s.len = len;

    for ( /* void */ ; t < &p->lx->toks[p->cur]; t++) {
        memcpy(s, t->data, t->len);
        s += t->len;
    }

    return n;
}


/* [a, b] and {k: v}: at the bracket */
static fg_jnode_t *
fg_jparse_display(fg_jparser_t *p, fg_jnode_type_e type)
{
    size_t       cap;
    fg_jnode_t  *n;

    n = fg_jparse_node(p, type);
    p->cur++;
    cap = 0;

    while (!fg_jparse_is(p, type == FG_JN_LIST ? FG_JT_RBRACKET
                                               : FG_JT_RBRACE))
    {
        if (p->cur >= p->lx->n) {
            fg_jparse_fail(p, "unexpected end of template");
        }

        fg_jparse_push(p, &n->args, &n->n_args, &cap, fg_jparse_expr(p));

        if (type == FG_JN_DICT) {
            fg_jparse_expect(p, FG_JT_COLON, ":");
            fg_jparse_push(p, &n->args, &n->n_args, &cap,
                           fg_jparse_expr(p));
        }

        if (fg_jparse_is(p, FG_JT_COMMA)) {
            p->cur++;
        }
    }

    p->cur++;

    return n;
}


fg_jnode_t *
fg_jparse_primary(fg_jparser_t *p)
{
    fg_jtok_t   *t;
    fg_jnode_t  *n;

    t = &p->lx->toks[p->cur];

    switch (t->type) {

    case FG_JT_INT:
    case FG_JT_FLOAT:
    case FG_JT_STRING:
        p->cur++;
        return fg_jparse_literal(p, t);

    case FG_JT_NAME:
        n = fg_jparse_node(p, FG_JN_NAME);
        n->name.data = t->data;
        n->name.len = t->len;
        p->cur++;
        return n;

    case FG_JT_LPAREN:
        p->cur++;
        n = fg_jparse_sequence(p, 0);
        fg_jparse_expect(p, FG_JT_RPAREN, ")");
        return n;

    case FG_JT_LBRACKET:
        return fg_jparse_display(p, FG_JN_LIST);

    case FG_JT_LBRACE:
        return fg_jparse_display(p, FG_JN_DICT);

    default:
        fg_jparse_fail(p, "unexpected %s",
                       t->type == FG_JT_END ? "end of template" : "token");
    }
}


/* a, b, c: a tuple when there is a comma */
fg_jnode_t *
fg_jparse_sequence(fg_jparser_t *p, int primary)
{
    size_t       cap;
    fg_jnode_t  *a, *n;

    a = primary ? fg_jparse_primary(p) : fg_jparse_expr(p);

    if (!fg_jparse_is(p, FG_JT_COMMA)) {
        return a;
    }

    n = fg_jparse_node(p, FG_JN_TUPLE);
    n->pos = a->pos;
    cap = 0;
    fg_jparse_push(p, &n->args, &n->n_args, &cap, a);

    while (fg_jparse_is(p, FG_JT_COMMA)) {
        p->cur++;
        a = primary ? fg_jparse_primary(p) : fg_jparse_expr(p);
        fg_jparse_push(p, &n->args, &n->n_args, &cap, a);
    }

    return n;
}
