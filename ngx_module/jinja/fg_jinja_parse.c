
/*
 * fairgate: tokens to the statements of a template (text, {{ }}, if,
 * for, set, macro, break, continue), as the reference's parser reads
 * them; fg_jinja_expr.c reads the expressions.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_jinja_int.h"


static fg_jnode_t *fg_jparse_any(fg_jparser_t *p);


static void
fg_jparse_expect_name(fg_jparser_t *p, const char *name)
{
    if (!fg_jparse_is_name(p, 0, name)) {
        fg_jparse_fail(p, "expected %s", name);
    }

    p->cur++;
}


/* "{% NAME" for one of the names (a NULL-ended list) */
static int
fg_jparse_at_stmt(fg_jparser_t *p, const char **names)
{
    if (!fg_jparse_is(p, FG_JT_OPEN_STMT)) {
        return 0;
    }

    for ( /* void */ ; *names; names++) {
        if (fg_jparse_is_name(p, 1, *names)) {
            return 1;
        }
    }

    return 0;
}


/* statements until one of the names; the end of input is an error */
static void
fg_jparse_body(fg_jparser_t *p, fg_jnode_t ***list, size_t *n,
    const char **until)
{
    size_t       cap;
    fg_jnode_t  *s;

    cap = 0;

    while (!fg_jparse_at_stmt(p, until)) {
        if (p->cur >= p->lx->n) {
            fg_jparse_fail(p, "unexpected end of template, expected "
                           "{%% %s %%}", until[0]);
        }

        s = fg_jparse_any(p);

        if (s) {
            fg_jparse_push(p, list, n, &cap, s);
        }
    }
}


static void
fg_jparse_end(fg_jparser_t *p, const char *name)
{
    fg_jparse_expect(p, FG_JT_OPEN_STMT, "{%");
    fg_jparse_expect_name(p, name);
    fg_jparse_expect(p, FG_JT_CLOSE_STMT, "%}");
}


static fg_jnode_t *
fg_jparse_if(fg_jparser_t *p)
{
    fg_jnode_t  *n, *elif;
    size_t       cap;

    static const char  *until[] = { "endif", "elif", "else", NULL };
    static const char  *endif[] = { "endif", NULL };

    n = fg_jparse_node(p, FG_JN_IF);
    n->a = fg_jparse_expr(p);
    fg_jparse_expect(p, FG_JT_CLOSE_STMT, "%}");
    fg_jparse_body(p, &n->body, &n->n_body, until);

    if (fg_jparse_is_name(p, 1, "elif")) {
        p->cur += 2;
        elif = fg_jparse_if(p);
        cap = 0;
        fg_jparse_push(p, &n->alt, &n->n_alt, &cap, elif);
        return n;
    }

    if (fg_jparse_is_name(p, 1, "else")) {
        p->cur += 2;
        fg_jparse_expect(p, FG_JT_CLOSE_STMT, "%}");
        fg_jparse_body(p, &n->alt, &n->n_alt, endif);
    }

    return n;
}


static fg_jnode_t *
fg_jparse_for(fg_jparser_t *p)
{
    fg_jnode_t  *n, *it;

    static const char  *until[] = { "endfor", "else", NULL };
    static const char  *endfor[] = { "endfor", NULL };

    n = fg_jparse_node(p, FG_JN_FOR);
    n->a = fg_jparse_sequence(p, 1);

    if (n->a->type != FG_JN_NAME && n->a->type != FG_JN_TUPLE) {
        fg_jparse_fail(p, "expected a name or names for the loop variable");
    }

    fg_jparse_expect_name(p, "in");
    it = fg_jparse_expr(p);

    /* "for x in xs if test": the test filters the items */
    if (it->type == FG_JN_SELECT) {
        n->b = it->a;
        n->c = it->b;

    } else {
        n->b = it;
    }

    fg_jparse_expect(p, FG_JT_CLOSE_STMT, "%}");
    fg_jparse_body(p, &n->body, &n->n_body, until);

    if (fg_jparse_is_name(p, 1, "else")) {
        p->cur += 2;
        fg_jparse_expect(p, FG_JT_CLOSE_STMT, "%}");
        fg_jparse_body(p, &n->alt, &n->n_alt, endfor);
    }

    fg_jparse_end(p, "endfor");

    return n;
}


static fg_jnode_t *
fg_jparse_set(fg_jparser_t *p)
{
    fg_jnode_t  *n;

    static const char  *endset[] = { "endset", NULL };

    n = fg_jparse_node(p, FG_JN_SET);
    n->a = fg_jparse_sequence(p, 0);

    if (n->a->type != FG_JN_NAME && n->a->type != FG_JN_TUPLE
        && !(n->a->type == FG_JN_MEMBER && n->a->op == 0))
    {
        fg_jparse_fail(p, "cannot assign to this expression");
    }

    if (fg_jparse_is(p, FG_JT_ASSIGN)) {
        p->cur++;
        n->b = fg_jparse_sequence(p, 0);

    } else {
        fg_jparse_expect(p, FG_JT_CLOSE_STMT, "%}");
        fg_jparse_body(p, &n->body, &n->n_body, endset);
        fg_jparse_expect(p, FG_JT_OPEN_STMT, "{%");
        fg_jparse_expect_name(p, "endset");
    }

    fg_jparse_expect(p, FG_JT_CLOSE_STMT, "%}");

    return n;
}


static fg_jnode_t *
fg_jparse_macro(fg_jparser_t *p)
{
    size_t       i;
    fg_jnode_t  *n, *name, *arg;

    static const char  *endmacro[] = { "endmacro", NULL };

    n = fg_jparse_node(p, FG_JN_MACRO);
    name = fg_jparse_primary(p);

    if (name->type != FG_JN_NAME) {
        fg_jparse_fail(p, "expected a name after macro");
    }

    n->name = name->name;
    fg_jparse_args(p, n);

    for (i = 0; i < n->n_args; i++) {
        arg = n->args[i];

        if (arg->type != FG_JN_NAME && arg->type != FG_JN_KWARG) {
            fg_jparse_fail(p, "expected a name for a macro parameter");
        }
    }

    fg_jparse_expect(p, FG_JT_CLOSE_STMT, "%}");
    fg_jparse_body(p, &n->body, &n->n_body, endmacro);
    fg_jparse_end(p, "endmacro");

    return n;
}


/* {% filter NAME %} or {% filter NAME(ARGS) %}: the body's text
 * filtered */
static fg_jnode_t *
fg_jparse_filtered(fg_jparser_t *p)
{
    fg_jnode_t  *n, *name;

    static const char  *endfilter[] = { "endfilter", NULL };

    n = fg_jparse_node(p, FG_JN_FILTERED);
    name = fg_jparse_primary(p);

    if (name->type != FG_JN_NAME) {
        fg_jparse_fail(p, "expected a filter's name");
    }

    n->a = fg_jparse_node(p, FG_JN_FILTER);
    n->a->pos = name->pos;
    n->a->name = name->name;

    if (fg_jparse_is(p, FG_JT_LPAREN)) {
        n->a->op = 1;
        fg_jparse_args(p, n->a);
    }

    fg_jparse_expect(p, FG_JT_CLOSE_STMT, "%}");
    fg_jparse_body(p, &n->body, &n->n_body, endfilter);
    fg_jparse_end(p, "endfilter");

    return n;
}


static fg_jnode_t *
fg_jparse_statement(fg_jparser_t *p)
{
    fg_jnode_t  *n;

    fg_jparse_expect(p, FG_JT_OPEN_STMT, "{%");

    if (!fg_jparse_is(p, FG_JT_NAME)) {
        fg_jparse_fail(p, "expected a statement");
    }

    if (++p->depth > FG_JINJA_MAX_NEST) {
        fg_jparse_fail(p, "statements nested too deep");
    }

    if (fg_jparse_is_name(p, 0, "set")) {
        p->cur++;
        n = fg_jparse_set(p);

    } else if (fg_jparse_is_name(p, 0, "if")) {
        p->cur++;
        n = fg_jparse_if(p);
        fg_jparse_end(p, "endif");

    } else if (fg_jparse_is_name(p, 0, "for")) {
        p->cur++;
        n = fg_jparse_for(p);

    } else if (fg_jparse_is_name(p, 0, "macro")) {
        p->cur++;
        n = fg_jparse_macro(p);

    } else if (fg_jparse_is_name(p, 0, "filter")) {
        p->cur++;
        n = fg_jparse_filtered(p);

    } else if (fg_jparse_is_name(p, 0, "break")
               || fg_jparse_is_name(p, 0, "continue"))
    {
        n = fg_jparse_node(p, fg_jparse_is_name(p, 0, "break")
                              ? FG_JN_BREAK : FG_JN_CONTINUE);
        p->cur++;
        fg_jparse_expect(p, FG_JT_CLOSE_STMT, "%}");

    } else {
        fg_jparse_fail(p, "unknown statement %.*s",
                       (int) p->lx->toks[p->cur].len,
                       p->lx->toks[p->cur].data);
    }

    p->depth--;

    return n;
}


/* one statement, text or output; NULL for a comment */
static fg_jnode_t *
fg_jparse_any(fg_jparser_t *p)
{
    fg_jtok_t   *t;
    fg_jnode_t  *n;

    t = &p->lx->toks[p->cur];

    switch (t->type) {

    case FG_JT_COMMENT:
        p->cur++;
        return NULL;

    case FG_JT_TEXT:
        n = fg_jparse_node(p, FG_JN_TEXT);
        n->name.data = t->data;
        n->name.len = t->len;
        p->cur++;
        return n;

    case FG_JT_OPEN_STMT:
        return fg_jparse_statement(p);

    case FG_JT_OPEN_EXPR:
        n = fg_jparse_node(p, FG_JN_OUTPUT);
        p->cur++;
        n->a = fg_jparse_expr(p);
        fg_jparse_expect(p, FG_JT_CLOSE_EXPR, "}}");
        return n;

    default:
        fg_jparse_fail(p, "unexpected token");
    }
}


void
fg_jinja_limits_init(fg_jinja_limits_t *lim)
{
    lim->max_output = 4 * 1024 * 1024;
    lim->max_memory = 64 * 1024 * 1024;
    lim->max_steps = 10 * 1000 * 1000;
    lim->max_depth = 64;
}


/* the statements of the whole template; -1 with err */
static int
fg_jinja_parse_tokens(fg_jinja_t *t, fg_jlex_t *lx, fg_jinja_err_t *err)
{
    size_t         cap;
    fg_jnode_t    *s;
    fg_jparser_t   p;

    memset(&p, 0, sizeof(fg_jparser_t));
    p.tpl = t;
    p.lx = lx;
    p.err = err;

    if (setjmp(p.fail)) {
        return -1;
    }

    cap = 0;

    while (p.cur < lx->n) {
        s = fg_jparse_any(&p);

        if (s) {
            fg_jparse_push(&p, &t->body, &t->n_body, &cap, s);
        }
    }

    return 0;
}


fg_jinja_t *
fg_jinja_parse(const char *src, size_t len, fg_jinja_err_t *err)
{
    fg_jlex_t      lx;
    fg_jinja_t    *t;

    memset(err, 0, sizeof(fg_jinja_err_t));

    t = calloc(1, sizeof(fg_jinja_t));
    if (t == NULL) {
        goto nomem;
    }

    t->src = malloc(len + 1);
    if (t->src == NULL) {
        free(t);
        goto nomem;
    }

    memcpy(t->src, src, len);
    t->src[len] = '\0';
    t->len = len;

    if (fg_jinja_lex(t, src, len, &lx, err) != 0
        || fg_jinja_parse_tokens(t, &lx, err) != 0)
    {
        fg_jinja_free(t);
        return NULL;
    }

    return t;

nomem:

    err->rc = FG_JINJA_ENOMEM;
    snprintf(err->message, sizeof(err->message), "out of memory");

    return NULL;
}


void
fg_jinja_free(fg_jinja_t *t)
{
    if (t == NULL) {
        return;
    }

    fg_jinja_arena_free(&t->arena);
    free(t->src);
    free(t);
}
