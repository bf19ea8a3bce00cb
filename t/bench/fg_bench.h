
/*
 * fairgate: what the C benchmarks time with: the monotonic clock, and
 * the median of runs.
 */

#ifndef _FG_BENCH_H_INCLUDED_
#define _FG_BENCH_H_INCLUDED_


#include <time.h>


static inline double
fg_bench_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


/* qsort()'s order of doubles */
static inline int
fg_bench_cmp(const void *a, const void *b)
{
    double  x, y;

    x = *(const double *) a;
    y = *(const double *) b;

    return (x > y) - (x < y);
}


/* the median of n sorted values */
static inline double
fg_bench_median(const double *v, int n)
{
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}


#endif /* _FG_BENCH_H_INCLUDED_ */
