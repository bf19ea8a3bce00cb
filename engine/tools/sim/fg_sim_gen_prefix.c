
/*
 * fairgate: the shared-prefix suites of the generator (fg_sim_gen.h):
 * shared-prefix, as SGLang's "generated shared prefix" benchmark builds
 * it, and DLPM's two attacks on it, s1 and s2.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_sim_gen.h"
#include "fg_rand.h"


/* the seed's streams: the base trace's, then the attacker's */
#define FG_SIM_GEN_PREFIX_BASE      0x73686172ULL
#define FG_SIM_GEN_PREFIX_ATTACKER  0x61747461ULL


int
fg_sim_gen_is_prefix(const char *suite)
{
    return strcmp(suite, "shared-prefix") == 0 || strcmp(suite, "s1") == 0
           || strcmp(suite, "s2") == 0;
}


/* a request of group g (named "NAME-g<g>", or "g<g>") with n prefix tokens */
static int
fg_sim_gen_prompt(fg_sim_trace_t *tr, double t, uint32_t client,
    const char *name, uint32_t g, uint32_t prefix,
    const fg_sim_gen_conf_t *conf)
{
    char           id[64];
    int64_t        s;
    fg_sim_req_t  *r;

    if (name != NULL) {
        snprintf(id, sizeof(id), "%s-g%u", name, g);

    } else {
        snprintf(id, sizeof(id), "g%u", g);
    }

    s = fg_sim_trace_str(tr, id);

    if (s < 0
        || fg_sim_trace_add(tr, t, client, prefix + conf->question_tokens,
                            conf->output_tokens, conf->output_tokens)
           != 0)
    {
        return -1;
    }

    r = &tr->reqs[tr->n - 1];

    /* a system prompt of no tokens is no prefix: plain questions */
    if (prefix > 0) {
        r->prefix = (uint32_t) s;
        r->prefix_tokens = prefix;
    }

    return 0;
}


/*
 * The groups x prompts requests, shuffled (Fisher-Yates), dealt to the
 * clients in turn, arriving as a poisson process of n / span a second.
 */
static int
fg_sim_gen_shared(fg_sim_trace_t *tr, const fg_sim_gen_conf_t *conf,
    fg_rand_t *rng, double span)
{
    char       name[32];
    double     t;
    size_t     i, j, n;
    uint32_t  *order, tmp;

    for (i = 0; i < conf->clients; i++) {
        snprintf(name, sizeof(name), "client%zu", i);

        if (fg_sim_trace_client(tr, name) != (int64_t) i) {
            return -1;
        }
    }

    n = (size_t) conf->groups * conf->prompts;

    order = malloc(n * sizeof(uint32_t));
    if (order == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        order[i] = (uint32_t) (i / conf->prompts);
    }

    for (i = n - 1; i > 0; i--) {
        j = (size_t) fg_rand_range(rng, 0, i);
        tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }

    t = 0.0;

    for (i = 0; i < n; i++) {
        /* 1 - u lies in (0, 1]: the logarithm is finite */
        t += -log(1.0 - fg_rand_double(rng)) * span / n;

        if (fg_sim_gen_prompt(tr, t, (uint32_t) (i % conf->clients), NULL,
                              order[i], conf->system_tokens, conf)
            != 0)
        {
            free(order);
            return -1;
        }
    }

    free(order);

    return 0;
}


/* s1, s2: the attacker's requests, a poisson process over [0, span) */
static int
fg_sim_gen_attacker(fg_sim_trace_t *tr, const char *suite,
    const fg_sim_gen_conf_t *conf, fg_rand_t *rng, double span)
{
    int       s1;
    double    t, rate;
    int64_t   client;
    uint32_t  g, prefix;

    client = fg_sim_trace_client(tr, "attacker");
    if (client < 0) {
        return -1;
    }

    s1 = strcmp(suite, "s1") == 0;

    /* a client's mean rate, times the attack's in s1 */
    rate = (double) conf->groups * conf->prompts / conf->clients / span;
    prefix = conf->system_tokens;

    if (s1) {
        rate *= conf->attack_rate;

    } else {
        prefix = (uint32_t) lround(conf->attack_prefix * prefix);
    }

    for (t = 0.0; /* void */; /* void */) {
        t += -log(1.0 - fg_rand_double(rng)) / rate;

        if (!(t < span)) {
            return 0;
        }

        g = (uint32_t) fg_rand_range(rng, 0, (s1 ? conf->groups
                                                  : conf->attack_groups) - 1);

        if (fg_sim_gen_prompt(tr, t, (uint32_t) client,
                              s1 ? NULL : "attacker", g, prefix, conf)
            != 0)
        {
            return -1;
        }
    }
}


int
fg_sim_gen_prefix(fg_sim_trace_t *tr, const char *suite,
    const fg_sim_gen_conf_t *conf, double duration)
{
    double     span;
    fg_rand_t  rng;

    span = duration / conf->rate_scale;

    fg_rand_stream(&rng, conf->seed, FG_SIM_GEN_PREFIX_BASE);

    if (fg_sim_gen_shared(tr, conf, &rng, span) != 0) {
        return -1;
    }

    if (strcmp(suite, "shared-prefix") == 0) {
        return 0;
    }

    /* a stream of its own: the base trace is shared-prefix's, whatever */
    fg_rand_stream(&rng, conf->seed, FG_SIM_GEN_PREFIX_ATTACKER);

    return fg_sim_gen_attacker(tr, suite, conf, &rng, span);
}
