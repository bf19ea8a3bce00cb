
/*
 * fairgate: tests of the synthetic trace generator: determinism, and each
 * suite's clients, rates, lengths, on/off periods, ramp and phases; the
 * multi-app suites' users, interactions and stages.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_test_sim.h"
#include "fg_sim_gen.h"
#include "fg_rand.h"


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
    fg_rand_t  r;

    /* splitmix64's published first output for state 0 */
    fg_rand_seed(&r, 0);
    ok(fg_rand_next(&r) == 0xe220a8397b1dcdafULL,
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


/* the suites of steady uniform clients */
static void
test_suites_steady(void)
{
    size_t          i;
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
}


/* clients that go on and off */
static void
test_suites_on_off(void)
{
    size_t          i;
    counts_t        k, on;
    fg_sim_trace_t  tr;

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
}


/* Poisson arrivals */
static void
test_suites_poisson(void)
{
    counts_t        k, on;
    fg_sim_trace_t  tr;

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
}


/* rates that change over the run */
static void
test_suites_shifting(void)
{
    counts_t        k, on;
    fg_sim_trace_t  tr;

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


static void
test_suites(void)
{
    test_suites_steady();
    test_suites_on_off();
    test_suites_poisson();
    test_suites_shifting();
}


/* requests of any client in [from, to), and whether lengths stay in range */
static size_t
count_all(const fg_sim_trace_t *tr, double from, double to, int *in_range)
{
    size_t               i, n;
    const fg_sim_req_t  *r;

    n = 0;

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];

        if (r->input_tokens < 64 || r->input_tokens > 512
            || r->output_tokens < 64 || r->output_tokens > 512
            || r->max_output_tokens != r->output_tokens)
        {
            *in_range = 0;
        }

        if (r->t >= from && r->t < to) {
            n++;
        }
    }

    return n;
}


/* within 5 sigma of a poisson count: fails by chance once in millions */
static int
near(size_t n, double expect)
{
    return fabs((double) n - expect) < 5 * sqrt(expect);
}


static void
test_bursts(void)
{
    int                in_range;
    double             low, calm;
    size_t             k, burst, quiet, i;
    uint32_t           lengths;
    fg_sim_trace_t     tr;
    fg_sim_gen_conf_t  conf;

    fg_sim_gen_conf_init(&conf);

    /* one 1200 s cycle: calm 390 s, burst 420 s at 2 x 1.12 req/s, calm */
    if (fg_test_sim_gen(&tr, "bursts", &conf) == 0) {
        in_range = 1;
        low = 1.12 * (1 - 2 * 0.35) / (1 - 0.35);
        burst = count_all(&tr, 390, 810, &in_range);
        quiet = count_all(&tr, 0, 390, &in_range)
                + count_all(&tr, 810, 1200, &in_range);

        is_int(tr.nclients, 4, "bursts: four clients");
        ok(near(burst, 2.24 * 420), "bursts: ~2.24 req/s in the burst, "
           "[390, 810) s (%zu)", burst);
        ok(near(quiet, low * 780), "bursts: ~%.3f req/s around it (%zu)",
           low, quiet);
        ok(burst + quiet == tr.n && tr.reqs[tr.n - 1].t < 1200,
           "bursts: all within 1200 s");

        lengths = 0;

        for (i = 1; i < tr.n; i++) {
            lengths += tr.reqs[i].input_tokens != tr.reqs[0].input_tokens;
        }

        ok(in_range && lengths > tr.n / 2,
           "bursts: input and output vary in [64, 512]");

        for (i = 0; i < 4; i++) {
            k = count(&tr, i, 0, 1200, 0, 0).n;

            if (!near(k, 0.28 * 1200)) {
                break;
            }
        }

        ok(i == 4, "bursts: each client sends ~0.28 req/s on average");
        fg_sim_trace_free(&tr);
    }

    /* four 300 s cycles, intensity 3, bursts of 20% */
    conf.cycle = 300;
    conf.intensity = 3;
    conf.burst_fraction = 0.2;
    conf.seed = 5;

    if (fg_test_sim_gen(&tr, "bursts", &conf) == 0) {
        in_range = 1;
        burst = quiet = 0;
        calm = 0.4 * 300;

        for (i = 0; i < 4; i++) {
            burst += count_all(&tr, 300.0 * i + calm, 300.0 * i + calm + 60,
                               &in_range);
        }

        quiet = tr.n - burst;
        low = 1.12 * (1 - 3 * 0.2) / (1 - 0.2);

        ok(near(burst, 3.36 * 240) && near(quiet, low * 960),
           "bursts --cycle 300 --intensity 3 --burst-fraction 0.2: four "
           "bursts of 60 s at 3.36 req/s (%zu), %.2f req/s between (%zu)",
           burst, low, quiet);
        fg_sim_trace_free(&tr);
    }

    /* the rate scale, and a steady rate at intensity 1 */
    fg_sim_gen_conf_init(&conf);
    conf.rate_scale = 2;
    conf.intensity = 1;

    if (fg_test_sim_gen(&tr, "bursts", &conf) == 0) {
        in_range = 1;
        burst = count_all(&tr, 390, 810, &in_range);

        ok(near(tr.n, 2.24 * 1200) && near(burst, 2.24 * 420),
           "bursts --rate-scale 2 --intensity 1: 2.24 req/s throughout "
           "(%zu)", tr.n);
        fg_sim_trace_free(&tr);
    }

    fg_sim_gen_conf_init(&conf);
    conf.intensity = 3;

    ok(fg_test_sim_gen(&tr, "bursts", &conf) != 0,
       "intensity 3 with 35%% bursts fails: no rate is left between bursts");
    fg_sim_trace_free(&tr);
}


static void
test_multi_app(void)
{
    int                  good, sys_ok;
    char                 prefix[64];
    size_t               i, j, n_inter, abusive, other;
    const char          *app, *user, *inter;
    fg_sim_trace_t       tr;
    const fg_sim_req_t  *r, *q;

    if (gen(&tr, "multi-app", 3, 0) != 0) {
        ok(0, "multi-app generates");
        return;
    }

    is_int(tr.nclients, 11, "multi-app: eleven users");

    good = 1;
    sys_ok = 1;
    n_inter = 0;

    for (i = 0; i < tr.n; i++) {
        r = &tr.reqs[i];
        app = fg_sim_trace_str_get(&tr, r->app);
        user = fg_sim_trace_str_get(&tr, r->user);
        inter = fg_sim_trace_str_get(&tr, r->interaction);

        if (app == NULL || user == NULL || inter == NULL || r->stage < 0
            || r->stream != -1 || r->key != 0
            || strcmp(user, tr.clients[r->client].name) != 0)
        {
            good = 0;
            break;
        }

        /* users are APP-uN, interactions USER-N */
        snprintf(prefix, sizeof(prefix), "%s-u", app);

        if (strncmp(user, prefix, strlen(prefix)) != 0
            || strncmp(inter, user, strlen(user)) != 0)
        {
            good = 0;
            break;
        }

        if (r->system_tokens == 0 || r->system_tokens >= r->input_tokens) {
            sys_ok = 0;
        }

        if (r->stage != 0) {
            continue;
        }

        /* the interaction's stages: 0, 1, ... in time order, nothing else */
        n_inter++;

        for (j = i + 1; j < tr.n; j++) {
            q = &tr.reqs[j];

            if (q->interaction == r->interaction) {
                if (q->stage != r->stage + 1 || q->t < r->t
                    || q->app != r->app || q->user != r->user)
                {
                    good = 0;
                }

                r = q;
            }
        }

        if (strcmp(app, "agent") == 0 ? r->stage < 2 || r->stage > 4
            : strcmp(app, "code") == 0 ? r->stage != 1 : r->stage != 0)
        {
            good = 0;
        }

        r = &tr.reqs[i];
    }

    ok(good, "multi-app: every request names user (its client), app, "
       "interaction and stage; stages run 0, 1, ... in order; agent "
       "interactions have 3-5, code 2, others 1");
    ok(sys_ok, "multi-app: system_tokens > 0 and part of input_tokens");

    abusive = count(&tr, 0, 0, 1e9, 0, 0).n;
    other = count(&tr, 1, 0, 1e9, 0, 0).n + count(&tr, 2, 0, 1e9, 0, 0).n
            + count(&tr, 3, 0, 1e9, 0, 0).n;

    ok(strcmp(tr.clients[0].name, "chat-u0") == 0
       && near(abusive, 1.5 * 600) && near(other, 3 * 0.05 * 600),
       "multi-app: chat-u0 sends ~1.5 interactions/s (%zu), the other "
       "chat users ~0.05 (%zu for three)", abusive, other);
    ok(n_inter > 1000, "multi-app: %zu interactions", n_inter);

    fg_sim_trace_free(&tr);
}


/* the fairserve suite's apps, as fg_sim_gen.c has them */
typedef struct {
    const char  *name;
    uint32_t     users;
    double       abuse;
    uint32_t     input;              /* the paper's / 4, rounded */
    uint32_t     system;
    uint32_t     output;
} fs_app_t;


static const fs_app_t  fs_apps[] = {
    { "app14", 25, 30, (6370 + 2) / 4, 400, 26 },
    { "app7",  13, 10, (14854 + 2) / 4, 500, 19 },
    { "app12", 41, 20, (999 + 2) / 4, 100, 8 },
};


/* interactions by their number of stages */
typedef struct {
    size_t  n_inter;
    size_t  size_1;
    size_t  size_2_10;
    size_t  size_11_30;
    size_t  stages;
} fs_sizes_t;


/* every request's fields, and each interaction's stages in time order */
static void
fairserve_requests(const fg_sim_trace_t *tr, fs_sizes_t *sz)
{
    int                  good, sys_ok;
    size_t               i, j, a;
    const char          *app, *user;
    const fg_sim_req_t  *r, *q;

    good = 1;
    sys_ok = 1;
    memset(sz, 0, sizeof(fs_sizes_t));

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];
        app = fg_sim_trace_str_get(tr, r->app);
        user = fg_sim_trace_str_get(tr, r->user);

        if (app == NULL || user == NULL || r->interaction == 0
            || r->stage < 0 || strcmp(user, tr->clients[r->client].name) != 0
            || strncmp(user, app, strlen(app)) != 0)
        {
            good = 0;
            break;
        }

        for (a = 0; a < 3 && strcmp(app, fs_apps[a].name) != 0; a++) {
            /* void */
        }

        if (a == 3 || r->system_tokens != fs_apps[a].system
            || r->system_tokens >= r->input_tokens)
        {
            sys_ok = 0;
        }

        if (r->stage != 0) {
            continue;
        }

        /* the interaction's stages: 0, 1, ... in time order, nothing else */
        sz->n_inter++;

        for (j = i + 1; j < tr->n; j++) {
            q = &tr->reqs[j];

            if (q->interaction == r->interaction) {
                if (q->stage != r->stage + 1 || q->t < r->t
                    || q->app != r->app || q->user != r->user)
                {
                    good = 0;
                }

                r = q;
            }
        }

        sz->stages += (size_t) r->stage + 1;

        if (r->stage == 0) {
            sz->size_1++;

        } else if (r->stage < 10) {
            sz->size_2_10++;

        } else if (r->stage < 30) {
            sz->size_11_30++;

        } else {
            good = 0;
        }
    }

    ok(good, "fairserve: every request names user (its client), its app, "
       "interaction and stage; stages run 0, 1, ... in time order; none "
       "past 30");
    ok(sys_ok, "fairserve: system_tokens 400, 500, 100 by app, part of "
       "input_tokens");
}


/* Table 2, its shares over the sizes kept (99.92%), within 5 sigma */
static void
fairserve_sizes(const fs_sizes_t *sz)
{
    double  expect;

    expect = sz->n_inter * 7322.0 / 9992;
    ok(fabs(sz->size_1 - expect) < 5 * sqrt(expect * (1 - 7322.0 / 9992)),
       "fairserve: %zu of %zu interactions of one stage (%.0f expected)",
       sz->size_1, sz->n_inter, expect);

    expect = sz->n_inter * 2609.0 / 9992;
    ok(fabs(sz->size_2_10 - expect)
       < 5 * sqrt(expect * (1 - 2609.0 / 9992)),
       "fairserve: %zu of 2 to 10 stages (%.0f expected)", sz->size_2_10,
       expect);

    expect = sz->n_inter * 61.0 / 9992;
    ok(fabs(sz->size_11_30 - expect) < 5 * sqrt(expect) + 1,
       "fairserve: %zu of 11 to 30 stages (%.1f expected)", sz->size_11_30,
       expect);

    /* 1 * .7328 + 6 * .2611 + 15.5 * .0050 + 25.5 * .0011 */
    is_num((double) sz->stages / sz->n_inter, 2.405, 0.1,
           "fairserve: %.3f stages an interaction",
           (double) sz->stages / sz->n_inter);
}


/* an app's u0 against its other users, interactions (stage 0) counted */
static void
fairserve_abuse(const fg_sim_trace_t *tr, const fs_app_t *ap, double t_end)
{
    size_t               i, abusive, other;
    uint32_t             u;
    const char          *user;
    const fg_sim_req_t  *r;

    abusive = other = 0;

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];
        user = fg_sim_trace_str_get(tr, r->user);

        if (r->stage != 0
            || strcmp(fg_sim_trace_str_get(tr, r->app), ap->name) != 0)
        {
            continue;
        }

        u = (uint32_t) strtoul(user + strlen(ap->name) + 2, NULL, 10);

        if (u == 0) {
            abusive++;

        } else {
            other++;
        }
    }

    ok(near(abusive, ap->abuse * 0.012 * t_end)
       && near(other, (ap->users - 1) * 0.012 * t_end),
       "fairserve: %s-u0 opens %zu interactions, %.1f times one of the "
       "%u others (%zu in all; %g expected)", ap->name, abusive,
       abusive * (ap->users - 1.0) / (other ? other : 1),
       ap->users - 1, other, ap->abuse);
}


/* an app's lengths: the mean within 5 standard errors of Table 4's / 4 */
static void
fairserve_lengths(const fg_sim_trace_t *tr, const fs_app_t *ap)
{
    int                  len_ok;
    double               h, sd, mean_in, mean_out;
    size_t               i, nreq;
    uint64_t             sum_in, sum_out;
    const fg_sim_req_t  *r;

    sum_in = sum_out = 0;
    nreq = 0;

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];

        if (strcmp(fg_sim_trace_str_get(tr, r->app), ap->name) == 0) {
            sum_in += r->input_tokens;
            sum_out += r->output_tokens;
            nreq++;
        }
    }

    mean_in = (double) sum_in / nreq;
    mean_out = (double) sum_out / nreq;

    /* uniform in [m - m/2, m + m/2]: sd = (m/2) / sqrt(3) */
    h = (ap->input - ap->system) / 2.0;
    sd = h / sqrt(3.0);
    len_ok = fabs(mean_in - ap->input) < 5 * sd / sqrt(nreq) + 1;

    h = ap->output / 2.0;
    sd = h / sqrt(3.0);
    len_ok = len_ok
             && fabs(mean_out - ap->output) < 5 * sd / sqrt(nreq) + 1;

    ok(len_ok, "fairserve: %s's %zu requests: %.0f input, %.1f output "
       "tokens on average (%u, %u)", ap->name, nreq, mean_in, mean_out,
       ap->input, ap->output);
}


static void
test_fairserve(void)
{
    double          t_end;
    size_t          a;
    fs_sizes_t      sz;
    fg_sim_trace_t  tr;

    /* five times the suite's 600 s: tighter counts */
    t_end = 3000;

    if (gen(&tr, "fairserve", 5, t_end) != 0) {
        ok(0, "fairserve generates");
        return;
    }

    is_int(tr.nclients, 25 + 13 + 41, "fairserve: 79 users");

    fairserve_requests(&tr, &sz);
    fairserve_sizes(&sz);

    for (a = 0; a < 3; a++) {
        fairserve_abuse(&tr, &fs_apps[a], t_end);
        fairserve_lengths(&tr, &fs_apps[a]);
    }

    fg_sim_trace_free(&tr);
}


int
main(void)
{
    test_rand();
    test_determinism();
    test_suites();
    test_bursts();
    test_multi_app();
    test_fairserve();

    return done_testing();
}
