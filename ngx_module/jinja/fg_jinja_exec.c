
/*
 * fairgate: a template's statements run, and the render itself.
 *
 * As in the reference: a for loop has a scope of its own (a set inside
 * it stays inside), an if has none; break and continue drop what the
 * loop's current pass wrote; a macro's scope sits in its caller's.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_jinja_int.h"


#define FG_JFLOW_NEXT      0
#define FG_JFLOW_BREAK     1
#define FG_JFLOW_CONTINUE  2


static int fg_jexec(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n);


fg_jscope_t *
fg_jscope_new(fg_jctx_t *c, fg_jscope_t *parent)
{
    fg_jscope_t  *s;

    s = fg_jctx_alloc(c, sizeof(fg_jscope_t));
    s->vars = fg_jv_object(c);
    s->parent = parent;

    return s;
}


static int
fg_jexec_list(fg_jctx_t *c, fg_jscope_t *s, fg_jnode_t **body, size_t n)
{
    int     flow;
    size_t  i;

    for (i = 0; i < n; i++) {
        flow = fg_jexec(c, s, body[i]);

        if (flow != FG_JFLOW_NEXT) {
            return flow;
        }
    }

    return FG_JFLOW_NEXT;
}


void
fg_jexec_block(fg_jctx_t *c, fg_jscope_t *s, fg_jnode_t **body, size_t n)
{
    if (fg_jexec_list(c, s, body, n) != FG_JFLOW_NEXT) {
        fg_jfail(c, NULL, FG_JINJA_ERUNTIME, "break or continue outside "
                 "of a loop");
    }
}


/* the text a block writes, gathered as a string */
static fg_jv_t *
fg_jexec_gather(fg_jctx_t *c, fg_jscope_t *s, fg_jnode_t **body, size_t n)
{
    fg_jbuf_t  buf, *out;

    fg_jbuf_init(&buf);
    out = c->out;
    c->out = &buf;

    fg_jexec_block(c, s, body, n);

    c->out = out;

    return fg_jbuf_value(c, &buf);
}


static void
fg_jexec_assign(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *target,
    fg_jv_t *v)
{
    size_t    i;
    fg_jv_t  *obj;

    if (target->type == FG_JN_NAME) {
        fg_jv_set(c, s->vars, target->name, v);
        return;
    }

    if (target->type == FG_JN_MEMBER) {
        obj = fg_jeval(c, s, target->a);

        if (obj->type != FG_JV_NS) {
            fg_jfail(c, target, FG_JINJA_ERUNTIME, "cannot set an "
                     "attribute of a %s, only of a namespace",
                     fg_jv_type_name(obj));
        }

        fg_jv_set(c, obj, target->b->name, v);
        return;
    }

    if (v->type != FG_JV_ARRAY || v->u.a.n != target->n_args) {
        fg_jfail(c, target, FG_JINJA_ERUNTIME, "cannot unpack a %s into "
                 "%zu names", fg_jv_type_name(v), target->n_args);
    }

    for (i = 0; i < target->n_args; i++) {
        if (target->args[i]->type != FG_JN_NAME) {
            fg_jfail(c, target, FG_JINJA_ERUNTIME, "can only unpack into "
                     "names");
        }

        fg_jv_set(c, s->vars, target->args[i]->name, v->u.a.items[i]);
    }
}


static void
fg_jexec_loop_var(fg_jctx_t *c, fg_jscope_t *s, fg_jv_t *items, size_t i)
{
    size_t     n;
    fg_jv_t   *loop;
    fg_jstr_t  k;

    static const char  *names[] = {
        "index", "index0", "revindex", "revindex0", "first", "last",
        "length", "previtem", "nextitem"
    };

    n = items->u.a.n;
    loop = fg_jv_object(c);

#define FG_JLOOP_SET(idx, v)                                                \
    k.data = names[idx];                                                    \
    k.len = strlen(names[idx]);                                             \
    k.user = NULL;                                                          \
    fg_jv_set(c, loop, k, v)

    FG_JLOOP_SET(0, fg_jv_int(c, i + 1));
    FG_JLOOP_SET(1, fg_jv_int(c, i));
    FG_JLOOP_SET(2, fg_jv_int(c, n - i));
    FG_JLOOP_SET(3, fg_jv_int(c, n - i - 1));
    FG_JLOOP_SET(4, fg_jv_bool(i == 0));
    FG_JLOOP_SET(5, fg_jv_bool(i == n - 1));
    FG_JLOOP_SET(6, fg_jv_int(c, n));
    FG_JLOOP_SET(7, i > 0 ? items->u.a.items[i - 1] : &fg_jv_undef);
    FG_JLOOP_SET(8, i + 1 < n ? items->u.a.items[i + 1] : &fg_jv_undef);

#undef FG_JLOOP_SET

    k.data = "loop";
    k.len = 4;
    k.user = NULL;
    fg_jv_set(c, s->vars, k, loop);
}


/* the items a loop runs over: a mapping's keys, filtered by "if" */
static fg_jv_t *
fg_jexec_items(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n)
{
    size_t        i, k;
    fg_jv_t      *it, *items, *item;
    fg_jscope_t  *test;

    it = fg_jeval(c, s, n->b);

    if (it->type == FG_JV_OBJECT) {
        items = fg_jv_array(c, it->u.o.n);

        for (i = 0; i < it->u.o.n; i++) {
            items->u.a.items[i] = fg_jv_jstr(c, it->u.o.keys[i]);
        }

        it = items;
    }

    if (it->type != FG_JV_ARRAY) {
        fg_jfail(c, n->b, FG_JINJA_ERUNTIME, "cannot loop over a %s",
                 fg_jv_type_name(it));
    }

    if (n->c == NULL) {
        return it;
    }

    items = fg_jv_array(c, it->u.a.n);
    k = 0;

    for (i = 0; i < it->u.a.n; i++) {
        item = it->u.a.items[i];
        test = fg_jscope_new(c, s);
        fg_jexec_assign(c, test, n->a, item);

        if (fg_jv_truthy(fg_jeval(c, test, n->c))) {
            items->u.a.items[k++] = item;
        }
    }

    items->u.a.n = k;

    return items;
}


static void
fg_jexec_for(fg_jctx_t *c, fg_jscope_t *outer, const fg_jnode_t *n)
{
    int           flow, done;
    size_t        i, mark;
    fg_jv_t      *items;
    fg_jscope_t  *s;

    s = fg_jscope_new(c, outer);
    items = fg_jexec_items(c, s, n);
    done = 0;

    for (i = 0; i < items->u.a.n; i++) {
        fg_jexec_loop_var(c, s, items, i);
        fg_jexec_assign(c, s, n->a, items->u.a.items[i]);

        mark = c->out->len;
        flow = fg_jexec_list(c, s, n->body, n->n_body);

        if (flow != FG_JFLOW_NEXT) {
            /* the reference drops what the pass wrote */
            c->out->len = mark;

            if (flow == FG_JFLOW_BREAK) {
                break;
            }

            continue;
        }

        done = 1;
    }

    if (!done) {
        fg_jexec_block(c, s, n->alt, n->n_alt);
    }
}


fg_jv_t *
fg_jcall_macro(fg_jctx_t *c, fg_jscope_t *caller, const fg_jv_t *m,
    const fg_jargs_t *a, const fg_jnode_t *n)
{
    size_t             i, k;
    fg_jv_t           *v;
    fg_jscope_t       *s;
    const fg_jnode_t  *def, *p;

    def = m->u.macro;

    if (a->n_pos > def->n_args) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "macro %.*s takes at most %zu "
                 "arguments", (int) def->name.len, def->name.data,
                 def->n_args);
    }

    if (++c->depth > c->lim->max_depth) {
        fg_jfail(c, n, FG_JINJA_ELIMIT, "macro calls nested deeper than %u",
                 c->lim->max_depth);
    }

    /* a keyword that names no parameter is the reference's error too */
    for (i = 0; a->kw && i < a->kw->u.o.n; i++) {
        for (k = 0; k < def->n_args; k++) {
            if (def->args[k]->name.len == a->kw->u.o.keys[i].len
                && memcmp(def->args[k]->name.data, a->kw->u.o.keys[i].data,
                          a->kw->u.o.keys[i].len) == 0)
            {
                break;
            }
        }

        if (k == def->n_args) {
            fg_jfail(c, n, FG_JINJA_ERUNTIME, "macro %.*s takes no keyword "
                     "argument %.*s", (int) def->name.len, def->name.data,
                     (int) a->kw->u.o.keys[i].len, a->kw->u.o.keys[i].data);
        }
    }

    s = fg_jscope_new(c, caller);

    for (i = 0; i < def->n_args; i++) {
        p = def->args[i];
        v = fg_jarg(a, i, NULL);

        if (v == NULL && a->kw) {
            v = fg_jv_get(a->kw, p->name.data, p->name.len);
        }

        fg_jv_set(c, s->vars, p->name, v ? v : &fg_jv_undef);
    }

    for (i = 0; i < def->n_args; i++) {
        p = def->args[i];

        if (p->type == FG_JN_KWARG
            && fg_jv_get(s->vars, p->name.data, p->name.len)->type
               == FG_JV_UNDEF)
        {
            fg_jv_set(c, s->vars, p->name, fg_jeval(c, s, p->a));
        }
    }

    v = fg_jexec_gather(c, s, def->body, def->n_body);
    c->depth--;

    return v;
}


static int
fg_jexec(fg_jctx_t *c, fg_jscope_t *s, const fg_jnode_t *n)
{
    fg_jv_t  *v;

    if (++c->steps > c->lim->max_steps) {
        fg_jfail(c, n, FG_JINJA_ELIMIT, "the template took more than %llu "
                 "steps", (unsigned long long) c->lim->max_steps);
    }

    switch (n->type) {

    case FG_JN_TEXT:
        fg_jbuf_add(c, c->out, n->name.data, n->name.len, NULL, 0);
        return FG_JFLOW_NEXT;

    case FG_JN_OUTPUT:
        fg_jbuf_value_text(c, c->out, fg_jeval(c, s, n->a));
        return FG_JFLOW_NEXT;

    case FG_JN_IF:
        if (fg_jv_truthy(fg_jeval(c, s, n->a))) {
            return fg_jexec_list(c, s, n->body, n->n_body);
        }

        return fg_jexec_list(c, s, n->alt, n->n_alt);

    case FG_JN_FOR:
        fg_jexec_for(c, s, n);
        return FG_JFLOW_NEXT;

    case FG_JN_SET:
        v = n->b ? fg_jeval(c, s, n->b)
                 : fg_jexec_gather(c, s, n->body, n->n_body);
        fg_jexec_assign(c, s, n->a, v);
        return FG_JFLOW_NEXT;

    case FG_JN_MACRO:
        v = fg_jv_new(c, FG_JV_MACRO);
        v->u.macro = n;
        fg_jv_set(c, s->vars, n->name, v);
        return FG_JFLOW_NEXT;

    case FG_JN_FILTERED:
        v = fg_jexec_gather(c, s, n->body, n->n_body);
        fg_jbuf_value_text(c, c->out, fg_jfilter(c, s, v, n->a));
        return FG_JFLOW_NEXT;

    case FG_JN_BREAK:
        return FG_JFLOW_BREAK;

    case FG_JN_CONTINUE:
        return FG_JFLOW_CONTINUE;

    default:
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "not a statement");
    }
}


static void
fg_jinja_vars(fg_jctx_t *c, fg_jscope_t *s, const json_t *vars, int user)
{
    const char  *key;
    json_t      *v;
    fg_jstr_t    k;

    if (vars == NULL) {
        return;
    }

    json_object_foreach((json_t *) vars, key, v) {
        k.len = strlen(key);
        k.data = fg_jv_str(c, key, k.len, 0)->u.s.data;
        k.user = NULL;
        fg_jv_set(c, s->vars, k, fg_jv_from_json(c, v, user));
    }
}


/* the output handed over: one block, the text and its segments */
static int
fg_jinja_output(fg_jbuf_t *b, fg_jinja_out_t *out)
{
    size_t           i, n;
    fg_jinja_seg_t  *seg;

    n = 0;

    for (i = 0; i < b->len; i++) {
        if (i == 0 || b->user[i] != b->user[i - 1]) {
            n++;
        }
    }

    out->segs = malloc((n + 1) * sizeof(fg_jinja_seg_t) + b->len + 1);
    if (out->segs == NULL) {
        return -1;
    }

    out->text = (char *) (out->segs + n + 1);
    out->len = b->len;
    out->n_segs = n;

    if (b->len) {
        memcpy(out->text, b->data, b->len);
    }

    out->text[b->len] = '\0';
    seg = out->segs - 1;

    for (i = 0; i < b->len; i++) {
        if (i == 0 || b->user[i] != b->user[i - 1]) {
            seg++;
            seg->data = out->text + i;
            seg->len = 0;
            seg->user = b->user[i];
        }

        seg->len++;
    }

    return 0;
}


int
fg_jinja_render(const fg_jinja_t *t, const json_t *trusted,
    const json_t *user, const fg_jinja_limits_t *lim, fg_jinja_out_t *out,
    fg_jinja_err_t *err)
{
    int                 rc;
    fg_jctx_t           c;
    fg_jbuf_t           buf;
    fg_jscope_t        *s;
    fg_jinja_limits_t   dflt;

    memset(err, 0, sizeof(fg_jinja_err_t));
    memset(out, 0, sizeof(fg_jinja_out_t));

    if (lim == NULL) {
        fg_jinja_limits_init(&dflt);
        lim = &dflt;
    }

    memset(&c, 0, sizeof(fg_jctx_t));
    c.tpl = t;
    c.lim = lim;
    c.err = err;
    c.arena.max = lim->max_memory;
    c.eval = fg_jeval;
    c.call = fg_jcall_macro;
    fg_jbuf_init(&buf);
    c.out = &buf;

    if (setjmp(c.fail)) {
        fg_jinja_arena_free(&c.arena);
        return -1;
    }

    s = fg_jscope_new(&c, NULL);
    fg_jinja_vars(&c, s, trusted, 0);
    fg_jinja_vars(&c, s, user, 1);

    fg_jexec_block(&c, s, t->body, t->n_body);

    rc = fg_jinja_output(&buf, out);

    if (rc != 0) {
        err->rc = FG_JINJA_ENOMEM;
        strcpy(err->message, "out of memory");
    }

    fg_jinja_arena_free(&c.arena);

    return rc;
}


void
fg_jinja_out_free(fg_jinja_out_t *out)
{
    free(out->segs);
    memset(out, 0, sizeof(fg_jinja_out_t));
}
