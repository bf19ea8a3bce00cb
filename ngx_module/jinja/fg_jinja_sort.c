
/*
 * fairgate: values compared and sorted as the reference does (the sort
 * filter, a mapping's dictsort): numbers (booleans among them) by value,
 * strings by their characters, without case unless asked; none only
 * with none; anything else an error.  The sort is stable, as
 * JavaScript's is.
 */


#include <string.h>

#include "fg_jinja_int.h"


static int
fg_jsort_lower(int ch)
{
    return ch >= 'A' && ch <= 'Z' ? ch + 'a' - 'A' : ch;
}


int
fg_jv_compare(fg_jctx_t *c, const fg_jv_t *a, const fg_jv_t *b, int cased,
    const fg_jnode_t *n)
{
    int     x, y;
    size_t  i;
    double  p, q;

    if (a->type <= FG_JV_NONE || b->type <= FG_JV_NONE) {
        if (a->type == b->type) {
            return 0;
        }

        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot compare a %s with a %s",
                 fg_jv_type_name(a), fg_jv_type_name(b));
    }

    if (fg_jv_numeric(a, &p) && fg_jv_numeric(b, &q)) {
        return (p > q) - (p < q);
    }

    if (a->type != FG_JV_STR || b->type != FG_JV_STR) {
        fg_jfail(c, n, FG_JINJA_ERUNTIME, "cannot compare a %s with a %s",
                 fg_jv_type_name(a), fg_jv_type_name(b));
    }

    for (i = 0; i < a->u.s.len && i < b->u.s.len; i++) {
        x = (uint8_t) a->u.s.data[i];
        y = (uint8_t) b->u.s.data[i];

        if (!cased) {
            x = fg_jsort_lower(x);
            y = fg_jsort_lower(y);
        }

        if (x != y) {
            return x < y ? -1 : 1;
        }
    }

    return (a->u.s.len > b->u.s.len) - (a->u.s.len < b->u.s.len);
}


/* a stable insertion sort of n values by their keys (keys[i] sorts
 * items[i]), each comparison a step */
void
fg_jv_sort(fg_jctx_t *c, fg_jv_t **items, fg_jv_t **keys, size_t n,
    int cased, int reverse, const fg_jnode_t *nd)
{
    int       r;
    size_t    i, j;
    fg_jv_t  *item, *key;

    for (i = 1; i < n; i++) {
        item = items[i];
        key = keys[i];

        for (j = i; j > 0; j--) {
            if (++c->steps > c->lim->max_steps) {
                fg_jfail(c, nd, FG_JINJA_ELIMIT, "sorting took too many "
                         "steps");
            }

            r = fg_jv_compare(c, keys[j - 1], key, cased, nd);

            if ((reverse ? -r : r) <= 0) {
                break;
            }

            items[j] = items[j - 1];
            keys[j] = keys[j - 1];
        }

        items[j] = item;
        keys[j] = key;
    }
}
