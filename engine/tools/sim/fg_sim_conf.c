
/*
 * fairgate: a simulation's configuration's defaults (fg_sim_conf.h).
 */


#include <string.h>

#include "fg_sched_andes.h"
#include "fg_sim_conf.h"


void
fg_sim_conf_init(fg_sim_conf_t *conf)
{
    fg_sched_conf_t  sconf;

    memset(conf, 0, sizeof(fg_sim_conf_t));

    conf->policy = FG_POLICY_VTC;
    fg_cost_linear(&conf->cost, 1.0, 2.0);
    conf->kv_tokens = 10000;
    conf->merge_every = 10;
    conf->predict_error = -1.0;
    conf->seed = 1;
    conf->oit_threshold = 0.9;
    conf->oit_window = 60.0;
    conf->oit_idle_timeout = 60.0;

    /* lpm, dlpm and the route: the policy core's defaults */
    fg_sched_conf_init(&sconf, 1);
    conf->quantum = sconf.quantum;
    conf->window = sconf.window;
    conf->route = sconf.route;
    conf->engines = 1;
    conf->qoe_ttft = FG_ANDES_TTFT;
    conf->qoe_speed = FG_ANDES_SPEED;
}
