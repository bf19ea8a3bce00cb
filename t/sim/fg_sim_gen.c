
/*
 * fairgate: the synthetic traces of the VTC paper's evaluation.
 */


#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fg_sim_gen.h"
#include "fg_sim_rand.h"


#define FG_SIM_GEN_CLIENTS  8
#define FG_SIM_GEN_PHASES   3


/* one client's load during one phase */
typedef struct {
    double     rate;                /* req/s at the phase's start */
    double     rate_end;            /* at its end: a ramp when different */
    uint32_t   input;
    uint32_t   output;
    unsigned   poisson:1;
    unsigned   on_off:1;            /* silent when int(t / 60) is odd */
} fg_sim_gen_load_t;


typedef struct {
    const char         *name;
    double              duration;
    uint32_t            nclients;
    uint32_t            nphases;
    double              weight[FG_SIM_GEN_CLIENTS];     /* 0: none given */
    fg_sim_gen_load_t   load[FG_SIM_GEN_PHASES][FG_SIM_GEN_CLIENTS];
} fg_sim_gen_suite_t;


#define U(r, n)       { r, r, n, n, 0, 0 }
#define P(r, i, o)    { r, r, i, o, 1, 0 }
#define ONOFF(r, n)   { r, r, n, n, 0, 1 }
#define RAMP(a, b, n) { a, b, n, n, 0, 0 }


static const fg_sim_gen_suite_t  fg_sim_gen_table[] = {

    { "overload", 360, 2, 1, { 0 },
      { { U(1.5, 256), U(3, 256) } } },

    { "overload-multi", 360, 8, 1, { 0 },
      { { U(0.4, 256), U(0.4, 256), U(0.4, 256), U(0.6, 256),
          U(0.6, 256), U(0.6, 256), U(0.6, 256), U(0.6, 256) } } },

    { "overload-weighted", 360, 4, 1, { 1, 2, 3, 4 },
      { { U(0.8, 256), U(0.8, 256), U(1.2, 256), U(1.6, 256) } } },

    { "proportional", 600, 3, 1, { 0 },
      { { U(0.25, 256), U(0.5, 256), U(1.5, 256) } } },

    { "on_off_less", 600, 2, 1, { 0 },
      { { ONOFF(0.5, 256), U(2, 256) } } },

    { "on_off_overload", 600, 2, 1, { 0 },
      { { ONOFF(2, 256), U(3, 256) } } },

    { "poisson_short_long", 600, 2, 1, { 0 },
      { { P(8, 64, 64), P(1.5, 256, 256) } } },

    { "poisson_short_long_2", 600, 2, 1, { 0 },
      { { P(8, 512, 32), P(1.5, 32, 512) } } },

    { "increase", 600, 2, 1, { 0 },
      { { U(0.5, 256), RAMP(0.2, 2, 256) } } },

    { "dist_shift", 900, 2, 3, { 0 },
      { { ONOFF(0.5, 256), U(2, 256) },
        { U(1, 256), U(1, 256) },
        { U(0.5, 256), U(1.5, 256) } } },
};


#undef U
#undef P
#undef ONOFF
#undef RAMP


#define FG_SIM_GEN_NSUITES                                                    \
    (sizeof(fg_sim_gen_table) / sizeof(fg_sim_gen_table[0]))


const char *
fg_sim_gen_suite(size_t i)
{
    return i < FG_SIM_GEN_NSUITES ? fg_sim_gen_table[i].name : NULL;
}


static void
fg_sim_gen_error(char *err, size_t size, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(err, size, fmt, args);
    va_end(args);
}


static int
fg_sim_gen_at(fg_sim_trace_t *tr, uint32_t client,
    const fg_sim_gen_load_t *load, double t)
{
    if (load->on_off && ((int64_t) floor(t / 60.0)) % 2 == 1) {
        return 0;
    }

    return fg_sim_trace_add(tr, t, client, load->input, load->output,
                            load->output);
}


/*
 * Uniform arrivals in [start, end), the rate going linearly from rate to
 * rate_end.  The expected count by start + x is
 *
 *     N(x) = a * x^2 + b * x,  a = (rate_end - rate) / (2 * length),
 *                              b = rate,
 *
 * and arrival k lies where N(x) = phase + k:
 * x = 2n / (b + sqrt(b^2 + 4an)), the root that has no cancellation when
 * a is small, and which is n / b when the rate is steady.
 */
static int
fg_sim_gen_uniform(fg_sim_trace_t *tr, uint32_t client,
    const fg_sim_gen_load_t *load, fg_sim_rand_t *rng, double start,
    double end)
{
    double    a, b, n, x, len, phase;
    uint64_t  k;

    len = end - start;
    a = (load->rate_end - load->rate) / (2.0 * len);
    b = load->rate;

    phase = fg_sim_rand_double(rng);

    for (k = 0; /* void */; k++) {
        n = phase + (double) k;
        x = 2.0 * n / (b + sqrt(b * b + 4.0 * a * n));

        if (!(x < len)) {
            return 0;
        }

        if (fg_sim_gen_at(tr, client, load, start + x) != 0) {
            return -1;
        }
    }
}


static int
fg_sim_gen_poisson(fg_sim_trace_t *tr, uint32_t client,
    const fg_sim_gen_load_t *load, fg_sim_rand_t *rng, double start,
    double end)
{
    double  t;

    t = start;

    for ( ;; ) {
        /* 1 - u lies in (0, 1]: the logarithm is finite */
        t += -log(1.0 - fg_sim_rand_double(rng)) / load->rate;

        if (!(t < end)) {
            return 0;
        }

        if (fg_sim_gen_at(tr, client, load, t) != 0) {
            return -1;
        }
    }
}


int
fg_sim_gen(fg_sim_trace_t *tr, const char *suite, uint64_t seed,
    double duration, char *err, size_t size)
{
    int                        rc;
    char                       name[32];
    double                     start, end;
    size_t                     i;
    uint32_t                   c, p;
    fg_sim_rand_t              rng;
    fg_sim_client_info_t      *info;
    const fg_sim_gen_load_t   *load;
    const fg_sim_gen_suite_t  *s;

    s = NULL;

    for (i = 0; i < FG_SIM_GEN_NSUITES; i++) {
        if (strcmp(suite, fg_sim_gen_table[i].name) == 0) {
            s = &fg_sim_gen_table[i];
            break;
        }
    }

    if (s == NULL) {
        fg_sim_gen_error(err, size, "unknown suite \"%s\"", suite);
        return -1;
    }

    if (duration <= 0.0) {
        duration = s->duration;
    }

    if (!(duration < 1e7)) {
        fg_sim_gen_error(err, size, "duration %g s is too long", duration);
        return -1;
    }

    for (c = 0; c < s->nclients; c++) {
        snprintf(name, sizeof(name), "client%u", c);

        if (fg_sim_trace_client(tr, name) != (int64_t) c) {
            goto nomem;
        }

        if (s->weight[c] > 0.0) {
            info = &tr->clients[c];
            info->weight = s->weight[c];
            info->has_weight = 1;
        }

        fg_sim_rand_init(&rng, seed, c);

        for (p = 0; p < s->nphases; p++) {
            load = &s->load[p][c];

            if (load->rate <= 0.0 && load->rate_end <= 0.0) {
                continue;
            }

            start = duration * p / s->nphases;
            end = duration * (p + 1) / s->nphases;

            rc = load->poisson
                 ? fg_sim_gen_poisson(tr, c, load, &rng, start, end)
                 : fg_sim_gen_uniform(tr, c, load, &rng, start, end);

            if (rc != 0) {
                goto nomem;
            }
        }
    }

    if (fg_sim_trace_sort(tr) != 0) {
        goto nomem;
    }

    return 0;

nomem:

    fg_sim_gen_error(err, size, "out of memory");
    return -1;
}
