
/*
 * fairgate: what a quota costs a request at admission (docs/quotas.md).
 *
 * Per quota and request the gateway reads the window's counts at the
 * moment (fg_quota_win_used: the window's id in its time zone, its
 * buckets summed), checks them (fg_quota_over, fg_quota_percent) and adds
 * the request (fg_quota_win_add, which finds the id again).  Timed for a
 * calendar day and month in Europe/Paris, a fixed span and a day rolling
 * in 12 buckets, over moments a few minutes apart across a year, the
 * median of FG_BENCH_REPEAT runs.  Prints one JSON line per window.
 */


#include <stdio.h>
#include <stdlib.h>

#include "fg_bench.h"
#include "fg_quota.h"


#define FG_BENCH_REPEAT  5
#define FG_BENCH_FROM    1767225600      /* 2026-01-01 UTC */


static double
fg_bench_window(const fg_quota_per_t *per, const fg_tz_t *tz, long n)
{
    long               i;
    double             t0;
    int64_t            t;
    uint32_t           sink;
    fg_quota_win_t    *w;
    fg_quota_count_t   used;
    fg_quota_limit_t   l = { 1000000, 0, 5000000000, 80 };

    w = malloc(fg_quota_win_size(per));
    if (w == NULL) {
        return -1;
    }

    fg_quota_win_init(w, per);
    sink = 0;
    t0 = fg_bench_now();

    for (i = 0; i < n; i++) {
        t = FG_BENCH_FROM + (i * 317) % (366 * 86400);

        fg_quota_win_used(w, tz, t, &used);
        sink += fg_quota_over(&l, &used) + fg_quota_percent(&l, &used);
        fg_quota_win_add(w, tz, t, 1, 0, 1000);
    }

    t0 = fg_bench_now() - t0;

    free(w);

    /* keep the sum alive */
    if (sink == 0xffffffff) {
        printf("#\n");
    }

    return t0 * 1e9 / n;
}


int
main(int argc, char **argv)
{
    int              i, k;
    long             n;
    double           ns[FG_BENCH_REPEAT];
    fg_tz_t         *tz;

    static const struct {
        const char      *name;
        fg_quota_per_t   per;
    } cases[] = {
        { "day", { FG_QUOTA_DAY, 0, 86400 } },
        { "month", { FG_QUOTA_MONTH, 0, 30 * 86400 } },
        { "30d", { FG_QUOTA_SPAN, 0, 30 * 86400 } },
        { "day rolling", { FG_QUOTA_DAY, 1, 86400 } }
    };

    n = (argc > 1) ? atol(argv[1]) : 2000000;

    tz = malloc(sizeof(fg_tz_t));

    if (tz == NULL || n <= 0
        || fg_tz_load(tz, "Europe/Paris", FG_BENCH_FROM - 400 * 86400,
                      FG_BENCH_FROM + 30L * 366 * 86400) != 0)
    {
        fprintf(stderr, "bench_quota: no Europe/Paris zone\n");
        return 1;
    }

    for (k = 0; k < (int) (sizeof(cases) / sizeof(cases[0])); k++) {

        for (i = 0; i < FG_BENCH_REPEAT; i++) {
            ns[i] = fg_bench_window(&cases[k].per, tz, n);
        }

        qsort(ns, FG_BENCH_REPEAT, sizeof(double), fg_bench_cmp);

        printf("{\"bench\": \"quota\", \"window\": \"%s\", \"zone\": "
               "\"Europe/Paris\", \"changes\": %u, \"requests\": %ld, "
               "\"ns_per_request\": %.1f, \"window_bytes\": %zu}\n",
               cases[k].name, tz->n, n,
               fg_bench_median(ns, FG_BENCH_REPEAT),
               fg_quota_win_size(&cases[k].per));
    }

    free(tz);

    return 0;
}
