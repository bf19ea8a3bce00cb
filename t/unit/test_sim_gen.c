
/*
 * fairgate: tests of the synthetic trace generator: determinism, and each
 * suite's clients, rates, lengths, on/off periods, ramp and phases.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_sim_gen.h"
#include "fg_sim_rand.h"


typedef struct {
    size_t   n;
    double   first;
    double   last;
    double   min_gap;
    double   max_gap;
    int      lengths_ok;
} counts_t;


static int
gen(fg_sim_trace_t *tr, const char *suite, uint64_t seed, double duration)
{
    char  err[256];

    fg_sim_trace_init(tr);

    if (fg_sim_gen(tr, suite, seed, duration, err, sizeof(err)) != 0) {
        diag("%s: %s", suite, err);
        return -1;
    }

    return 0;
}


/* client c's arrivals in [from, to), and whether all have in/out lengths */
static counts_t
count(const fg_sim_trace_t *tr, uint32_t c, double from, double to,
    uint32_t in, uint32_t out)
{
    size_t    i;
    double    prev;
    counts_t  k;

    memset(&k, 0, sizeof(counts_t));
    k.min_gap = HUGE_VAL;
    k.lengths_ok = 1;
    prev = -1.0;

    for (i = 0; i < tr->n; i++) {
        if (tr->reqs[i].client != c || tr->reqs[i].t < from
            || tr->reqs[i].t >= to)
        {
            continue;
        }

        if (k.n == 0) {
            k.first = tr->reqs[i].t;

        } else {
            k.min_gap = fmin(k.min_gap, tr->reqs[i].t - prev);
            k.max_gap = fmax(k.max_gap, tr->reqs[i].t - prev);
        }

        if (tr->reqs[i].input_tokens != in
            || tr->reqs[i].output_tokens != out
            || tr->reqs[i].max_output_tokens != out)
        {
            k.lengths_ok = 0;
        }

        prev = tr->reqs[i].t;
        k.last = prev;
        k.n++;
    }

    return k;
}


/* a steady uniform client: rate * length arrivals (+-1), spaced 1 / rate */
static void
uniform(const fg_sim_trace_t *tr, const char *suite, uint32_t c,
    double rate, double from, double to)
{
    counts_t  k;

    k = count(tr, c, from, to, 256, 256);

    ok(fabs((double) k.n - rate * (to - from)) <= 1.0
       && k.first >= from && k.first < from + 1.0 / rate
       && fabs(k.min_gap - 1.0 / rate) < 1e-9
       && fabs(k.max_gap - 1.0 / rate) < 1e-9 && k.lengths_ok,
       "%s: client%u uniform at %g req/s in [%g, %g): %zu arrivals",
       suite, c, rate, from, to, k.n);
}


static void
test_rand(void)
{
    fg_sim_rand_t  r;

    /* splitmix64's published first output for state 0 */
    r.state = 0;
    ok(fg_sim_rand_next(&r) == 0xe220a8397b1dcdafULL,
       "splitmix64 matches its reference sequence");
}


static void
test_determinism(void)
{
    int             same, differ;
    size_t          i;
    const char     *suite;
    fg_sim_trace_t  a, b, c;

    for (i = 0; (suite = fg_sim_gen_suite(i)) != NULL; i++) {
        if (gen(&a, suite, 7, 0) != 0 || gen(&b, suite, 7, 0) != 0
            || gen(&c, suite, 8, 0) != 0)
        {
            ok(0, "%s generates", suite);
            continue;
        }

        same = a.n > 0 && a.n == b.n
               && memcmp(a.reqs, b.reqs, a.n * sizeof(fg_sim_req_t)) == 0;
        differ = a.n != c.n
                 || memcmp(a.reqs, c.reqs, a.n * sizeof(fg_sim_req_t)) != 0;

        ok(same && differ, "%s: same seed, same trace; other seed, other",
           suite);

        fg_sim_trace_free(&a);
        fg_sim_trace_free(&b);
        fg_sim_trace_free(&c);
    }

    ok(gen(&a, "nope", 1, 0) != 0, "an unknown suite fails");
    fg_sim_trace_free(&a);
}


static void
test_suites(void)
{
    size_t          i;
    counts_t        k, on;
    fg_sim_trace_t  tr;

    if (gen(&tr, "overload", 1, 0) == 0) {
        is_int(tr.nclients, 2, "overload: two clients");
        uniform(&tr, "overload", 0, 1.5, 0, 360);
        uniform(&tr, "overload", 1, 3, 0, 360);

        for (i = 1; i < tr.n; i++) {
            if (tr.reqs[i].t < tr.reqs[i - 1].t) {
                break;
            }
        }

        ok(i == tr.n, "overload: sorted by arrival");
        fg_sim_trace_free(&tr);
    }

    if (gen(&tr, "overload", 1, 100) == 0) {
        uniform(&tr, "overload --duration 100", 0, 1.5, 0, 100);
        uniform(&tr, "overload --duration 100", 1, 3, 0, 100);
        fg_sim_trace_free(&tr);
    }

    if (gen(&tr, "overload-multi", 1, 0) == 0) {
        is_int(tr.nclients, 8, "overload-multi: eight clients");

        for (i = 0; i < 8; i++) {
            uniform(&tr, "overload-multi", i, i < 3 ? 0.4 : 0.6, 0, 360);
        }

        fg_sim_trace_free(&tr);
    }

    if (gen(&tr, "overload-weighted", 1, 0) == 0) {
        is_int(tr.nclients, 4, "overload-weighted: four clients");

        for (i = 0; i < 4; i++) {
            uniform(&tr, "overload-weighted", i,
                    i < 2 ? 0.8 : i == 2 ? 1.2 : 1.6, 0, 360);
            ok(tr.clients[i].has_weight && tr.clients[i].weight == i + 1.0,
               "overload-weighted: client%zu has weight %zu", i, i + 1);
        }

        fg_sim_trace_free(&tr);
    }

    if (gen(&tr, "proportional", 1, 0) == 0) {
        uniform(&tr, "proportional", 0, 0.25, 0, 600);
        uniform(&tr, "proportional", 1, 0.5, 0, 600);
        uniform(&tr, "proportional", 2, 1.5, 0, 600);
        fg_sim_trace_free(&tr);
    }

    if (gen(&tr, "on_off_less", 1, 0) == 0) {
        uniform(&tr, "on_off_less", 1, 2, 0, 600);

        for (i = 0; i < 10; i++) {
            k = count(&tr, 0, 60.0 * i, 60.0 * (i + 1), 256, 256);

            if (i % 2 ? k.n != 0 : fabs(k.n - 30.0) > 1.0) {
                break;
            }
        }

        ok(i == 10, "on_off_less: client0 sends 0.5 req/s in even minutes, "
           "nothing in odd ones");
        fg_sim_trace_free(&tr);
    }

    if (gen(&tr, "on_off_overload", 1, 0) == 0) {
        uniform(&tr, "on_off_overload", 1, 3, 0, 600);
        on = count(&tr, 0, 0, 60, 256, 256);
        k = count(&tr, 0, 60, 120, 256, 256);

        ok(fabs(on.n - 120.0) <= 1.0 && k.n == 0
           && count(&tr, 0, 0, 600, 256, 256).n
              == on.n + count(&tr, 0, 120, 600, 256, 256).n,
           "on_off_overload: client0 on at 2 req/s, then off");
        fg_sim_trace_free(&tr);
    }

    if (gen(&tr, "poisson_short_long", 1, 0) == 0) {
        k = count(&tr, 0, 0, 600, 64, 64);
        on = count(&tr, 1, 0, 600, 256, 256);

        /* 5 sigma: fails by chance once in millions of seeds */
        ok(fabs(k.n - 4800.0) < 5 * sqrt(4800.0) && k.lengths_ok,
           "poisson_short_long: client0 ~8 req/s at 64/64 (%zu)", k.n);
        ok(fabs(on.n - 900.0) < 5 * sqrt(900.0) && on.lengths_ok,
           "poisson_short_long: client1 ~1.5 req/s at 256/256 (%zu)", on.n);
        ok(k.max_gap > 3 * k.min_gap, "poisson_short_long: gaps vary");
        fg_sim_trace_free(&tr);
    }

    if (gen(&tr, "poisson_short_long_2", 1, 0) == 0) {
        k = count(&tr, 0, 0, 600, 512, 32);
        on = count(&tr, 1, 0, 600, 32, 512);

        ok(k.lengths_ok && on.lengths_ok && k.n + on.n == tr.n
           && fabs(k.n - 4800.0) < 5 * sqrt(4800.0)
           && fabs(on.n - 900.0) < 5 * sqrt(900.0),
           "poisson_short_long_2: 512/32 at ~8, 32/512 at ~1.5 req/s");
        fg_sim_trace_free(&tr);
    }

    if (gen(&tr, "increase", 1, 0) == 0) {
        uniform(&tr, "increase", 0, 0.5, 0, 600);

        /* expected counts: integrals of 0.2 + 1.8 t / 600 */
        k = count(&tr, 1, 0, 600, 256, 256);
        ok(fabs(k.n - 660.0) <= 1.0, "increase: client1 sends the ramp's "
           "integral, 660 (%zu)", k.n);

        k = count(&tr, 1, 0, 60, 256, 256);
        ok(fabs(k.n - 17.4) <= 1.5, "increase: ~17.4 in the first minute "
           "(%zu)", k.n);

        k = count(&tr, 1, 540, 600, 256, 256);
        ok(fabs(k.n - 114.6) <= 1.5, "increase: ~114.6 in the last minute "
           "(%zu)", k.n);
        fg_sim_trace_free(&tr);
    }

    if (gen(&tr, "dist_shift", 1, 0) == 0) {
        uniform(&tr, "dist_shift", 1, 2, 0, 300);
        uniform(&tr, "dist_shift", 0, 1, 300, 600);
        uniform(&tr, "dist_shift", 1, 1, 300, 600);
        uniform(&tr, "dist_shift", 0, 0.5, 600, 900);
        uniform(&tr, "dist_shift", 1, 1.5, 600, 900);

        k = count(&tr, 0, 60, 120, 256, 256);
        on = count(&tr, 0, 0, 300, 256, 256);
        ok(k.n == 0 && count(&tr, 0, 180, 240, 256, 256).n == 0
           && fabs(on.n - 90.0) <= 3.0,
           "dist_shift: client0 on/off at 0.5 req/s in phase one (%zu)",
           on.n);
        fg_sim_trace_free(&tr);
    }
}


int
main(void)
{
    test_rand();
    test_determinism();
    test_suites();

    return done_testing();
}
