
/*
 * fairgate: the multi-model suite of the generator (fg_sim_gen.h), as
 * MuxServe's evaluation builds its workload: models m0 .. m(M-1), model
 * i's rate proportional to (i + 1)^-alpha, poisson arrivals.
 */


#include <math.h>
#include <stdio.h>

#include "fg_sim_gen.h"
#include "fg_rand.h"


/* the seed's streams: one a model */
#define FG_SIM_GEN_MUX_STREAM  0x6d757876ULL


double
fg_sim_gen_mux_rate(const fg_sim_gen_conf_t *conf, uint32_t i)
{
    double    sum;
    uint32_t  k;

    sum = 0.0;

    for (k = 0; k < conf->models_n; k++) {
        sum += pow(k + 1.0, -conf->alpha);
    }

    return FG_SIM_GEN_MUX_RATE * conf->rate_scale
           * pow(i + 1.0, -conf->alpha) / sum;
}


int
fg_sim_gen_multi_model(fg_sim_trace_t *tr, const fg_sim_gen_conf_t *conf,
    double duration)
{
    char           name[32];
    double         t, rate;
    int64_t        client, model;
    uint32_t       i, in, out;
    fg_rand_t      rng;

    for (i = 0; i < conf->models_n; i++) {
        snprintf(name, sizeof(name), "m%u", i);

        /* one tenant a model: the policy core sees them as clients */
        client = fg_sim_trace_client(tr, name);
        model = fg_sim_trace_str(tr, name);
        if (client < 0 || model < 0) {
            return -1;
        }

        fg_rand_stream(&rng, conf->seed, FG_SIM_GEN_MUX_STREAM + i);
        rate = fg_sim_gen_mux_rate(conf, i);
        t = -log(1.0 - fg_rand_double(&rng)) / rate;

        while (t < duration) {
            in = (uint32_t) fg_rand_range(&rng, FG_SIM_GEN_MUX_MIN,
                                          FG_SIM_GEN_MUX_MAX);
            out = (uint32_t) fg_rand_range(&rng, FG_SIM_GEN_MUX_MIN,
                                           FG_SIM_GEN_MUX_MAX);

            if (fg_sim_trace_add(tr, t, (uint32_t) client, in, out, out)
                != 0)
            {
                return -1;
            }

            tr->reqs[tr->n - 1].model = (uint32_t) model;
            t += -log(1.0 - fg_rand_double(&rng)) / rate;
        }
    }

    return 0;
}
