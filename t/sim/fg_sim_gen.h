
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
 *
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


/* the name of suite i, NULL past the last */
const char *fg_sim_gen_suite(size_t i);

/* fills an empty trace; duration <= 0 keeps the suite's; 0 or -1 */
int fg_sim_gen(fg_sim_trace_t *tr, const char *suite, uint64_t seed,
    double duration, char *err, size_t size);


#endif /* _FG_SIM_GEN_H_INCLUDED_ */
