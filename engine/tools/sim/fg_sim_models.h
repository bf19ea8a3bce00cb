
/*
 * fairgate: several models on one simulated GPU (docs/multi-model.md):
 * the models file, each request's model, the SLO and the per-model
 * figures; the engine itself is fg_sim_mux.c, the decisions engine/mux/fg_mux.c.
 *
 * A models file is a JSON array, one object a model:
 *
 *     [{"name": "m0", "layers": 32, "kv_heads": 32, "head_dim": 128,
 *       "engine": "gpu:0.022,0.00014,0.0000018,0.000215"}, ...]
 *
 * name: what the trace's "model" says; layers, kv_heads, head_dim: its
 * shape (a token block of it takes unit = 2 x layers x kv_heads head
 * blocks of the pool; head_dim is read for the record: the pool's blocks
 * are of one head size, the models' as the paper's are); engine: its step
 * model, as --engine takes (fg_step_model.h).
 *
 * A request without "model" is the file's first model's.
 *
 * The SLO (the paper's evaluation): a request attains it when it is
 * served within FG_SIM_SLO_SCALE times its latency alone on an idle GPU,
 * its prefill and its output tokens each at its model's decode step at
 * batch 1.
 */

#ifndef _FG_SIM_MODELS_H_INCLUDED_
#define _FG_SIM_MODELS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "fg_mux.h"
#include "fg_step_model.h"
#include "fg_sim_trace.h"


#define FG_SIM_SLO_SCALE  5.0

/* tokens a token block holds: a request reserves whole ones */
#define FG_SIM_MUX_BLOCK  16


typedef struct {
    char              *name;
    uint32_t           layers;
    uint32_t           kv_heads;
    uint32_t           head_dim;
    uint32_t           unit;           /* head blocks a token block takes */
    fg_step_model_t   *step;
} fg_sim_model_t;


typedef struct fg_sim_models_s {
    fg_sim_model_t     m[FG_MUX_MAX_MODELS];
    uint32_t           n;
} fg_sim_models_t;


/* a run's read-out of the quotas (the caller's, fg_sim_conf_t) */
typedef struct fg_sim_mux_stats_s {
    uint32_t           adaptations;    /* that moved or confirmed quotas */
    uint64_t           pool;           /* head blocks */
    uint64_t           quota0[FG_MUX_MAX_MODELS];     /* initial */
    uint64_t           quota_min[FG_MUX_MAX_MODELS];
    uint64_t           quota_max[FG_MUX_MAX_MODELS];
    uint64_t           quota[FG_MUX_MAX_MODELS];      /* at the end */
} fg_sim_mux_stats_t;


/* 0, or -1 with "FILE: problem" in err */
int fg_sim_models_read(fg_sim_models_t *ms, const char *path, char *err,
    size_t size);
void fg_sim_models_free(fg_sim_models_t *ms);

/* the largest unit of the models */
uint32_t fg_sim_models_max_unit(const fg_sim_models_t *ms);

/*
 * Each request's model index into map (tr->n entries); -1 with "request
 * N: model \"x\" is not in the models file" in err.
 */
int fg_sim_models_map(const fg_sim_models_t *ms, const fg_sim_trace_t *tr,
    uint32_t *map, char *err, size_t size);

/* head blocks request r of model m reserves: input + max output tokens */
uint64_t fg_sim_models_need(const fg_sim_model_t *m, const fg_sim_req_t *r);

/* request r's latency alone on an idle GPU, model m's */
double fg_sim_models_alone(const fg_sim_model_t *m, const fg_sim_req_t *r);

/*
 * The run's per-model figures: for each model and for all, requests,
 * served (in all), output tokens/s and requests/s of the requests served
 * while requests came (from the first arrival to the last: a steady
 * state's throughput, which a backlog served after it does not stretch),
 * SLO attainment (of all its requests), and its share of its demand
 * served (served while requests came / requests); NULL out of memory.
 */
json_t *fg_sim_models_json(const fg_sim_models_t *ms,
    const fg_sim_trace_t *tr, const fg_sim_result_t *results);


/*
 * The run's JSON text (malloc) with the figures above and "slo_scale"
 * added; frees text; NULL out of memory.
 */
char *fg_sim_models_report(char *text, const fg_sim_models_t *ms,
    const fg_sim_trace_t *tr, const fg_sim_result_t *results);

/* the quotas' story on stderr: the pool, adaptations, each model's range */
void fg_sim_mux_notes(const fg_sim_models_t *ms,
    const fg_sim_mux_stats_t *st);


#endif /* _FG_SIM_MODELS_H_INCLUDED_ */
