
/*
 * fairgate: the parser's cursor over the tokens, which the statements'
 * parser (fg_jinja_parse.c) and the expressions' (fg_jinja_expr.c)
 * share: a look at the next tokens, a token expected, a node made, a
 * list grown, an error with its place.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_jinja_int.h"


void
fg_jparse_fail(fg_jparser_t *p, const char *fmt, ...)
{
    va_list  args;

    p->err->rc = FG_JINJA_ESYNTAX;

    va_start(args, fmt);
    vsnprintf(p->err->message, sizeof(p->err->message), fmt, args);
    va_end(args);

    fg_jinja_where(p->tpl, p->lx->toks[p->cur].pos, p->err);

    longjmp(p->fail, 1);
}


fg_jnode_t *
fg_jparse_node(fg_jparser_t *p, fg_jnode_type_e type)
{
    fg_jnode_t  *n;

    n = fg_jinja_alloc(&p->tpl->arena, sizeof(fg_jnode_t));

    if (n == NULL) {
        p->err->rc = FG_JINJA_ENOMEM;
        snprintf(p->err->message, sizeof(p->err->message), "out of memory");
        longjmp(p->fail, 1);
    }

    memset(n, 0, sizeof(fg_jnode_t));
    n->type = type;
    n->pos = p->lx->toks[p->cur].pos;

    return n;
}


void
fg_jparse_push(fg_jparser_t *p, fg_jnode_t ***list, size_t *n, size_t *cap,
    fg_jnode_t *item)
{
    fg_jnode_t  **l;

    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 4;
        l = fg_jinja_alloc(&p->tpl->arena, *cap * sizeof(fg_jnode_t *));

        if (l == NULL) {
            p->err->rc = FG_JINJA_ENOMEM;
            snprintf(p->err->message, sizeof(p->err->message),
                     "out of memory");
            longjmp(p->fail, 1);
        }

        if (*n) {
            memcpy(l, *list, *n * sizeof(fg_jnode_t *));
        }

        *list = l;
    }

    (*list)[(*n)++] = item;
}


int
fg_jparse_is(fg_jparser_t *p, fg_jtok_type_e type)
{
    return p->lx->toks[p->cur].type == type;
}


int
fg_jparse_is_name(fg_jparser_t *p, size_t ahead, const char *name)
{
    fg_jtok_t  *t;

    if (p->cur + ahead >= p->lx->n) {
        return 0;
    }

    t = &p->lx->toks[p->cur + ahead];

    return t->type == FG_JT_NAME && t->len == strlen(name)
           && memcmp(t->data, name, t->len) == 0;
}


void
fg_jparse_expect(fg_jparser_t *p, fg_jtok_type_e type, const char *what)
{
    if (!fg_jparse_is(p, type)) {
        fg_jparse_fail(p, "expected %s", what);
    }

    p->cur++;
}
