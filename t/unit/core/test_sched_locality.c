
/*
 * fairgate: property tests of lpm and dlpm over random traces, before a
 * small model of engines with prefix caches.
 *
 * The model: time in steps; each engine holds requests while their input
 * and output fit its KV tokens (reserved at admission), and each running
 * request makes one output token a step.  Requests come in prefix groups:
 * a group's first prefix tokens are shared; an engine's cache holds the
 * prefixes of the last few groups it served (LRU), and the index the
 * scheduler's match reads is that cache as it was at the end of the last
 * step (a hint a step late, as the engine's segment is); the engine's own
 * count at admission goes to fg_sched_cached(), which settles the charge.
 *
 * The bound (DLPM's, as VTC's is checked in t/unit/sim): for two clients
 * f and g both backlogged (with waiting requests) over [t1, t2],
 *
 *     |W_f(t1, t2) - W_g(t1, t2)| <= 2 |W| (U + Q)
 *
 * with W the service as charged (divided by the weight), Q the quantum,
 * |W| engines and U = (w_p * L_in + w_q * M) / min(w): the largest
 * admission charge and the decode steps a client's running requests may
 * still charge after its deficit ran out, M tokens of one engine (the
 * paper's U has w_q, one step: a client whose prompts are all cached is
 * admitted at no charge until the batch is full, and the test shows that
 * bound broken).  What is checked is the stronger 2 (Q + U'), U' with the
 * M of all engines together, which implies it.  As in t/unit/sim, the
 * largest difference over sub-intervals of a common backlog period is
 * max(D) - min(D) of D(t) = W_f(0, t) - W_g(0, t), sampled after every
 * event.
 */


#include <math.h>
#include <stdlib.h>

#include "fg_tap.h"
#include "fg_rand.h"
#include "fg_sched.h"


#define MAXC     4                     /* clients */
#define MAXE     4                     /* engines */
#define MAXG     12                    /* prefix groups */
#define CACHEG   8                     /* groups an engine's cache holds */
#define NOGROUP  -1


typedef struct {
    uint32_t        at;                /* arrival step */
    uint32_t        client;
    int32_t         group;             /* NOGROUP: nothing shared */
    uint32_t        in;
    uint32_t        out;
} spec_t;


typedef struct {
    spec_t         *spec;
    uint32_t        n;
    uint32_t        cap;
    uint32_t        nclients;
    double          weight[MAXC];
    uint32_t        ngroups;
    uint32_t        prefix[MAXG];      /* a group's shared input tokens */

    /* the engines */
    uint32_t        nengines;
    uint32_t        kv[MAXE];
    uint32_t        cache_groups[MAXE];
} trace_t;


typedef struct {
    int32_t         group[CACHEG];     /* LRU first */
    int32_t         seen[CACHEG];      /* what match reads: a step late */
    uint32_t        used;
} engine_t;


typedef struct {
    fg_request_t    core;              /* first: the core's is ours */
    const spec_t   *spec;
    uint32_t        left;
} req_t;


typedef struct {
    uint32_t        n;
    double          w[MAXC];
    int             in[MAXC][MAXC];
    double          lo[MAXC][MAXC];
    double          hi[MAXC][MAXC];
    double          worst;             /* largest max(D) - min(D) */
    uint64_t        events;            /* sampled in common backlog */
} check_t;


typedef struct {
    const trace_t  *tr;
    fg_sched_t     *s;
    fg_client_t     clients[MAXC];
    engine_t        eng[MAXE];
    req_t          *reqs;
    req_t         **running;
    uint32_t        nrunning;
    uint64_t        hit;               /* input tokens found cached */
    uint64_t        query;             /* input tokens admitted */
    check_t         ck;
} sim_t;


static void
trace_add(trace_t *tr, uint32_t at, uint32_t client, int32_t group,
    uint32_t in, uint32_t out)
{
    spec_t  *sp;

    if (tr->n == tr->cap) {
        tr->cap = tr->cap ? 2 * tr->cap : 256;
        tr->spec = realloc(tr->spec, tr->cap * sizeof(spec_t));

        if (tr->spec == NULL) {
            abort();
        }
    }

    sp = &tr->spec[tr->n++];
    sp->at = at;
    sp->client = client;
    sp->group = group;
    sp->in = in;
    sp->out = out;
}


static int
spec_cmp(const void *a, const void *b)
{
    const spec_t  *x = a, *y = b;

    return (x->at > y->at) - (x->at < y->at);
}


static void
trace_init(trace_t *tr, uint32_t nclients, uint32_t nengines, uint32_t kv,
    uint32_t cache_groups)
{
    uint32_t  i;

    memset(tr, 0, sizeof(trace_t));
    tr->nclients = nclients;
    tr->nengines = nengines;

    for (i = 0; i < MAXC; i++) {
        tr->weight[i] = 1.0;
    }

    for (i = 0; i < MAXE; i++) {
        tr->kv[i] = kv;
        tr->cache_groups[i] = cache_groups;
    }
}


/* ---- the engines as the scheduler sees them ---- */

static uint32_t
cached_in(const trace_t *tr, const int32_t *groups, const spec_t *sp)
{
    uint32_t  i;

    if (sp->group == NOGROUP) {
        return 0;
    }

    for (i = 0; i < CACHEG; i++) {
        if (groups[i] == sp->group) {
            return tr->prefix[sp->group];
        }
    }

    return 0;
}


static uint32_t
sim_match(fg_request_t *r, uint32_t e, void *data)
{
    sim_t  *sim = data;

    return cached_in(sim->tr, sim->eng[e].seen, ((req_t *) r)->spec);
}


static int
sim_fits(fg_request_t *r, uint32_t e, void *data)
{
    sim_t  *sim = data;

    return sim->eng[e].used + r->input_tokens + r->max_output_tokens
           <= sim->tr->kv[e];
}


static double
sim_load(uint32_t e, void *data)
{
    sim_t  *sim = data;

    return (double) sim->eng[e].used / sim->tr->kv[e];
}


/* the engine's cache takes the group's prefix, least recently used out */
static void
cache_use(engine_t *eng, uint32_t size, int32_t group)
{
    uint32_t  i, at;

    if (group == NOGROUP || size == 0) {
        return;
    }

    /* 0 is the least recently used end: it goes if the group is new */
    at = 0;

    for (i = 0; i < size; i++) {
        if (eng->group[i] == group) {
            at = i;
            break;
        }
    }

    memmove(&eng->group[at], &eng->group[at + 1],
            (size - 1 - at) * sizeof(int32_t));
    eng->group[size - 1] = group;
}


/* ---- the check ---- */

static void
check_sample(sim_t *sim)
{
    int        both;
    double     d;
    uint32_t   i, j;
    check_t   *ck;

    ck = &sim->ck;

    for (i = 0; i < ck->n; i++) {
        for (j = i + 1; j < ck->n; j++) {
            both = sim->clients[i].n_waiting > 0
                   && sim->clients[j].n_waiting > 0;

            if (!both && !ck->in[i][j]) {
                continue;
            }

            d = sim->clients[i].service / ck->w[i]
                - sim->clients[j].service / ck->w[j];

            if (!ck->in[i][j]) {
                ck->in[i][j] = 1;
                ck->lo[i][j] = d;
                ck->hi[i][j] = d;
                continue;
            }

            /* the event that ends a period counts in it */
            ck->lo[i][j] = fmin(ck->lo[i][j], d);
            ck->hi[i][j] = fmax(ck->hi[i][j], d);
            ck->events++;

            if (!both) {
                ck->in[i][j] = 0;
                ck->worst = fmax(ck->worst, ck->hi[i][j] - ck->lo[i][j]);
            }
        }
    }
}


/* ---- the run ---- */

static void
sim_admitted(sim_t *sim, req_t *r)
{
    uint32_t   e, actual;
    engine_t  *eng;

    e = r->core.engine;
    eng = &sim->eng[e];

    /* the engine's own count: its cache now, not the index's last step */
    actual = cached_in(sim->tr, eng->group, r->spec);
    if (actual != r->core.cached_tokens) {
        fg_sched_cached(sim->s, &r->core, actual);
    }

    cache_use(eng, sim->tr->cache_groups[e], r->spec->group);

    eng->used += r->spec->in + r->spec->out;
    sim->hit += actual;
    sim->query += r->spec->in;
    sim->running[sim->nrunning++] = r;
}


static void
sim_decode(sim_t *sim)
{
    req_t     *r;
    uint32_t   i, k;

    for (i = 0, k = 0; i < sim->nrunning; i++) {
        r = sim->running[i];
        fg_sched_charge(sim->s, &r->core, 1);
        check_sample(sim);

        if (--r->left > 0) {
            sim->running[k++] = r;
            continue;
        }

        fg_sched_finish(sim->s, &r->core);
        sim->eng[r->core.engine].used -= r->spec->in + r->spec->out;
    }

    sim->nrunning = k;
}


/*
 * Runs the trace to its end under policy (quantum, window, route); fills
 * sim (its check and hit counts).  Returns -1 if it did not drain.
 */
static int
sim_run(sim_t *sim, const trace_t *tr, fg_policy_e policy, double quantum,
    uint32_t window, fg_route_e route)
{
    int                  rc;
    req_t               *r;
    uint32_t             i, e, step, next;
    fg_sched_conf_t      conf;
    fg_sched_stats_t     st;
    fg_sched_engines_t   en;

    memset(sim, 0, sizeof(sim_t));
    sim->tr = tr;

    fg_sched_conf_init(&conf, MAXC);
    conf.policy = policy;
    conf.quantum = quantum;
    conf.window = window;
    conf.route = route;

    sim->s = fg_sched_create(&conf, &fg_sched_heap);
    sim->reqs = calloc(tr->n ? tr->n : 1, sizeof(req_t));
    sim->running = calloc(tr->n ? tr->n : 1, sizeof(req_t *));

    if (sim->s == NULL || sim->reqs == NULL || sim->running == NULL) {
        abort();
    }

    sim->ck.n = tr->nclients;

    for (i = 0; i < tr->nclients; i++) {
        fg_client_init(sim->s, &sim->clients[i], i, tr->weight[i]);
        sim->ck.w[i] = tr->weight[i];
    }

    for (e = 0; e < MAXE; e++) {
        for (i = 0; i < CACHEG; i++) {
            sim->eng[e].group[i] = NOGROUP;
            sim->eng[e].seen[i] = NOGROUP;
        }
    }

    en.n_engines = tr->nengines;
    en.match = sim_match;
    en.fits = sim_fits;
    en.load = sim_load;
    en.data = sim;

    next = 0;
    rc = -1;

    for (step = 0; step < 1000000; step++) {
        for ( /* void */ ; next < tr->n && tr->spec[next].at <= step; next++)
        {
            r = &sim->reqs[next];
            r->spec = &tr->spec[next];
            r->left = r->spec->out;
            fg_request_init(&r->core, r->spec->in, r->spec->out);
            fg_sched_enqueue(sim->s, &sim->clients[r->spec->client],
                             &r->core, step);
            check_sample(sim);
        }

        while ((r = (req_t *) fg_sched_dispatch_to(sim->s, &en)) != NULL) {
            sim_admitted(sim, r);
            check_sample(sim);
        }

        sim_decode(sim);

        for (e = 0; e < tr->nengines; e++) {
            memcpy(sim->eng[e].seen, sim->eng[e].group,
                   sizeof(sim->eng[e].seen));
        }

        fg_sched_stats(sim->s, &st);

        if (next == tr->n && sim->nrunning == 0 && st.waiting == 0) {
            rc = 0;
            break;
        }
    }

    fg_sched_destroy(sim->s, &fg_sched_heap);
    free(sim->reqs);
    free(sim->running);

    return rc;
}


/* ---- bounds ---- */

static double
min_weight(const trace_t *tr)
{
    double    w;
    uint32_t  i;

    w = tr->weight[0];

    for (i = 1; i < tr->nclients; i++) {
        w = fmin(w, tr->weight[i]);
    }

    return w;
}


static uint32_t
longest_input(const trace_t *tr)
{
    uint32_t  i, l;

    for (i = 0, l = 0; i < tr->n; i++) {
        l = tr->spec[i].in > l ? tr->spec[i].in : l;
    }

    return l;
}


/* dlpm's 2 (Q + U'), linear 1/2 cost, M the tokens of every engine */
static double
dlpm_bound(const trace_t *tr, double quantum)
{
    uint32_t  e, m;

    for (e = 0, m = 0; e < tr->nengines; e++) {
        m += tr->kv[e];
    }

    return 2.0 * (quantum + (1.0 * longest_input(tr) + 2.0 * m)
                            / min_weight(tr));
}


/* as the paper states it: U = w_p * L_in + w_q, one decode step */
static double
paper_bound(const trace_t *tr, double quantum)
{
    return 2.0 * tr->nengines
           * (quantum + (1.0 * longest_input(tr) + 2.0) / min_weight(tr));
}


/* vtc's 2 max(w_p * L_in, w_q * M), M of every engine */
static double
vtc_bound(const trace_t *tr)
{
    uint32_t  e, m;

    for (e = 0, m = 0; e < tr->nengines; e++) {
        m += tr->kv[e];
    }

    return 2.0 * fmax(1.0 * longest_input(tr), 2.0 * m) / min_weight(tr);
}


/* ---- random traces ---- */

/*
 * 2-4 clients, 1-12 prefix groups of long shared prefixes, each client
 * drawing from a few groups (some shared with others) or none; engines of
 * 600-4,000 tokens caching 1-8 groups; a load of 0.3-3 times what the
 * engines serve, so that clients are often backlogged together.
 */
static void
random_trace(trace_t *tr, fg_rand_t *rng, uint32_t nengines, int weighted)
{
    double    rate, t, cap, p_group, share;
    uint32_t  c, e, g, g0, ng, kv, l_in, l_out, in, out, horizon;

    static const double  weights[] = { 0.5, 1, 2, 3 };

    kv = fg_rand_range(rng, 600, 4000);
    trace_init(tr, fg_rand_range(rng, 2, MAXC), nengines, kv,
               fg_rand_range(rng, 1, CACHEG));

    for (e = 0; e < nengines; e++) {
        tr->kv[e] = fg_rand_range(rng, kv / 2, kv);
        tr->cache_groups[e] = fg_rand_range(rng, 1, CACHEG);
    }

    l_in = fg_rand_range(rng, 32, kv / 4);
    l_out = fg_rand_range(rng, 4, kv / 8);
    horizon = fg_rand_range(rng, 200, 600);

    tr->ngroups = fg_rand_range(rng, 1, MAXG);

    for (g = 0; g < tr->ngroups; g++) {
        tr->prefix[g] = fg_rand_range(rng, l_in / 3, l_in - 1);
    }

    /* what the engines serve: requests a step, at the mean lengths */
    cap = 0;

    for (e = 0; e < nengines; e++) {
        cap += tr->kv[e] / ((l_in / 2.0 + l_out / 2.0) * (l_out / 2.0 + 1));
    }

    for (c = 0; c < tr->nclients; c++) {
        if (weighted) {
            tr->weight[c] = weights[fg_rand_range(rng, 0, 3)];
        }

        p_group = fg_rand_double(rng);
        g0 = fg_rand_range(rng, 0, tr->ngroups - 1);
        ng = fg_rand_range(rng, 1, 3);
        share = 0.2 + 1.8 * fg_rand_double(rng);
        rate = share * (0.3 + 2.7 * fg_rand_double(rng)) * cap
               / tr->nclients;

        for (t = fg_rand_double(rng) / rate; t < horizon;
             t += -log(1.0 - fg_rand_double(rng)) / rate)
        {
            out = fg_rand_range(rng, 1, l_out);

            if (fg_rand_double(rng) < p_group) {
                g = (g0 + fg_rand_range(rng, 0, ng - 1)) % tr->ngroups;
                in = tr->prefix[g] + fg_rand_range(rng, 1, l_in / 4);
                trace_add(tr, (uint32_t) t, c, g, in, out);

            } else {
                in = fg_rand_range(rng, 1, l_in);
                trace_add(tr, (uint32_t) t, c, NOGROUP, in, out);
            }
        }
    }

    qsort(tr->spec, tr->n, sizeof(spec_t), spec_cmp);
}


/*
 * Many seeded traces under policy: every pair of clients within its bound;
 * returns the worst ratio to it, and how much common backlog there was.
 */
static void
test_random(const char *name, fg_policy_e policy, uint32_t min_engines,
    uint32_t max_engines, int trials, uint64_t seed)
{
    int        t, failed, weighted, beyond;
    double     b, q, ratio, worst;
    uint32_t   window;
    uint64_t   events;
    sim_t      sim;
    trace_t    tr;
    fg_rand_t  rng;
    fg_route_e route;

    static const uint32_t  windows[] = { 1, 2, 4, 16, 128 };

    failed = 0;
    beyond = 0;
    worst = 0;
    events = 0;

    for (t = 0; t < trials; t++) {
        fg_rand_stream(&rng, seed, t);

        weighted = fg_rand_double(&rng) < 0.5;
        random_trace(&tr, &rng,
                     fg_rand_range(&rng, min_engines, max_engines), weighted);

        q = fg_rand_range(&rng, 16, 4096);
        window = windows[fg_rand_range(&rng, 0, 4)];
        route = (fg_route_e) fg_rand_range(&rng, 0, 2);

        if (sim_run(&sim, &tr, policy, q, window, route) != 0) {
            failed++;
            diag("%s trial %d: did not drain", name, t);
            free(tr.spec);
            continue;
        }

        b = policy == FG_POLICY_DLPM ? dlpm_bound(&tr, q) : vtc_bound(&tr);
        ratio = sim.ck.worst / b;
        worst = fmax(worst, ratio);
        events += sim.ck.events;
        beyond += sim.ck.worst > paper_bound(&tr, q);

        if (ratio > 1.0) {
            failed++;
            diag("%s trial %d: %u clients, %u engines, Q %.0f, window %u, "
                 "route %s: worst %.0f > bound %.0f", name, t, tr.nclients,
                 tr.nengines, q, window, fg_sched_route_name(route),
                 sim.ck.worst, b);
        }

        free(tr.spec);
    }

    ok(failed == 0, "%s: %d random traces, every pair of backlogged clients "
       "within the bound (worst at %.2f of it)", name, trials, worst);

    if (policy == FG_POLICY_DLPM) {
        diag("%s: %d of %d traces beyond the paper's U (one decode step)",
             name, beyond, trials);
    }

    /* the property must have had something to bite on */
    ok(events > (uint64_t) trials * 1000, "%s: %llu events sampled in common "
       "backlog", name, (unsigned long long) events);
}


/* ---- the attacks: lpm unfair, dlpm not ---- */

/*
 * S1: client 0 sends five times client 1's rate, all of one cached
 * prefix; client 1's prompts share nothing.  S2: both at one rate, client
 * 0's prefixes far longer.  One engine of 1,200 tokens caching 2 groups.
 */
static void
attack_trace(trace_t *tr, int s2)
{
    uint32_t  t;

    trace_init(tr, 2, 1, 1200, 2);
    tr->ngroups = 2;
    tr->prefix[0] = 450;
    tr->prefix[1] = 50;

    for (t = 0; t < 4000; t++) {
        if (s2) {
            if (t % 10 == 0) {
                trace_add(tr, t, 0, 0, 500, 50);
                trace_add(tr, t, 1, 1, 500, 50);
            }

            continue;
        }

        if (t % 2 == 0) {
            trace_add(tr, t, 0, 0, 500, 50);
        }

        if (t % 10 == 0) {
            trace_add(tr, t, 1, NOGROUP, 500, 50);
        }
    }
}


static void
test_attacks(void)
{
    int      s2;
    double   b;
    sim_t    sim;
    trace_t  tr;

    for (s2 = 0; s2 <= 1; s2++) {
        attack_trace(&tr, s2);
        b = dlpm_bound(&tr, 2048);

        if (sim_run(&sim, &tr, FG_POLICY_LPM, 2048, 128, FG_ROUTE_PREFIX)
            == 0)
        {
            ok(sim.ck.worst > 2 * b, "%s, lpm: breaks the bound (%.0f > 2 x "
               "%.0f)", s2 ? "S2" : "S1", sim.ck.worst, b);
        }

        if (sim_run(&sim, &tr, FG_POLICY_DLPM, 2048, 128, FG_ROUTE_PREFIX)
            == 0)
        {
            ok(sim.ck.worst <= b && sim.ck.events > 10000,
               "%s, dlpm: within it (%.0f of %.0f)", s2 ? "S2" : "S1",
               sim.ck.worst, b);
        }

        free(tr.spec);
    }
}


/*
 * A client whose prompts are all cached is admitted at no charge while its
 * deficit is positive, so it fills the batch; the decode steps of what it
 * runs are charged after.  The paper's U (one decode step) cannot bound
 * that; U with the batch's tokens does.
 */
static void
test_cached_flood(void)
{
    double   b, paper;
    sim_t    sim;
    trace_t  tr;
    uint32_t t;

    trace_init(&tr, 2, 1, 4000, 2);
    tr.ngroups = 1;
    tr.prefix[0] = 100;

    for (t = 0; t < 3000; t++) {
        trace_add(&tr, t, 0, 0, 100, 200);

        if (t % 20 == 0) {
            trace_add(&tr, t, 1, NOGROUP, 100, 200);
        }
    }

    if (sim_run(&sim, &tr, FG_POLICY_DLPM, 256, 128, FG_ROUTE_PREFIX) == 0) {
        b = dlpm_bound(&tr, 256);
        paper = paper_bound(&tr, 256);

        ok(sim.ck.worst > paper && sim.ck.worst <= b, "cached flood, dlpm: "
           "beyond the paper's 2 (U + Q) with U one decode step (%.0f > "
           "%.0f), within it with U the batch's tokens (%.0f)",
           sim.ck.worst, paper, b);
    }

    free(tr.spec);
}


/*
 * Locality matters: four clients over eight groups with long prefixes,
 * each drawing from two; the engine caches two groups.  vtc serves them in
 * turn and keeps evicting; dlpm and lpm keep serving what is cached.
 */
static void
test_hits(void)
{
    int          i;
    double       rate[3];
    sim_t        sim;
    trace_t      tr;
    uint32_t     t, c;
    fg_rand_t    rng;
    fg_policy_e  p[3] = { FG_POLICY_VTC, FG_POLICY_DLPM, FG_POLICY_LPM };

    trace_init(&tr, 4, 1, 3000, 2);
    tr.ngroups = 8;

    for (i = 0; i < 8; i++) {
        tr.prefix[i] = 400;
    }

    fg_rand_seed(&rng, 7);

    for (t = 0; t < 2000; t += 3) {
        c = fg_rand_range(&rng, 0, 3);
        trace_add(&tr, t, c, 2 * c + fg_rand_range(&rng, 0, 1),
                  400 + fg_rand_range(&rng, 1, 100), 20);
    }

    for (i = 0; i < 3; i++) {
        rate[i] = -1;

        if (sim_run(&sim, &tr, p[i], 2048, 128, FG_ROUTE_PREFIX) == 0) {
            rate[i] = (double) sim.hit / sim.query;
        }
    }

    ok(rate[1] > 2 * rate[0] && rate[2] >= rate[1],
       "shared prefixes: hit rate vtc %.2f, dlpm %.2f, lpm %.2f",
       rate[0], rate[1], rate[2]);

    free(tr.spec);
}


int
main(void)
{
    test_random("dlpm, 1 engine", FG_POLICY_DLPM, 1, 1, 400, 160001);
    test_random("dlpm, 2-4 engines", FG_POLICY_DLPM, 2, 4, 300, 160002);
    test_random("vtc, 2-4 engines", FG_POLICY_VTC, 2, 4, 200, 160003);
    test_attacks();
    test_cached_flood();
    test_hits();

    return done_testing();
}
