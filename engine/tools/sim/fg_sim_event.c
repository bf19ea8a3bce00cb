
/*
 * fairgate: what the simulation's engines report of a request, whichever
 * engine serves it (fg_sim_engine.c, fg_sim_andes.c, fg_sim_mux.c) and
 * the loop too (fg_sim_run.c): its events to the caller's hook, and each
 * token it makes with the tallies and, at its last, its end.  Below the
 * engines, so that they report here rather than calling the loop back.
 */


#include "fg_sim_run_int.h"


void
fg_sim_emit(fg_sim_t *sim, fg_sim_event_e type, double time, size_t id)
{
    fg_sim_event_t  ev;

    if (sim->conf->hook == NULL) {
        return;
    }

    ev.type = type;
    ev.time = time;
    ev.id = id;
    ev.client = sim->trace->reqs[id].client;
    ev.clients = sim->clients;
    ev.nclients = sim->trace->nclients;

    sim->conf->hook(&ev, sim->conf->hook_data);
}


void
fg_sim_token(fg_sim_t *sim, fg_sim_kv_t *kv, fg_sim_request_t *sr)
{
    size_t               id;
    double               ttft, speed;
    uint32_t             in;
    fg_sim_client_t     *c;
    const fg_sim_req_t  *tr;

    id = (size_t) sr->core.cookie;
    tr = &sim->trace->reqs[id];
    c = &sim->clients[tr->client];

    sr->generated++;
    fg_qoe_token(&sr->qoe, sim->now);

    /* the reader has one more token to read, at its speed */
    sr->dry = (sim->now > sr->dry ? sim->now : sr->dry) + 1.0 / sr->speed;

    /* input as charged at admission: without what was cached */
    in = tr->input_tokens - sr->lease.cached;

    fg_sched_charge(sim->sched, &sr->core, 1);
    c->service += fg_cost_output(&sim->conf->cost, in, sr->generated - 1,
                                 sr->generated);

    fg_sim_emit(sim, FG_SIM_EV_TOKEN, sim->now, id);

    if (sr->generated < tr->output_tokens) {
        return;
    }

    fg_sched_finish(sim->sched, &sr->core);
    if (kv != NULL) {
        fg_sim_kv_finish(kv, tr, sr->generated, &sr->lease);
    }

    c->running--;

    if (sim->conf->oit && tr->interaction != 0) {
        fg_oit_spend(&sim->oit, tr->interaction,
                     (uint64_t) tr->input_tokens + tr->output_tokens,
                     sim->now);
        fg_oit_done(&sim->oit, tr->interaction, sr->core.stage, sim->now);
    }

    sim->results[id].status = FG_SIM_OK;
    sim->results[id].finish = sim->now;
    sim->decided++;

    if (sim->conf->engine_sched == FG_SIM_SCHED_ANDES) {
        sim->results[id].preemptions = sr->preemptions;
        sim->results[id].has_preemptions = 1;
    }

    if (fg_sim_req_expect(tr, &ttft, &speed)) {
        sim->results[id].qoe = fg_qoe_value(&sr->qoe);
        sim->results[id].has_qoe = 1;
    }

    fg_sim_stages_done(&sim->deps, id, sim->now, 1);

    fg_sim_emit(sim, FG_SIM_EV_FINISH, sim->now, id);
}
