
/*
 * fairgate: the buffers a struct owns, freed in one call.  A destroy
 * function names what it owns once, as a list, in the order it frees
 * them (the struct itself last): the values are all read before the
 * first free().  Teardown only: not for a hot path.
 */

#ifndef _FG_MEM_H_INCLUDED_
#define _FG_MEM_H_INCLUDED_


#include <stddef.h>
#include <stdlib.h>


#define fg_free_all(...)                                                      \
    fg_free_each((void *[]) { __VA_ARGS__ },                                  \
                 sizeof((void *[]) { __VA_ARGS__ }) / sizeof(void *))


static inline void
fg_free_each(void **p, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        free(p[i]);
    }
}


#endif /* _FG_MEM_H_INCLUDED_ */
