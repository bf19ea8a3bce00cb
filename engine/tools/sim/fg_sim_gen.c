
/*
 * fairgate: the synthetic traces of the VTC paper's evaluation.
 */


#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fg_sim_gen.h"
#include "fg_rand.h"


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
    unsigned   burst:1;             /* cyclic bursts (poisson) */
    uint32_t   input_hi;            /* > input: uniform in [input, hi] */
    uint32_t   output_hi;
} fg_sim_gen_load_t;


/* an app of the multi-app suite */
typedef struct {
    const char  *name;
    uint32_t     users;
    double       rate;              /* interactions per second and user */
    uint32_t     stages_lo;
    uint32_t     stages_hi;
    uint32_t     system;            /* system prompt tokens at stage 0 */
    uint32_t     system_step;       /* more at each later stage */
    uint32_t     in_lo;             /* the user's part of the prompt */
    uint32_t     in_hi;
    uint32_t     out_lo;
    uint32_t     out_hi;
    double       gap;               /* mean seconds between stages */
} fg_sim_gen_app_t;


/* an app of the fairserve suite: mean lengths from FairServe's Table 4 */
typedef struct {
    const char  *name;
    uint32_t     users;             /* u0 the abusive one when abuse > 0 */
    double       rate;              /* interactions per second and user */
    double       abuse;             /* u0 sends this many times rate */
    uint32_t     input;             /* mean, the paper's tokens */
    uint32_t     system;            /* of input: the system prompt */
    uint32_t     output;
    double       gap;               /* mean seconds between stages */
} fg_sim_gen_fs_app_t;


/* interactions of lo to hi stages (uniform), share in 1/10,000 */
typedef struct {
    uint32_t     lo;
    uint32_t     hi;
    uint32_t     share;
} fg_sim_gen_fs_size_t;


typedef struct {
    const char         *name;
    double              duration;
    uint32_t            nclients;
    uint32_t            nphases;
    double              weight[FG_SIM_GEN_CLIENTS];     /* 0: none given */
    fg_sim_gen_load_t   load[FG_SIM_GEN_PHASES][FG_SIM_GEN_CLIENTS];
} fg_sim_gen_suite_t;


#define U(r, n)       { r, r, n, n, 0, 0, 0, 0, 0 }
#define P(r, i, o)    { r, r, i, o, 1, 0, 0, 0, 0 }
#define ONOFF(r, n)   { r, r, n, n, 0, 1, 0, 0, 0 }
#define RAMP(a, b, n) { a, b, n, n, 0, 0, 0, 0, 0 }
#define BURST(r, lo, hi)  { r, r, lo, lo, 1, 0, 1, hi, hi }


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

    /*
     * On average 1.12 req/s of 576 tokens, just below what the simulated
     * A10G serves of these lengths with a 10,000-token pool (about 1.18
     * req/s, 677 tokens/s): Andes sets the mean rate to the throughput.
     */
    { "bursts", 1200, 4, 1, { 0 },
      { { BURST(0.28, 64, 512), BURST(0.28, 64, 512), BURST(0.28, 64, 512),
          BURST(0.28, 64, 512) } } },

    /* the same arrivals, with Andes's expectations (fg_sim_gen_expect()) */
    { "cyclic-burst", 1200, 4, 1, { 0 },
      { { BURST(0.28, 64, 512), BURST(0.28, 64, 512), BURST(0.28, 64, 512),
          BURST(0.28, 64, 512) } } },

    /* clients and loads from fg_sim_gen_apps[] */
    { "multi-app", 600, 0, 0, { 0 }, { { U(0, 0) } } },

    /* from fg_sim_gen_fs_apps[] */
    { "fairserve", 600, 0, 0, { 0 }, { { U(0, 0) } } },

    /* fg_sim_gen_prefix.c */
    { "shared-prefix", 600, 0, 0, { 0 }, { { U(0, 0) } } },
    { "s1", 600, 0, 0, { 0 }, { { U(0, 0) } } },
    { "s2", 600, 0, 0, { 0 }, { { U(0, 0) } } },

    /* fg_sim_gen_mux.c */
    { "multi-model", 300, 0, 0, { 0 }, { { U(0, 0) } } },
};


/*
 * Users of one app share its lengths and rate; stage lengths and system
 * prompts are in the ranges MS CoPilot's apps show in FairServe's figures
 * 3 and 5, scaled down to the simulated A10G's KV pool of 10,000 tokens.
 */
static const fg_sim_gen_app_t  fg_sim_gen_apps[] = {
    { "chat",      4, 0.05, 1, 1,  64,   0,   32,  256,  64, 256, 0 },
    { "summarize", 2, 0.02, 1, 1, 128,   0, 1024, 2048,  32, 128, 0 },
    { "code",      2, 0.02, 2, 2, 256, 128,   64,  256, 256, 768, 8 },
    { "agent",     3, 0.02, 3, 5, 384, 128,  128,  512,  64, 256, 4 },
};

/* chat-u0 sends this many times a chat user's rate */
#define FG_SIM_GEN_ABUSE  30.0


/*
 * The fairserve suite (fg_sim_gen.h): the paper's Table 4 apps, their mean
 * input and output tokens as published, divided by FG_SIM_GEN_FS_SCALE in
 * the trace so that the longest prompts fit the simulated A10G's KV pool
 * of 10,000 tokens.
 * System prompts are a share of the input chosen for each app's kind; the
 * gap is the idle engine's service time of a mean request plus
 * FG_SIM_GEN_FS_THINK of the agent's own work.  Normal users' requests
 * come in about Table 4's proportions (269 : 139 : 448) and ask for about
 * 0.8 of what the simulated A10G serves; the abusive users more than
 * double it.
 */
static const fg_sim_gen_fs_app_t  fg_sim_gen_fs_apps[] = {
    { "app14", 25, 0.012, 30.0,  6370, 1600, 102, 1.5 },
    { "app7",  13, 0.012, 10.0, 14854, 2000,  74, 2.1 },
    { "app12", 41, 0.012, 20.0,  999,  400,  32, 1.1 },
};

/* Table 2's graph sizes; the 0.08% above 30 stages (< 0.01% each) left out */
static const fg_sim_gen_fs_size_t  fg_sim_gen_fs_sizes[] = {
    { 1, 1, 7322 }, { 2, 10, 2609 }, { 11, 20, 50 }, { 21, 30, 11 },
};

#define FG_SIM_GEN_FS_SCALE  4
#define FG_SIM_GEN_FS_THINK  1.0

/* cyclic-burst's expectations: seconds, and seconds a token */
#define FG_SIM_GEN_EXPECT_STREAM  0x5e1ec7ULL
#define FG_SIM_GEN_TTFT           1.0
#define FG_SIM_GEN_SLOW_SHARE     0.79
#define FG_SIM_GEN_SLOW_GAP       0.31
#define FG_SIM_GEN_FAST_LO        0.13
#define FG_SIM_GEN_FAST_HI        0.19


#undef U
#undef P
#undef ONOFF
#undef RAMP
#undef BURST


#define FG_SIM_GEN_NSUITES                                                    \
    (sizeof(fg_sim_gen_table) / sizeof(fg_sim_gen_table[0]))

#define FG_SIM_GEN_NAPPS                                                      \
    (sizeof(fg_sim_gen_apps) / sizeof(fg_sim_gen_apps[0]))

#define FG_SIM_GEN_FS_NAPPS                                                   \
    (sizeof(fg_sim_gen_fs_apps) / sizeof(fg_sim_gen_fs_apps[0]))

#define FG_SIM_GEN_FS_NSIZES                                                  \
    (sizeof(fg_sim_gen_fs_sizes) / sizeof(fg_sim_gen_fs_sizes[0]))


const char *
fg_sim_gen_suite(size_t i)
{
    return i < FG_SIM_GEN_NSUITES ? fg_sim_gen_table[i].name : NULL;
}


void
fg_sim_gen_conf_init(fg_sim_gen_conf_t *conf)
{
    memset(conf, 0, sizeof(fg_sim_gen_conf_t));

    conf->seed = 1;
    conf->rate_scale = 1.0;
    conf->intensity = 2.0;
    conf->burst_fraction = 0.35;

    conf->groups = 8;
    conf->prompts = 64;
    conf->system_tokens = 2048;
    conf->question_tokens = 128;
    conf->output_tokens = 256;
    conf->clients = 4;
    conf->attack_rate = 10.0;
    conf->attack_prefix = 4.0;
    conf->attack_groups = 1;
    conf->models_n = 4;
    conf->alpha = 1.3;
}


/* uniform integer in [lo, hi]; lo when hi is not above it */
static uint32_t
fg_sim_gen_length(fg_rand_t *rng, uint32_t lo, uint32_t hi)
{
    return hi > lo ? (uint32_t) fg_rand_range(rng, lo, hi) : lo;
}


static int
fg_sim_gen_at(fg_sim_trace_t *tr, uint32_t client,
    const fg_sim_gen_load_t *load, fg_rand_t *rng, double t)
{
    uint32_t  in, out;

    if (load->on_off && ((int64_t) floor(t / 60.0)) % 2 == 1) {
        return 0;
    }

    in = fg_sim_gen_length(rng, load->input, load->input_hi);
    out = fg_sim_gen_length(rng, load->output, load->output_hi);

    return fg_sim_trace_add(tr, t, client, in, out, out);
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
    const fg_sim_gen_load_t *load, fg_rand_t *rng, double scale,
    double start, double end)
{
    double    a, b, n, x, len, phase;
    uint64_t  k;

    len = end - start;
    a = scale * (load->rate_end - load->rate) / (2.0 * len);
    b = scale * load->rate;

    phase = fg_rand_double(rng);

    for (k = 0; /* void */; k++) {
        n = phase + (double) k;
        x = 2.0 * n / (b + sqrt(b * b + 4.0 * a * n));

        if (!(x < len)) {
            return 0;
        }

        if (fg_sim_gen_at(tr, client, load, rng, start + x) != 0) {
            return -1;
        }
    }
}


/* poisson arrivals at rate in [start, end) */
static int
fg_sim_gen_poisson(fg_sim_trace_t *tr, uint32_t client,
    const fg_sim_gen_load_t *load, fg_rand_t *rng, double rate,
    double start, double end)
{
    double  t;

    if (rate <= 0.0) {
        return 0;
    }

    t = start;

    for ( ;; ) {
        /* 1 - u lies in (0, 1]: the logarithm is finite */
        t += -log(1.0 - fg_rand_double(rng)) / rate;

        if (!(t < end)) {
            return 0;
        }

        if (fg_sim_gen_at(tr, client, load, rng, t) != 0) {
            return -1;
        }
    }
}


/*
 * Cyclic bursts in [start, end): each cycle is calm, burst, calm, the
 * burst centred; poisson in each part, which is exact for a rate that is
 * constant by parts, as a poisson process has no memory.
 */
static int
fg_sim_gen_bursts(fg_sim_trace_t *tr, uint32_t client,
    const fg_sim_gen_load_t *load, fg_rand_t *rng,
    const fg_sim_gen_conf_t *conf, double start, double end)
{
    double  c0, cycle, calm, burst, mean, high, low, edge[4];
    size_t  i;

    cycle = conf->cycle > 0.0 ? conf->cycle : end - start;
    burst = conf->burst_fraction * cycle;
    calm = (cycle - burst) / 2.0;

    mean = conf->rate_scale * load->rate;
    high = mean * conf->intensity;
    low = mean * (1.0 - conf->intensity * conf->burst_fraction)
          / (1.0 - conf->burst_fraction);

    for (c0 = start; c0 < end; c0 += cycle) {
        edge[0] = c0;
        edge[1] = c0 + calm;
        edge[2] = c0 + calm + burst;
        edge[3] = c0 + cycle;

        for (i = 0; i < 3; i++) {
            if (fg_sim_gen_poisson(tr, client, load, rng,
                                   i == 1 ? high : low, fmin(edge[i], end),
                                   fmin(edge[i + 1], end))
                != 0)
            {
                return -1;
            }
        }
    }

    return 0;
}


/*
 * The suites of apps and interactions (multi-app, fairserve): an app's
 * name, string and gap between stages; its suite's draws of a new
 * interaction's stages and of a stage's system, input and output tokens.
 */
typedef struct {
    const char  *name;
    int64_t      app;
    double       gap;               /* mean seconds between stages */
    const void  *data;              /* the suite's app */
    uint32_t   (*stages)(fg_rand_t *rng, const void *data);
    void       (*lengths)(fg_rand_t *rng, const void *data, uint32_t stage,
                          uint32_t *sys, uint32_t *in, uint32_t *out);
} fg_sim_gen_ia_t;


/*
 * User u of the app: client and user "APP-uU", a random stream of its own
 * (whatever the users before it drew), interactions "APP-uU-K" arriving
 * poisson at rate until the duration, each one whole: its later stages
 * may pass the end.
 */
static int
fg_sim_gen_user(fg_sim_trace_t *tr, const fg_sim_gen_conf_t *conf,
    const fg_sim_gen_ia_t *ia, uint32_t u, double rate, double duration)
{
    char           name[64];
    double         t, ts;
    int64_t        client, user, inter;
    uint32_t       j, nstages, k, sys, in, out;
    fg_rand_t      rng;
    fg_sim_req_t  *r;

    snprintf(name, sizeof(name), "%s-u%u", ia->name, u);

    client = fg_sim_trace_client(tr, name);
    user = fg_sim_trace_str(tr, name);
    if (client < 0 || user < 0) {
        return -1;
    }

    fg_rand_stream(&rng, conf->seed, (uint64_t) client);

    t = 0.0;

    for (k = 0; /* void */; k++) {
        t += -log(1.0 - fg_rand_double(&rng)) / rate;

        if (!(t < duration)) {
            return 0;
        }

        snprintf(name, sizeof(name), "%s-u%u-%u", ia->name, u, k);

        inter = fg_sim_trace_str(tr, name);
        if (inter < 0) {
            return -1;
        }

        nstages = ia->stages(&rng, ia->data);
        ts = t;

        for (j = 0; j < nstages; j++) {
            if (j > 0) {
                ts += ia->gap * (0.5 + fg_rand_double(&rng));
            }

            ia->lengths(&rng, ia->data, j, &sys, &in, &out);

            if (fg_sim_trace_add(tr, ts, (uint32_t) client, in, out, out)
                != 0)
            {
                return -1;
            }

            r = &tr->reqs[tr->n - 1];
            r->user = (uint32_t) user;
            r->app = (uint32_t) ia->app;
            r->interaction = (uint32_t) inter;
            r->stage = (int32_t) j;
            r->system_tokens = sys;
        }
    }
}


/*
 * The app's users at rate interactions a second each (the rate scale's),
 * u0 at abuse times it; ia->app set.
 */
static int
fg_sim_gen_app(fg_sim_trace_t *tr, const fg_sim_gen_conf_t *conf,
    fg_sim_gen_ia_t *ia, uint32_t users, double rate, double abuse,
    double duration)
{
    double    r;
    uint32_t  u;

    ia->app = fg_sim_trace_str(tr, ia->name);
    if (ia->app < 0) {
        return -1;
    }

    for (u = 0; u < users; u++) {
        r = conf->rate_scale * rate;
        if (u == 0) {
            r *= abuse;
        }

        if (fg_sim_gen_user(tr, conf, ia, u, r, duration) != 0) {
            return -1;
        }
    }

    return 0;
}


static uint32_t
fg_sim_gen_app_stages(fg_rand_t *rng, const void *data)
{
    const fg_sim_gen_app_t  *ap = data;

    return fg_sim_gen_length(rng, ap->stages_lo, ap->stages_hi);
}


/* the system prompt grows by stage; the user's part and output uniform */
static void
fg_sim_gen_app_lengths(fg_rand_t *rng, const void *data, uint32_t stage,
    uint32_t *sys, uint32_t *in, uint32_t *out)
{
    const fg_sim_gen_app_t  *ap = data;

    *sys = ap->system + stage * ap->system_step;
    *in = *sys + fg_sim_gen_length(rng, ap->in_lo, ap->in_hi);
    *out = fg_sim_gen_length(rng, ap->out_lo, ap->out_hi);
}


/* the multi-app suite: see fg_sim_gen.h */
static int
fg_sim_gen_multi_app(fg_sim_trace_t *tr, const fg_sim_gen_conf_t *conf,
    double duration)
{
    uint32_t                 a;
    fg_sim_gen_ia_t          ia;
    const fg_sim_gen_app_t  *ap;

    for (a = 0; a < FG_SIM_GEN_NAPPS; a++) {
        ap = &fg_sim_gen_apps[a];

        ia.name = ap->name;
        ia.gap = ap->gap;
        ia.data = ap;
        ia.stages = fg_sim_gen_app_stages;
        ia.lengths = fg_sim_gen_app_lengths;

        /* chat-u0 abuses */
        if (fg_sim_gen_app(tr, conf, &ia, ap->users, ap->rate,
                           a == 0 ? FG_SIM_GEN_ABUSE : 1.0, duration)
            != 0)
        {
            return -1;
        }
    }

    return 0;
}


/* the paper's tokens, scaled down and rounded; at least 1 */
static uint32_t
fg_sim_gen_fs_tokens(uint32_t paper)
{
    uint32_t  n;

    n = (paper + FG_SIM_GEN_FS_SCALE / 2) / FG_SIM_GEN_FS_SCALE;

    return n > 0 ? n : 1;
}


/* uniform in [mean / 2, mean * 3 / 2]: the mean kept, at least 1 */
static uint32_t
fg_sim_gen_fs_spread(fg_rand_t *rng, uint32_t mean)
{
    uint32_t  n;

    n = fg_sim_gen_length(rng, mean - mean / 2, mean + mean / 2);

    return n > 0 ? n : 1;
}


/* an interaction's number of stages, drawn from Table 2's sizes */
static uint32_t
fg_sim_gen_fs_stages(fg_rand_t *rng, const void *data)
{
    size_t    i;
    uint32_t  total, u;

    (void) data;

    total = 0;

    for (i = 0; i < FG_SIM_GEN_FS_NSIZES; i++) {
        total += fg_sim_gen_fs_sizes[i].share;
    }

    u = (uint32_t) fg_rand_range(rng, 0, total - 1);

    for (i = 0; u >= fg_sim_gen_fs_sizes[i].share; i++) {
        u -= fg_sim_gen_fs_sizes[i].share;
    }

    return fg_sim_gen_length(rng, fg_sim_gen_fs_sizes[i].lo,
                             fg_sim_gen_fs_sizes[i].hi);
}


/* the system prompt the same in every request of the app; means spread */
static void
fg_sim_gen_fs_lengths(fg_rand_t *rng, const void *data, uint32_t stage,
    uint32_t *sys, uint32_t *in, uint32_t *out)
{
    const fg_sim_gen_fs_app_t  *ap = data;

    (void) stage;

    *sys = fg_sim_gen_fs_tokens(ap->system);
    *in = *sys + fg_sim_gen_fs_spread(rng, fg_sim_gen_fs_tokens(ap->input)
                                           - *sys);
    *out = fg_sim_gen_fs_spread(rng, fg_sim_gen_fs_tokens(ap->output));
}


/* the fairserve suite: see fg_sim_gen.h */
static int
fg_sim_gen_fairserve(fg_sim_trace_t *tr, const fg_sim_gen_conf_t *conf,
    double duration)
{
    uint32_t                    a;
    fg_sim_gen_ia_t             ia;
    const fg_sim_gen_fs_app_t  *ap;

    for (a = 0; a < FG_SIM_GEN_FS_NAPPS; a++) {
        ap = &fg_sim_gen_fs_apps[a];

        ia.name = ap->name;
        ia.gap = ap->gap;
        ia.data = ap;
        ia.stages = fg_sim_gen_fs_stages;
        ia.lengths = fg_sim_gen_fs_lengths;

        if (fg_sim_gen_app(tr, conf, &ia, ap->users, ap->rate,
                           ap->abuse > 0.0 ? ap->abuse : 1.0, duration)
            != 0)
        {
            return -1;
        }
    }

    return 0;
}


int
fg_sim_gen(fg_sim_trace_t *tr, const char *suite, uint64_t seed,
    double duration, char *err, size_t size)
{
    fg_sim_gen_conf_t  conf;

    fg_sim_gen_conf_init(&conf);

    conf.seed = seed;
    conf.duration = duration;

    return fg_sim_gen_conf(tr, suite, &conf, err, size);
}


/* the suite's name and the knobs: 0, or -1 with the problem in err */
static int
fg_sim_gen_check(const char *suite, const fg_sim_gen_conf_t *conf,
    const fg_sim_gen_suite_t **suite_out, double *duration_out, char *err,
    size_t size)
{
    double                     duration;
    size_t                     i;
    const fg_sim_gen_suite_t  *s;

    s = NULL;

    for (i = 0; i < FG_SIM_GEN_NSUITES; i++) {
        if (strcmp(suite, fg_sim_gen_table[i].name) == 0) {
            s = &fg_sim_gen_table[i];
            break;
        }
    }

    if (s == NULL) {
        fg_sim_error(err, size, "unknown suite \"%s\"", suite);
        return -1;
    }

    duration = conf->duration > 0.0 ? conf->duration : s->duration;

    if (!(duration < 1e7)) {
        fg_sim_error(err, size, "duration %g s is too long", duration);
        return -1;
    }

    if (!(conf->rate_scale > 0.0 && conf->rate_scale <= 1e4)) {
        fg_sim_error(err, size, "rate scale %g is not in (0, 10000]",
                     conf->rate_scale);
        return -1;
    }

    if (!(conf->burst_fraction > 0.0 && conf->burst_fraction < 1.0)
        || !(conf->intensity > 0.0)
        || conf->intensity * conf->burst_fraction > 1.0 + 1e-12)
    {
        /* the calm rate would be negative: the mean cannot be kept */
        fg_sim_error(err, size, "bursts: intensity %g and burst "
                     "fraction %g need 0 < fraction < 1 and 0 < "
                     "intensity * fraction <= 1", conf->intensity,
                     conf->burst_fraction);
        return -1;
    }

    if (!(conf->cycle >= 0.0 && conf->cycle < 1e7)
        || (conf->cycle > 0.0 && duration / conf->cycle > 1e5))
    {
        fg_sim_error(err, size, "bursts: cycle %g s is out of range",
                     conf->cycle);
        return -1;
    }

    if (conf->groups == 0 || conf->prompts == 0 || conf->clients == 0
        || conf->attack_groups == 0 || conf->attack_groups > 100000
        || conf->question_tokens == 0 || conf->output_tokens == 0
        || (uint64_t) conf->groups * conf->prompts > 10000000
        || conf->clients > 100000
        || !(conf->attack_rate > 0.0 && conf->attack_rate <= 1e4)
        || !(conf->attack_prefix >= 1.0 && conf->attack_prefix <= 1e3)
        || conf->attack_prefix * conf->system_tokens + conf->question_tokens
           > FG_SIM_MAX_TOKENS
        || conf->output_tokens > FG_SIM_MAX_TOKENS)
    {
        fg_sim_error(err, size, "shared-prefix: groups, prompts, clients, "
                     "questions and outputs must be positive, the attack's "
                     "rate in (0, 10000] and prefix factor in [1, 1000], "
                     "within the trace's limits");
        return -1;
    }

    if (conf->models_n == 0 || conf->models_n > 8
        || !(conf->alpha >= 0.0 && conf->alpha <= 10.0))
    {
        fg_sim_error(err, size, "multi-model: 1 to 8 models, alpha in "
                     "[0, 10]");
        return -1;
    }

    *suite_out = s;
    *duration_out = duration;

    return 0;
}


/* client c of a suite of the VTC paper's kind: its phases, in turn */
static int
fg_sim_gen_client(fg_sim_trace_t *tr, const fg_sim_gen_suite_t *s,
    const fg_sim_gen_conf_t *conf, uint32_t c, double duration)
{
    int                       rc;
    char                      name[32];
    double                    start, end;
    uint32_t                  p;
    fg_rand_t                 rng;
    fg_sim_client_info_t     *info;
    const fg_sim_gen_load_t  *load;

    snprintf(name, sizeof(name), "client%u", c);

    if (fg_sim_trace_client(tr, name) != (int64_t) c) {
        return -1;
    }

    if (s->weight[c] > 0.0) {
        info = &tr->clients[c];
        info->weight = s->weight[c];
        info->has_weight = 1;
    }

    fg_rand_stream(&rng, conf->seed, c);

    for (p = 0; p < s->nphases; p++) {
        load = &s->load[p][c];

        if (load->rate <= 0.0 && load->rate_end <= 0.0) {
            continue;
        }

        start = duration * p / s->nphases;
        end = duration * (p + 1) / s->nphases;

        if (load->burst) {
            rc = fg_sim_gen_bursts(tr, c, load, &rng, conf, start, end);

        } else if (load->poisson) {
            rc = fg_sim_gen_poisson(tr, c, load, &rng,
                                    conf->rate_scale * load->rate,
                                    start, end);

        } else {
            rc = fg_sim_gen_uniform(tr, c, load, &rng, conf->rate_scale,
                                    start, end);
        }

        if (rc != 0) {
            return -1;
        }
    }

    return 0;
}


/*
 * Andes's expectations, as in the authors' traces: a TTFT target of 1 s;
 * 0.31 s a token for 79% of readers, else U(0.13, 0.19) s.  Drawn in
 * trace order from a stream of their own, so the arrivals stay bursts'.
 */
static void
fg_sim_gen_expect(fg_sim_trace_t *tr, uint64_t seed)
{
    double     u;
    size_t     i;
    fg_rand_t  rng;

    fg_rand_stream(&rng, seed, FG_SIM_GEN_EXPECT_STREAM);

    for (i = 0; i < tr->n; i++) {
        u = fg_rand_double(&rng);

        tr->reqs[i].ttft_target = FG_SIM_GEN_TTFT;
        tr->reqs[i].tokens_per_s =
            u < FG_SIM_GEN_SLOW_SHARE
            ? 1.0 / FG_SIM_GEN_SLOW_GAP
            : 1.0 / (FG_SIM_GEN_FAST_LO + (FG_SIM_GEN_FAST_HI
                                           - FG_SIM_GEN_FAST_LO)
                                          * fg_rand_double(&rng));
    }
}


int
fg_sim_gen_conf(fg_sim_trace_t *tr, const char *suite,
    const fg_sim_gen_conf_t *conf, char *err, size_t size)
{
    int                        rc;
    double                     duration;
    uint32_t                   c;
    const fg_sim_gen_suite_t  *s;

    if (fg_sim_gen_check(suite, conf, &s, &duration, err, size) != 0) {
        return -1;
    }

    if (s->nclients == 0) {
        rc = fg_sim_gen_is_prefix(s->name)
             ? fg_sim_gen_prefix(tr, s->name, conf, duration)
             : strcmp(s->name, "multi-model") == 0
             ? fg_sim_gen_multi_model(tr, conf, duration)
             : strcmp(s->name, "fairserve") == 0
             ? fg_sim_gen_fairserve(tr, conf, duration)
             : fg_sim_gen_multi_app(tr, conf, duration);

        if (rc != 0) {
            goto nomem;
        }
    }

    for (c = 0; c < s->nclients; c++) {
        if (fg_sim_gen_client(tr, s, conf, c, duration) != 0) {
            goto nomem;
        }
    }

    if (fg_sim_trace_sort(tr) != 0) {
        goto nomem;
    }

    if (strcmp(s->name, "cyclic-burst") == 0) {
        fg_sim_gen_expect(tr, conf->seed);
    }

    return 0;

nomem:

    fg_sim_error(err, size, "out of memory");
    return -1;
}
