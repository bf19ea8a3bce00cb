
/*
 * fairgate: the simulation loop.
 *
 * Replays a trace through the policy core (fg_sched) in front of a
 * simulated engine that follows the VTC paper's evaluation (section 5):
 *
 *   - a KV pool of kv_tokens; admission reserves input + max output
 *     tokens until the request finishes; a request whose reservation
 *     exceeds the whole pool can never run and is rejected on arrival;
 *   - new requests are merged into the running batch when it is empty or
 *     merge_every decode steps after the last merge: fg_sched_dispatch()
 *     admits them while the next one fits the free pool;
 *   - a merge runs the new requests' prefill, which yields their first
 *     token; each decode step yields one token for every running request;
 *     step times come from the step model (fg_step_model.h);
 *   - a request finishes when it has its output_tokens (fixed lengths);
 *   - with queue_timeout, requests that waited longer are cancelled;
 *   - an idle engine jumps to the next arrival.
 *
 * Each trace request's app, interaction, stage and system tokens go to
 * the core's request (wsc): one learning fg_app per trace app (no
 * expected lengths are configured), system tokens counted apart from
 * input.  A request continues its interaction when OIT says so, or
 * without OIT when an earlier request of it was queued.
 *
 * Dependent stages (fg_sim_stages.h), unless open_loop_stages: a request
 * of an interaction arrives at the later of its t and the outcome of the
 * last of its interaction's lower stages, and is skipped (FG_SIM_SKIPPED,
 * never enqueued) when one of those failed.
 *
 * Time is virtual.  Arrivals are enqueued in time order at their own
 * time, before what ends the step they arrive during: the tokens of a
 * step exist only at its end.
 *
 * The hook sees every event, in time order, with the per-client tallies
 * kept by the loop itself (not read from the core), so tests can watch
 * service and backlog over time.
 */

#ifndef _FG_SIM_RUN_H_INCLUDED_
#define _FG_SIM_RUN_H_INCLUDED_


#include <stddef.h>

#include "fg_sim_conf.h"
#include "fg_sim_trace.h"


/*
 * Runs a sorted trace (as fg_sim_trace_read() leaves it); results has
 * trace->n entries.  Returns 0, or -1 with a message in err.
 */
int fg_sim_run(const fg_sim_conf_t *conf, const fg_sim_trace_t *trace,
    fg_sim_result_t *results, char *err, size_t size);


#endif /* _FG_SIM_RUN_H_INCLUDED_ */
