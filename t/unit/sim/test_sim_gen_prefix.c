
/*
 * fairgate: tests of the generator's shared-prefix suites: shared-prefix's
 * groups x prompts (each group's prompts once, its prefix and lengths),
 * shuffled and dealt to the clients in turn, poisson over the duration;
 * s1's attacker at ten times a client's rate on the same groups, s2's at
 * a client's rate on groups of its own four times as long; the options;
 * the same seed the same trace, and the base the same in all three.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_test_sim.h"
#include "fg_sim_gen.h"


static void
test_shared_prefix(void)
{
    int                  shape, runs;
    char                 name[16];
    size_t               i, per[4], group[8];
    uint32_t             g;
    fg_sim_trace_t       tr;
    fg_sim_gen_conf_t    conf;
    const fg_sim_req_t  *r;

    fg_sim_gen_conf_init(&conf);
    conf.seed = 3;

    if (fg_test_sim_gen(&tr, "shared-prefix", &conf) != 0) {
        ok(0, "shared-prefix generates");
        return;
    }

    is_int(tr.n, 8 * 64, "8 groups x 64 prompts");
    is_int(tr.nclients, 4, "over 4 clients");

    memset(per, 0, sizeof(per));
    memset(group, 0, sizeof(group));
    shape = 1;
    runs = 0;

    for (i = 0; i < tr.n; i++) {
        r = &tr.reqs[i];

        if (r->prefix == 0
            || sscanf(fg_sim_trace_str_get(&tr, r->prefix), "g%u", &g) != 1
            || g >= 8 || r->prefix_tokens != 2048
            || r->input_tokens != 2048 + 128 || r->output_tokens != 256
            || r->max_output_tokens != 256 || r->system_tokens != 0)
        {
            shape = 0;
            break;
        }

        group[g]++;
        per[r->client]++;

        /* the client of the i-th arrival is i mod 4: dealt in turn */
        snprintf(name, sizeof(name), "client%zu", i % 4);
        if (strcmp(tr.clients[r->client].name, name) != 0) {
            shape = 0;
        }

        /* shuffled: the next request of the same group is chance */
        if (i > 0 && r->prefix == tr.reqs[i - 1].prefix) {
            runs++;
        }
    }

    ok(shape, "each request: a group's prefix of 2048 tokens, a question "
       "of 128, an answer of 256, dealt to the clients in turn");

    for (g = 0; g < 8 && group[g] == 64; g++) {
        /* void */
    }

    ok(g == 8, "each group's 64 prompts once");
    ok(per[0] == 128 && per[1] == 128 && per[2] == 128 && per[3] == 128,
       "128 a client");

    /* 511 pairs, each alike with chance 1/8: 64 expected, sd 7.5 */
    ok(runs > 64 - 5 * 7.5 && runs < 64 + 5 * 7.5, "shuffled: %d of 511 "
       "neighbours share their group (64 expected by chance)", runs);

    /* poisson: 512 gaps of mean 600 / 512, the last near 600 */
    ok(fabs(tr.reqs[tr.n - 1].t - 600.0) < 5 * 600.0 / sqrt(512.0),
       "the last of 512 arrivals at %.1f s, near 600", tr.reqs[tr.n - 1].t);

    fg_sim_trace_free(&tr);
}


/* request i's prefix if the attacker sent it (counted), else NULL */
static const char *
attack(const fg_sim_trace_t *tr, size_t i, size_t *attacks)
{
    const fg_sim_req_t  *r;

    r = &tr->reqs[i];

    if (strcmp(tr->clients[r->client].name, "attacker") != 0) {
        return NULL;
    }

    (*attacks)++;

    return fg_sim_trace_str_get(tr, r->prefix);
}


/* the attacker's requests: how many, their groups and prefix */
static void
test_attacks(void)
{
    int                  shape, base_same;
    size_t               i, j, n, attacks;
    double               want, sd;
    fg_sim_trace_t       tr, base;
    fg_sim_gen_conf_t    conf;
    const fg_sim_req_t  *r;
    const char          *p;

    fg_sim_gen_conf_init(&conf);
    conf.seed = 4;

    if (fg_test_sim_gen(&base, "shared-prefix", &conf) != 0
        || fg_test_sim_gen(&tr, "s1", &conf) != 0)
    {
        ok(0, "s1 generates");
        return;
    }

    /* a client's mean rate is 128 / 600 s: ten times that over 600 s */
    attacks = 0;
    shape = 1;

    for (i = 0; i < tr.n; i++) {
        p = attack(&tr, i, &attacks);
        r = &tr.reqs[i];
        shape &= p == NULL || (p[0] == 'g' && r->prefix_tokens == 2048
                               && r->input_tokens == 2176);
    }

    want = 1280;
    sd = sqrt(want);
    ok(fabs(attacks - want) < 5 * sd, "s1: the attacker sends %zu "
       "requests, ten times a client's 128 (within 5 sd)", attacks);
    ok(shape, "s1: of the shared groups, with their prefix");

    /* the base is shared-prefix's: the clients' requests, in order */
    base_same = tr.n == base.n + attacks;

    for (i = 0, j = 0; base_same && i < tr.n; i++) {
        r = &tr.reqs[i];

        if (strcmp(tr.clients[r->client].name, "attacker") == 0) {
            continue;
        }

        n = j++;
        base_same = r->t == base.reqs[n].t
                    && strcmp(fg_sim_trace_str_get(&tr, r->prefix),
                              fg_sim_trace_str_get(&base,
                                                   base.reqs[n].prefix))
                       == 0;
    }

    ok(base_same, "s1: the other clients' requests are shared-prefix's");

    fg_sim_trace_free(&tr);

    conf.attack_prefix = 3;
    conf.attack_groups = 2;

    if (fg_test_sim_gen(&tr, "s2", &conf) != 0) {
        ok(0, "s2 generates");
        fg_sim_trace_free(&base);
        return;
    }

    attacks = 0;
    shape = 1;
    n = 0;

    for (i = 0; i < tr.n; i++) {
        p = attack(&tr, i, &attacks);

        if (p != NULL) {
            r = &tr.reqs[i];
            n += strcmp(p, "attacker-g1") == 0;
            shape &= (strcmp(p, "attacker-g0") == 0
                      || strcmp(p, "attacker-g1") == 0)
                     && r->prefix_tokens == 6144
                     && r->input_tokens == 6144 + 128;
        }
    }

    ok(fabs(attacks - 128.0) < 5 * sqrt(128.0), "s2: the attacker sends "
       "%zu requests, a client's 128 (within 5 sd)", attacks);
    ok(shape && n > 0 && n < attacks, "s2: of its own 2 groups (%zu of "
       "the second), --attack-prefix 3 times as long", n);
    ok(tr.n == base.n + attacks, "s2: and the shared-prefix trace beside");

    fg_sim_trace_free(&tr);
    fg_sim_trace_free(&base);
}


static void
test_options(void)
{
    int                 same;
    char                err[256];
    size_t              i;
    fg_sim_trace_t      a, b;
    fg_sim_gen_conf_t   conf;

    fg_sim_gen_conf_init(&conf);
    conf.groups = 3;
    conf.prompts = 5;
    conf.system_tokens = 100;
    conf.question_tokens = 7;
    conf.output_tokens = 9;
    conf.clients = 2;
    conf.rate_scale = 2;

    if (fg_test_sim_gen(&a, "shared-prefix", &conf) != 0
        || fg_test_sim_gen(&b, "shared-prefix", &conf) != 0)
    {
        ok(0, "shared-prefix generates with options");
        return;
    }

    ok(a.n == 15 && a.nclients == 2 && a.reqs[0].input_tokens == 107
       && a.reqs[0].prefix_tokens == 100 && a.reqs[0].output_tokens == 9,
       "groups, prompts, lengths and clients as asked");

    same = a.n == b.n;

    for (i = 0; same && i < a.n; i++) {
        same = memcmp(&a.reqs[i], &b.reqs[i], sizeof(fg_sim_req_t)) == 0;
    }

    ok(same, "the same seed gives the same trace");

    fg_sim_trace_free(&a);
    fg_sim_trace_free(&b);

    fg_sim_gen_conf_init(&conf);
    conf.rate_scale = 2;

    if (fg_test_sim_gen(&a, "shared-prefix", &conf) == 0) {
        ok(fabs(a.reqs[a.n - 1].t - 300.0) < 5 * 300.0 / sqrt(512.0),
           "rate scale 2: the 512 arrivals over about 300 s (%.1f)",
           a.reqs[a.n - 1].t);
        fg_sim_trace_free(&a);
    }

    conf.groups = 3;
    conf.prompts = 5;
    conf.question_tokens = 7;

    conf.system_tokens = 0;

    if (fg_test_sim_gen(&a, "shared-prefix", &conf) == 0) {
        ok(a.reqs[0].prefix == 0 && a.reqs[0].input_tokens == 7,
           "no system prompt: plain questions, no prefix");
        fg_sim_trace_free(&a);
    }

    conf.groups = 0;
    fg_sim_trace_init(&a);
    ok(fg_sim_gen_conf(&a, "shared-prefix", &conf, err, sizeof(err)) != 0
       && strstr(err, "groups, prompts, clients") != NULL,
       "no groups is refused");
    fg_sim_trace_free(&a);
}


int
main(void)
{
    test_shared_prefix();
    test_attacks();
    test_options();

    return done_testing();
}
