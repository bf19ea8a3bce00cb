
/*
 * fairgate: the synthetic traces of the VTC paper's evaluation.
 *
 * Suites (ALGORITHMS.md), client i named "client<i>":
 *
 *   overload              1.5, 3 req/s; 256/256; 360 s
 *   overload-multi        0.4 x3, 0.6 x5; 256/256; 360 s
 *   overload-weighted     0.8, 0.8, 1.2, 1.6, weights 1..4; 256/256; 360 s
 *   proportional          0.25, 0.5, 1.5; 256/256; 600 s
 *   on_off_less           0.5 (on/off), 2; 256/256; 600 s
 *   on_off_overload       2 (on/off), 3; 256/256; 600 s
 *   poisson_short_long    8 at 64/64, 1.5 at 256/256, poisson; 600 s
 *   poisson_short_long_2  8 at 512/32, 1.5 at 32/512, poisson; 600 s
 *   increase              0.5; 0.2 -> 2 ramp; 256/256; 600 s
 *   dist_shift            three phases of a third each: on/off (0.5, 2);
 *                         (1, 1); (0.5, 1.5); 256/256; 900 s
 *   bursts                Andes's cyclic bursts: 4 clients of 0.28 req/s
 *                         on average, poisson; input and output uniform
 *                         in [64, 512]; 1200 s, one cycle
 *   cyclic-burst          bursts' arrivals with Andes's QoE expectations
 *                         as in the authors' traces: "ttft_target" 1 s,
 *                         "tokens_per_s" 1 / 0.31 for 79% of requests,
 *                         else 1 / U(0.13, 0.19); a stream of its own
 *   multi-app             FairServe-like: apps with users, interactions of
 *                         several stages with system prompts; 600 s
 *   fairserve             FairServe's Table 4 apps, Table 2's interaction
 *                         sizes, three abusive users; 600 s
 *   shared-prefix         groups x prompts, each a group's system prompt
 *                         and a question of its own; 600 s
 *   s1, s2                DLPM's attacks on shared-prefix: one more
 *                         client, at a far higher rate (s1) or with far
 *                         longer prefixes (s2); 600 s
 *
 * bursts: each cycle (conf.cycle, default the whole duration) holds one
 * burst, conf.burst_fraction of it long (0.35) and centred in it, during
 * which every client sends conf.intensity (2) times its mean rate; outside
 * the burst the rate is lower so that the cycle's mean stays the mean
 * rate, (1 - intensity * fraction) / (1 - fraction) times it.  Andes's
 * defaults, from BurstGPT (three bursts an hour, 7 minutes each, twice the
 * rate): a 1200 s cycle is one of its 20-minute cycles.
 *
 * multi-app: four apps (docs/load.md has the table); per user, interactions
 * start as a poisson process; stage j of an interaction comes the app's gap
 * (times a uniform factor in [0.5, 1.5]) after stage j - 1; every request
 * names its user (also its client), app, interaction ("USER-N"), stage and
 * system_tokens (part of input_tokens).  chat-u0 is abusive: thirty times
 * the rate of the other chat users, which overloads the simulated A10G
 * (about 960 tokens/s asked for).
 *
 * fairserve: the apps of FairServe's Table 4, named after its ids: app14
 * (6370 input, 102 output tokens on average, system prompt 1600), app7
 * (14854, 74, 2000) and app12 (999, 32, 400), every count divided by 4 in
 * the trace (rounded) so that the longest prompts fit the simulated A10G's
 * KV pool of 10,000 tokens; the system prompt is the same in every request
 * of an app, the rest of the input and the output are uniform in [m / 2,
 * 3m / 2] around the mean m.  25, 13 and 41 users, each opening 0.012
 * interactions a second as a poisson process, but u0 of each app: 30, 10
 * and 20 times that.  An interaction's number of stages follows the
 * paper's Table 2 (1: 73.22%, 2-10: 26.09%, 11-20: 0.50%, 21-30: 0.11%,
 * uniform within a range, normalised; the 0.08% above 30 left out): 2.4
 * on average; stage j comes the app's gap (1.5, 2.1 and 1.1 s: the idle
 * engine's service time of a mean request plus 1 s of the agent's own
 * work, times a uniform factor in [0.5, 1.5]) after stage j - 1.  Normal
 * users ask for about 0.8 of what the simulated A10G serves, in Table 4's
 * proportions of requests, the abusive ones for as much again.
 *
 * shared-prefix: as SGLang's "generated shared prefix" benchmark builds
 * them, conf.groups (8) groups of conf.prompts (64) prompts; a prompt is
 * its group's system prompt of conf.system_tokens (2048; the trace's
 * "prefix" "g<k>" and "prefix_tokens") and a question of its own of
 * conf.question_tokens (128), answered in conf.output_tokens (256).  The
 * groups x prompts requests are shuffled, dealt to conf.clients (4)
 * clients in turn, and arrive as a poisson process over the duration
 * (divided by the rate scale): about 2.5 times what the simulated A10G
 * serves of them without a cache.
 *
 * s1, s2: the shared-prefix trace, and one more client, "attacker", a
 * poisson process over the same time.  s1: at conf.attack_rate (10) times
 * a client's mean rate, its prompts of the same groups (each a group at
 * random).  s2: at a client's rate, its prompts of conf.attack_groups (1)
 * groups of its own ("attacker-g<k>"), whose system prompts are
 * conf.attack_prefix (4) times as long: once one is cached, its requests
 * match longest.
 *
 * multi-model: MuxServe's workload (fg_sim_gen_mux.c): conf.models_n (4)
 * models "m0" .. , each a client of the same name sending its requests
 * (the trace's "model"), model i at a rate proportional to (i + 1)^-alpha
 * (conf.alpha, 1.3), poisson, FG_SIM_GEN_MUX_RATE (6) req/s in all times
 * the rate scale; input and output uniform in [64, 512] as bursts' (the
 * ShareGPT-like mix); 300 s.  Its models file:
 * engine/tools/sim/models-4.json.
 * Arrivals are uniform unless said poisson.  Uniform: evenly spaced at
 * 1 / rate from a random phase in [0, 1 / rate); a rate that changes (the
 * ramp) spaces arrivals evenly in the integral of the rate instead, so the
 * k-th arrival is where the expected count reaches phase + k.  Poisson:
 * exponential gaps of mean 1 / rate.  On/off: client 0 sends nothing when
 * int(t / 60) is odd.  A duration other than the suite's stretches ramps
 * and phases to it.  Each client draws from its own stream of the seed.
 */

#ifndef _FG_SIM_GEN_H_INCLUDED_
#define _FG_SIM_GEN_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_sim_trace.h"


typedef struct {
    uint64_t   seed;
    double     duration;           /* <= 0: the suite's */
    double     rate_scale;         /* every rate times this (1) */
    double     intensity;          /* bursts: burst rate / mean rate (2) */
    double     burst_fraction;     /* bursts: of each cycle (0.35) */
    double     cycle;              /* bursts: seconds, <= 0: duration */

    /* shared-prefix, s1, s2 */
    uint32_t   groups;             /* 8 */
    uint32_t   prompts;            /* a group's, 64 */
    uint32_t   system_tokens;      /* a group's prefix, 2048 */
    uint32_t   question_tokens;    /* 128 */
    uint32_t   output_tokens;      /* 256 */
    uint32_t   clients;            /* 4, the attacker aside */
    double     attack_rate;        /* s1: times a client's rate (10) */
    double     attack_prefix;      /* s2: times system_tokens (4) */
    uint32_t   attack_groups;      /* s2: the attacker's groups (1) */

    /* multi-model */
    uint32_t   models_n;           /* 4 */
    double     alpha;              /* 1.3 */
} fg_sim_gen_conf_t;


/* multi-model: requests/s of all models at rate scale 1; lengths */
#define FG_SIM_GEN_MUX_RATE  6.0
#define FG_SIM_GEN_MUX_MIN   64
#define FG_SIM_GEN_MUX_MAX   512


/* the name of suite i, NULL past the last */
const char *fg_sim_gen_suite(size_t i);

void fg_sim_gen_conf_init(fg_sim_gen_conf_t *conf);

/* fills an empty trace; 0 or -1 */
int fg_sim_gen_conf(fg_sim_trace_t *tr, const char *suite,
    const fg_sim_gen_conf_t *conf, char *err, size_t size);

/* the shared-prefix suites (fg_sim_gen_prefix.c): 0, or -1 out of memory */
int fg_sim_gen_prefix(fg_sim_trace_t *tr, const char *suite,
    const fg_sim_gen_conf_t *conf, double duration);

/* whether suite is one of them */
int fg_sim_gen_is_prefix(const char *suite);

/* the multi-model suite (fg_sim_gen_mux.c): 0, or -1 out of memory */
int fg_sim_gen_multi_model(fg_sim_trace_t *tr,
    const fg_sim_gen_conf_t *conf, double duration);

/* its model i's rate, requests/s */
double fg_sim_gen_mux_rate(const fg_sim_gen_conf_t *conf, uint32_t i);

/* the same with the defaults but seed and duration (<= 0: the suite's) */
int fg_sim_gen(fg_sim_trace_t *tr, const char *suite, uint64_t seed,
    double duration, char *err, size_t size);


#endif /* _FG_SIM_GEN_H_INCLUDED_ */
