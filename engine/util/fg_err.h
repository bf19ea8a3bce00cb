
/*
 * fairgate: a failure said as a sentence into the caller's buffer, the
 * "char *err, size_t errlen" that every part's functions take: one copy
 * for the model, the segment's both sides and the backends.  A NULL or
 * empty buffer takes nothing.  Error paths only: it is not inlined.
 */

#ifndef _FG_ERR_H_INCLUDED_
#define _FG_ERR_H_INCLUDED_


#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>


static inline void fg_err_printf(char *err, size_t errlen, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));


static inline void
fg_err_printf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list  args;

    if (err == NULL || errlen == 0) {
        return;
    }

    va_start(args, fmt);
    vsnprintf(err, errlen, fmt, args);
    va_end(args);
}


#endif /* _FG_ERR_H_INCLUDED_ */
