
/*
 * fairgate: what the simulator's tests share: a step model from its
 * spec, or the test stops there with the reason; a configuration on such
 * a model; a trace of named clients; the hand-worked timelines of the
 * run and QoE tests; a request's expectations; a generated suite.
 */

#ifndef _FG_TEST_SIM_H_INCLUDED_
#define _FG_TEST_SIM_H_INCLUDED_


#include <stdarg.h>
#include <stdlib.h>

#include "fg_tap.h"
#include "fg_sim_gen.h"
#include "fg_sim_run.h"


static inline fg_step_model_t *
fg_test_sim_model(const char *spec)
{
    char              err[256];
    fg_step_model_t  *m;

    m = fg_step_model_create(spec, err, sizeof(err));
    if (m == NULL) {
        diag("%s", err);
        exit(1);
    }

    return m;
}


/* the defaults on the model of spec, with kv_tokens tokens (0: default) */
static inline void
fg_test_sim_conf(fg_sim_conf_t *conf, const char *spec, uint64_t kv_tokens)
{
    fg_sim_conf_init(conf);
    conf->model = fg_test_sim_model(spec);

    if (kv_tokens != 0) {
        conf->kv_tokens = kv_tokens;
    }
}


/* an empty trace with the clients named, in order; NULL ends the names */
static inline void
fg_test_sim_trace(fg_sim_trace_t *tr, const char *name, ...)
{
    va_list  ap;

    fg_sim_trace_init(tr);
    va_start(ap, name);

    while (name != NULL) {
        (void) fg_sim_trace_client(tr, name);
        name = va_arg(ap, const char *);
    }

    va_end(ap);
}


/*
 * The hand-worked timelines' start: prefill 0.01 s a token, decode 0.1 s a
 * running request, 1000 tokens of KV; and client a's one request at 1.0,
 * 10 in and 3 out, alone: its tokens at 1.1, 1.2 and 1.3
 */
static inline void
fg_test_sim_alone(fg_sim_conf_t *conf, fg_sim_trace_t *tr)
{
    fg_test_sim_conf(conf, "linear:0.01,0.1", 1000);
    fg_test_sim_trace(tr, "a", NULL);
    (void) fg_sim_trace_add(tr, 1.0, 0, 10, 3, 3);
}


/* the two at once: A at 0 (10 in, 30 out), B at 0.5 (10 in, 5 out) */
static inline void
fg_test_sim_pair(fg_sim_trace_t *tr)
{
    fg_test_sim_trace(tr, "a", "b", NULL);
    (void) fg_sim_trace_add(tr, 0.0, 0, 10, 30, 30);
    (void) fg_sim_trace_add(tr, 0.5, 1, 10, 5, 5);
}


/* what request i's reader expects: its first token and tokens a second */
static inline void
fg_test_sim_expect(fg_sim_trace_t *tr, size_t i, double ttft, double speed)
{
    tr->reqs[i].ttft_target = ttft;
    tr->reqs[i].tokens_per_s = speed;
}


/* a suite generated into tr, or -1 with the reason told */
static inline int
fg_test_sim_gen(fg_sim_trace_t *tr, const char *suite,
    const fg_sim_gen_conf_t *conf)
{
    char  err[256];

    fg_sim_trace_init(tr);

    if (fg_sim_gen_conf(tr, suite, conf, err, sizeof(err)) != 0) {
        diag("%s: %s", suite, err);
        return -1;
    }

    return 0;
}


#endif /* _FG_TEST_SIM_H_INCLUDED_ */
