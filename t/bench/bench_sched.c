
/*
 * fairgate: throughput of the policy core's dispatch decisions.
 *
 * Each decision is what a serving loop does per admitted request: enqueue
 * one request, dispatch one, charge one output token to a running request
 * and finish the oldest running one.  Every client stays backlogged, so the
 * heap holds all of them.  Each case runs FG_BENCH_REPEAT times and the
 * median is reported, as a shared machine's timings swing between runs.
 * Prints one JSON line per policy and client count.
 *
 * lpm and dlpm (and vtc beside them, through the same call) dispatch with
 * fg_sched_dispatch_to() to one engine whose match is a cheap function of
 * the request, so that what is timed is the core's own work: window
 * candidates (128 by default) looked at per decision.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fg_bench.h"
#include "fg_rand.h"
#include "fg_sched.h"


#define FG_BENCH_RUNNING  64
#define FG_BENCH_GROUPS   17
#define FG_BENCH_DEPTH    2
#define FG_BENCH_REPEAT   5


/* a request's cached prefix: one of a few groups' lengths, or nothing */
static uint32_t
fg_bench_match(fg_request_t *r, uint32_t e, void *data)
{
    (void) e;
    (void) data;

    return (uint32_t) (r->cookie % FG_BENCH_GROUPS) * 32;
}


static fg_request_t *
fg_bench_request(fg_request_t *r, fg_rand_t *rng)
{
    fg_request_init(r, 64 + fg_rand_next(rng) % 512, 256);
    r->cookie = fg_rand_next(rng);

    return r;
}


/*
 * Returns the decisions per second of one run, or -1; engines NULL:
 * fg_sched_dispatch() as the zone calls it for one engine.
 */
static double
fg_bench_run(fg_policy_e policy, uint32_t nclients, uint64_t decisions,
    const fg_sched_engines_t *engines)
{
    double            start, elapsed;
    uint32_t          i, nreqs, free_top, *free_list;
    uint64_t          d;
    fg_rand_t         rng;
    fg_client_t      *clients;
    fg_request_t     *reqs, *r, *n, *running[FG_BENCH_RUNNING];
    fg_sched_t       *s;
    fg_sched_conf_t   conf;

    fg_sched_conf_init(&conf, nclients);
    conf.policy = policy;

    s = fg_sched_create(&conf, &fg_sched_heap);
    nreqs = nclients * FG_BENCH_DEPTH + FG_BENCH_RUNNING + 1;
    clients = calloc(nclients, sizeof(fg_client_t));
    reqs = calloc(nreqs, sizeof(fg_request_t));
    free_list = calloc(nreqs, sizeof(uint32_t));

    if (s == NULL || clients == NULL || reqs == NULL || free_list == NULL) {
        fprintf(stderr, "bench_sched: out of memory\n");
        return -1;
    }

    for (i = 0; i < nreqs; i++) {
        free_list[i] = i;
    }

    free_top = nreqs;
    fg_rand_seed(&rng, 1);

    for (i = 0; i < nclients; i++) {
        /* weights vary so counters spread and the heap really works */
        fg_client_init(s, &clients[i], i, 1.0 + (i % 4));
    }

    for (i = 0; i < nclients * FG_BENCH_DEPTH; i++) {
        r = fg_bench_request(&reqs[free_list[--free_top]], &rng);
        fg_sched_enqueue(s, &clients[i % nclients], r, 0.0);
    }

    memset(running, 0, sizeof(running));

    start = fg_bench_now();

    for (d = 0; d < decisions; d++) {
        /* finish the oldest running request and recycle it */
        r = running[d % FG_BENCH_RUNNING];
        if (r != NULL) {
            fg_sched_finish(s, r);
            free_list[free_top++] = (uint32_t) (r - reqs);
        }

        r = engines ? fg_sched_dispatch_to(s, engines)
                    : fg_sched_dispatch(s, NULL, NULL);
        running[d % FG_BENCH_RUNNING] = r;

        /* the served client gets a new request: everyone stays backlogged */
        n = fg_bench_request(&reqs[free_list[--free_top]], &rng);
        fg_sched_enqueue(s, r->client, n, (double) d);

        /* one decode token for a running request */
        r = running[fg_rand_next(&rng) % FG_BENCH_RUNNING];
        if (r != NULL) {
            fg_sched_charge(s, r, 1);
        }
    }

    elapsed = fg_bench_now() - start;

    fg_sched_destroy(s, &fg_sched_heap);
    free(clients);
    free(reqs);
    free(free_list);

    return decisions / elapsed;
}


/* runs one case FG_BENCH_REPEAT times and prints its line; -1 on error */
static int
fg_bench_case(fg_policy_e policy, uint32_t nclients, uint64_t decisions,
    const fg_sched_engines_t *engines)
{
    double    rate[FG_BENCH_REPEAT];
    unsigned  k;

    for (k = 0; k < FG_BENCH_REPEAT; k++) {
        rate[k] = fg_bench_run(policy, nclients, decisions, engines);
        if (rate[k] < 0) {
            return -1;
        }
    }

    qsort(rate, FG_BENCH_REPEAT, sizeof(double), fg_bench_cmp);

    printf("{\"policy\": \"%s\", \"call\": \"%s\", "
           "\"backlogged_clients\": %u, \"decisions\": %llu, \"runs\": %d, "
           "\"decisions_per_second_median\": %.0f, "
           "\"min\": %.0f, \"max\": %.0f}\n",
           fg_sched_policy_name(policy),
           engines ? "dispatch_to" : "dispatch", nclients,
           (unsigned long long) decisions, FG_BENCH_REPEAT,
           rate[FG_BENCH_REPEAT / 2], rate[0], rate[FG_BENCH_REPEAT - 1]);
    fflush(stdout);

    return 0;
}


int
main(int argc, char **argv)
{
    unsigned            i, p;
    uint32_t            sizes[] = { 10, 1000, 100000 };
    uint64_t            decisions;
    fg_policy_e         policies[] = { FG_POLICY_VTC, FG_POLICY_FCFS };
    fg_policy_e         local[] = { FG_POLICY_VTC, FG_POLICY_LPM,
                                    FG_POLICY_DLPM };
    fg_sched_engines_t  one = { 1, fg_bench_match, NULL, NULL, NULL };

    decisions = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;

    for (p = 0; p < 2; p++) {
        for (i = 0; i < 3; i++) {
            if (fg_bench_case(policies[p], sizes[i], decisions, NULL) != 0) {
                return 1;
            }
        }
    }

    /* side by side: each size, the three policies in turn */
    for (i = 0; i < 2; i++) {
        for (p = 0; p < 3; p++) {
            if (fg_bench_case(local[p], sizes[i], decisions / 10, &one) != 0)
            {
                return 1;
            }
        }
    }

    return 0;
}
