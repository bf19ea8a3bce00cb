
/*
 * fairgate: a minimal TAP producer for C unit tests, run by prove.
 */

#ifndef _FG_TAP_H_INCLUDED_
#define _FG_TAP_H_INCLUDED_


#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int  fg_tap_run;
static int  fg_tap_failed;


static inline int
fg_tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
    va_list  args;

    fg_tap_run++;

    printf("%s %d - ", pass ? "ok" : "not ok", fg_tap_run);

    va_start(args, fmt);
    vprintf(fmt, args);
    va_end(args);

    printf("\n");

    if (!pass) {
        fg_tap_failed++;
        printf("#   Failed test at %s line %d.\n", file, line);
    }

    fflush(stdout);

    return pass;
}


static inline void
fg_tap_diag(const char *fmt, ...)
{
    va_list  args;

    printf("# ");

    va_start(args, fmt);
    vprintf(fmt, args);
    va_end(args);

    printf("\n");
    fflush(stdout);
}


static inline int
fg_tap_done(void)
{
    printf("1..%d\n", fg_tap_run);

    return fg_tap_failed ? 1 : 0;
}


#define ok(cond, ...)                                                         \
    fg_tap_ok((cond) ? 1 : 0, __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                \
    (fg_tap_ok((long long) (got) == (long long) (want), __FILE__, __LINE__,   \
               __VA_ARGS__)                                                   \
     || (fg_tap_diag("     got: %lld", (long long) (got)),                    \
         fg_tap_diag("expected: %lld", (long long) (want)), 0))

#define is_num(got, want, eps, ...)                                           \
    (fg_tap_ok(fabs((double) (got) - (double) (want)) <= (eps), __FILE__,     \
               __LINE__, __VA_ARGS__)                                         \
     || (fg_tap_diag("     got: %.9g", (double) (got)),                       \
         fg_tap_diag("expected: %.9g (within %g)", (double) (want),          \
                     (double) (eps)), 0))

#define is_str(got, want, ...)                                                \
    (fg_tap_ok(strcmp((got), (want)) == 0, __FILE__, __LINE__, __VA_ARGS__)   \
     || (fg_tap_diag("     got: \"%s\"", (got)),                              \
         fg_tap_diag("expected: \"%s\"", (want)), 0))

/* ok(rc == 0), err told when not: 0, or -1 */
#define ok_rc(rc, err, ...)                                                   \
    (fg_tap_ok((rc) == 0, __FILE__, __LINE__, __VA_ARGS__)                    \
     ? 0 : (fg_tap_diag("%s", (err)), -1))

#define diag  fg_tap_diag

#define done_testing()  fg_tap_done()


#endif /* _FG_TAP_H_INCLUDED_ */
