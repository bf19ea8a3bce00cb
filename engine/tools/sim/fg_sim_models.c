
/*
 * fairgate: the simulator's models file, each request's model, the SLO
 * and the per-model figures (fg_sim_models.h).
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_sim_models.h"


/* shapes far above any model's, so that units stay far in range */
#define FG_SIM_MODEL_MAX_DIM  65536


static int
fg_sim_model_dim(json_t *obj, const char *key, uint32_t *v, const char *path,
    size_t i, char *err, size_t size)
{
    json_t      *val;
    json_int_t   n;

    val = json_object_get(obj, key);
    n = json_is_integer(val) ? json_integer_value(val) : 0;

    if (n < 1 || n > FG_SIM_MODEL_MAX_DIM) {
        fg_sim_error(err, size, "%s: model %zu: \"%s\" must be an integer "
                     "in [1, %d]", path, i, key, FG_SIM_MODEL_MAX_DIM);
        return -1;
    }

    *v = (uint32_t) n;

    return 0;
}


static int
fg_sim_model_read(fg_sim_models_t *ms, json_t *obj, const char *path,
    size_t i, char *err, size_t size)
{
    char             serr[256];
    json_t          *name, *engine;
    uint32_t         k;
    fg_sim_model_t  *m;

    m = &ms->m[i];
    name = json_object_get(obj, "name");
    engine = json_object_get(obj, "engine");

    if (!json_is_object(obj) || !json_is_string(name)
        || json_string_length(name) == 0 || !json_is_string(engine))
    {
        fg_sim_error(err, size, "%s: model %zu: an object with \"name\" "
                     "and \"engine\" (strings) is wanted", path, i);
        return -1;
    }

    for (k = 0; k < i; k++) {
        if (strcmp(ms->m[k].name, json_string_value(name)) == 0) {
            fg_sim_error(err, size, "%s: model %zu: \"%s\" named twice",
                         path, i, ms->m[k].name);
            return -1;
        }
    }

    if (fg_sim_model_dim(obj, "layers", &m->layers, path, i, err, size)
        || fg_sim_model_dim(obj, "kv_heads", &m->kv_heads, path, i, err,
                            size)
        || fg_sim_model_dim(obj, "head_dim", &m->head_dim, path, i, err,
                            size))
    {
        return -1;
    }

    m->unit = 2 * m->layers * m->kv_heads;
    m->step = fg_step_model_create(json_string_value(engine), serr,
                                   sizeof(serr));
    if (m->step == NULL) {
        fg_sim_error(err, size, "%s: model %zu: \"engine\": %s", path, i,
                     serr);
        return -1;
    }

    m->name = strdup(json_string_value(name));
    ms->n = (uint32_t) i + 1;

    if (m->name == NULL) {
        fg_sim_error(err, size, "out of memory");
        return -1;
    }

    return 0;
}


int
fg_sim_models_read(fg_sim_models_t *ms, const char *path, char *err,
    size_t size)
{
    size_t        i;
    json_t       *root;
    json_error_t  jerr;

    memset(ms, 0, sizeof(fg_sim_models_t));

    root = json_load_file(path, 0, &jerr);
    if (root == NULL) {
        if (jerr.line > 0) {
            fg_sim_error(err, size, "%s: %s (line %d)", path, jerr.text,
                         jerr.line);

        } else {
            fg_sim_error(err, size, "%s: %s", path, jerr.text);
        }

        return -1;
    }

    if (!json_is_array(root) || json_array_size(root) == 0
        || json_array_size(root) > FG_MUX_MAX_MODELS)
    {
        fg_sim_error(err, size, "%s: an array of 1 to %d models is wanted",
                     path, FG_MUX_MAX_MODELS);
        json_decref(root);
        return -1;
    }

    for (i = 0; i < json_array_size(root); i++) {
        if (fg_sim_model_read(ms, json_array_get(root, i), path, i, err,
                              size)
            != 0)
        {
            json_decref(root);
            fg_sim_models_free(ms);
            return -1;
        }
    }

    json_decref(root);

    return 0;
}


void
fg_sim_models_free(fg_sim_models_t *ms)
{
    uint32_t  i;

    for (i = 0; i < FG_MUX_MAX_MODELS; i++) {
        free(ms->m[i].name);

        if (ms->m[i].step != NULL) {
            fg_step_model_destroy(ms->m[i].step);
        }
    }

    memset(ms, 0, sizeof(fg_sim_models_t));
}


uint32_t
fg_sim_models_max_unit(const fg_sim_models_t *ms)
{
    uint32_t  i, u;

    u = 0;

    for (i = 0; i < ms->n; i++) {
        u = ms->m[i].unit > u ? ms->m[i].unit : u;
    }

    return u;
}


int
fg_sim_models_map(const fg_sim_models_t *ms, const fg_sim_trace_t *tr,
    uint32_t *map, char *err, size_t size)
{
    size_t       id;
    uint32_t     i;
    const char  *name;

    for (id = 0; id < tr->n; id++) {
        map[id] = 0;

        if (tr->reqs[id].model == 0) {
            continue;
        }

        name = fg_sim_trace_str_get(tr, tr->reqs[id].model);

        for (i = 0; i < ms->n && strcmp(ms->m[i].name, name) != 0; i++) {
            /* void */
        }

        if (i == ms->n) {
            fg_sim_error(err, size, "request %zu: model \"%s\" is not in "
                         "the models file", id, name);
            return -1;
        }

        map[id] = i;
    }

    return 0;
}


uint64_t
fg_sim_models_need(const fg_sim_model_t *m, const fg_sim_req_t *r)
{
    uint64_t  tokens;

    tokens = (uint64_t) r->input_tokens + r->max_output_tokens;

    return (tokens + FG_SIM_MUX_BLOCK - 1) / FG_SIM_MUX_BLOCK * m->unit;
}


double
fg_sim_models_alone(const fg_sim_model_t *m, const fg_sim_req_t *r)
{
    double  t;

    /* the prefill yields the first token, each decode step one more */
    t = fg_step_model_prefill(m->step, r->input_tokens)
        + fg_step_model_step(m->step);

    if (r->output_tokens > 1) {
        t += (r->output_tokens - 1)
             * (fg_step_model_decode(m->step, r->input_tokens,
                                     r->output_tokens)
                + fg_step_model_step(m->step));
    }

    return t;
}


typedef struct {
    uint64_t  requests;
    uint64_t  served;
    uint64_t  slo;
    uint64_t  in_time;          /* served by the last arrival */
    uint64_t  tokens;           /* of those */
} fg_sim_model_sum_t;


static json_t *
fg_sim_model_entry(const char *name, const fg_sim_model_sum_t *s,
    double span)
{
    double  r;

    r = s->requests ? (double) s->requests : 1.0;

    return json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:f}",
                     "model", name,
                     "requests", (json_int_t) s->requests,
                     "served", (json_int_t) s->served,
                     "tokens_per_s", span > 0 ? s->tokens / span : 0.0,
                     "requests_per_s", span > 0 ? s->in_time / span : 0.0,
                     "slo_attainment", s->slo / r,
                     "served_share", s->in_time / r);
}


json_t *
fg_sim_models_json(const fg_sim_models_t *ms, const fg_sim_trace_t *tr,
    const fg_sim_result_t *results)
{
    double               t0, t1, lat, span;
    size_t               id;
    json_t              *root, *list;
    uint32_t             i, *map;
    fg_sim_model_sum_t   sum[FG_MUX_MAX_MODELS + 1], *s;

    map = malloc((tr->n ? tr->n : 1) * sizeof(uint32_t));
    if (map == NULL) {
        return NULL;
    }

    /* a model not in the file counts as the first: the run refused it */
    if (fg_sim_models_map(ms, tr, map, NULL, 0) != 0) {
        memset(map, 0, (tr->n ? tr->n : 1) * sizeof(uint32_t));
    }

    memset(sum, 0, sizeof(sum));
    t0 = tr->n ? tr->reqs[0].t : 0.0;
    t1 = t0;

    for (id = 0; id < tr->n; id++) {
        t0 = tr->reqs[id].t < t0 ? tr->reqs[id].t : t0;
        t1 = tr->reqs[id].t > t1 ? tr->reqs[id].t : t1;
    }

    for (id = 0; id < tr->n; id++) {
        s = &sum[map[id]];
        s->requests++;

        if (results[id].status != FG_SIM_OK) {
            continue;
        }

        lat = results[id].finish - tr->reqs[id].t;
        s->served++;

        /* a steady state's: what was served while requests came */
        if (results[id].finish <= t1) {
            s->in_time++;
            s->tokens += tr->reqs[id].output_tokens;
        }

        s->slo += lat <= FG_SIM_SLO_SCALE
                         * fg_sim_models_alone(&ms->m[map[id]],
                                               &tr->reqs[id]) + 1e-9;
    }

    free(map);

    span = t1 - t0;
    root = json_object();
    list = json_array();

    for (i = 0; i < ms->n; i++) {
        s = &sum[FG_MUX_MAX_MODELS];
        s->requests += sum[i].requests;
        s->served += sum[i].served;
        s->slo += sum[i].slo;
        s->in_time += sum[i].in_time;
        s->tokens += sum[i].tokens;
        json_array_append_new(list, fg_sim_model_entry(ms->m[i].name,
                                                       &sum[i], span));
    }

    json_object_set_new(root, "models", list);
    json_object_set_new(root, "all",
                        fg_sim_model_entry("all", &sum[FG_MUX_MAX_MODELS],
                                           span));
    json_object_set_new(root, "slo_scale", json_real(FG_SIM_SLO_SCALE));

    return root;
}


char *
fg_sim_models_report(char *text, const fg_sim_models_t *ms,
    const fg_sim_trace_t *tr, const fg_sim_result_t *results)
{
    char          *out;
    json_t        *root, *add;
    json_error_t   jerr;

    root = json_loads(text, 0, &jerr);
    free(text);

    add = fg_sim_models_json(ms, tr, results);

    if (root == NULL || add == NULL || json_object_update(root, add) != 0) {
        json_decref(root);
        json_decref(add);
        return NULL;
    }

    out = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));

    json_decref(root);
    json_decref(add);

    return out;
}


void
fg_sim_mux_notes(const fg_sim_models_t *ms, const fg_sim_mux_stats_t *st)
{
    uint32_t  i;

    fprintf(stderr, "fairgate-sim: pool %" PRIu64 " head blocks, %u "
            "adaptations\n", st->pool, st->adaptations);

    for (i = 0; i < ms->n; i++) {
        fprintf(stderr, "fairgate-sim: model %s: unit %u, quota %" PRIu64
                " at first, %" PRIu64 " to %" PRIu64 ", %" PRIu64
                " at the end\n", ms->m[i].name, ms->m[i].unit,
                st->quota0[i], st->quota_min[i], st->quota_max[i],
                st->quota[i]);
    }
}
