
/*
 * fairgate: reading a results file (fg_sim_trace.h): the requests as a
 * trace, their outcomes, and each one's token times when asked.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_sim_trace_int.h"


/* token_times: seconds, in order; appended to times */
static int
fg_sim_json_token_times(fg_sim_reader_t *rd, json_t *obj,
    fg_sim_token_times_t *times, size_t *ntimes, size_t *nalloc)
{
    double   v, prev, *more;
    size_t   i, n;
    json_t  *val, *t;

    val = json_object_get(obj, "token_times");
    if (val == NULL || json_is_null(val)) {
        return 0;
    }

    if (!json_is_array(val)) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"token_times\" must be "
                     "an array of seconds", rd->path, rd->lineno);
        return -1;
    }

    n = json_array_size(val);

    if (*ntimes + n > *nalloc) {
        *nalloc = 2 * (*ntimes + n) + 1024;
        more = realloc(times->times, *nalloc * sizeof(double));
        if (more == NULL) {
            fg_sim_error(rd->err, rd->size, "%s:%zu: out of memory",
                         rd->path, rd->lineno);
            return -1;
        }

        times->times = more;
    }

    prev = 0.0;

    json_array_foreach(val, i, t) {
        v = json_is_number(t) ? json_number_value(t) : -1.0;

        if (!(v >= prev) || !isfinite(v)) {
            fg_sim_error(rd->err, rd->size, "%s:%zu: \"token_times\" must "
                         "be seconds >= 0, in order (item %zu)", rd->path,
                         rd->lineno, i);
            return -1;
        }

        times->times[(*ntimes)++] = v;
        prev = v;
    }

    return 0;
}


static int
fg_sim_results_line(fg_sim_reader_t *rd, fg_sim_trace_t *tr,
    fg_sim_result_t *res, json_t *obj)
{
    double         arrival;
    json_t        *val;
    uint32_t       client, in, out, i;
    const char    *status;
    fg_sim_req_t   opt;

    /* other keys are let be: other tools may add their own */
    val = json_object_get(obj, "id");
    if (!json_is_integer(val) || json_integer_value(val) < 0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"id\" must be an integer "
                     ">= 0", rd->path, rd->lineno);
        return -1;
    }

    if (fg_sim_json_client(rd, tr, obj, &client) != 0
        || fg_sim_json_time(rd, obj, "arrival", 0, &arrival) != 0
        || fg_sim_json_time(rd, obj, "first_token", 1, &res->first_token)
           != 0
        || fg_sim_json_time(rd, obj, "finish", 1, &res->finish) != 0
        || fg_sim_json_tokens(rd, obj, "input_tokens", 0, &in) != 0
        || fg_sim_json_tokens(rd, obj, "output_tokens", 0, &out) != 0
        || fg_sim_json_weight(rd, tr, obj, client) != 0
        || fg_sim_json_optional(rd, tr, obj, &opt) != 0
        || fg_sim_json_served(rd, tr, obj, res) != 0)
    {
        return -1;
    }

    val = json_object_get(obj, "status");
    status = json_is_string(val) ? json_string_value(val) : "";

    for (i = 0; i <= FG_SIM_SKIPPED; i++) {
        if (strcmp(status, fg_sim_status_name((fg_sim_status_e) i)) == 0) {
            break;
        }
    }

    if (i > FG_SIM_SKIPPED) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"status\" must be \"ok\", "
                     "\"rejected\", \"timeout\", \"error\" or \"skipped\"",
                     rd->path, rd->lineno);
        return -1;
    }

    res->status = (fg_sim_status_e) i;

    if (res->status == FG_SIM_OK) {
        if (res->first_token < arrival || res->finish < res->first_token) {
            fg_sim_error(rd->err, rd->size, "%s:%zu: a served request needs "
                         "arrival <= first_token <= finish", rd->path,
                         rd->lineno);
            return -1;
        }

    } else if (res->first_token >= 0.0 || res->finish >= 0.0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"first_token\" and "
                     "\"finish\" must be null unless \"status\" is \"ok\"",
                     rd->path, rd->lineno);
        return -1;
    }

    return fg_sim_reader_add(rd, tr, arrival, client, in, out, out, &opt);
}


int
fg_sim_results_read(fg_sim_trace_t *tr, fg_sim_result_t **results,
    const char *path, char *err, size_t size)
{
    return fg_sim_results_read_times(tr, results, NULL, path, err, size);
}


int
fg_sim_results_read_times(fg_sim_trace_t *tr, fg_sim_result_t **results,
    fg_sim_token_times_t *times, const char *path, char *err, size_t size)
{
    int                rc;
    size_t             n, ntimes, nalloc, *start;
    json_t            *obj;
    fg_sim_result_t   *res, *more;
    fg_sim_reader_t    rd;

    if (times != NULL) {
        memset(times, 0, sizeof(fg_sim_token_times_t));
    }

    if (fg_sim_reader_open(&rd, path, err, size) != 0) {
        return -1;
    }

    res = NULL;
    n = 0;
    ntimes = 0;
    nalloc = 0;

    while ((rc = fg_sim_reader_next(&rd, &obj)) == 1) {

        if (tr->n == n) {
            n = n ? 2 * n : 1024;
            more = realloc(res, n * sizeof(fg_sim_result_t));
            start = times ? realloc(times->start, (n + 1) * sizeof(size_t))
                          : NULL;

            if (more != NULL) {
                res = more;
            }

            if (start != NULL) {
                times->start = start;
            }

            if (more == NULL || (times != NULL && start == NULL)) {
                fg_sim_error(err, size, "%s:%zu: out of memory", path,
                             rd.lineno);
                json_decref(obj);
                rc = -1;
                break;
            }
        }

        if (times != NULL) {
            times->start[tr->n] = ntimes;
        }

        rc = fg_sim_results_line(&rd, tr, &res[tr->n], obj);

        if (rc == 0 && times != NULL) {
            rc = fg_sim_json_token_times(&rd, obj, times, &ntimes, &nalloc);
        }

        json_decref(obj);

        if (rc != 0) {
            break;
        }
    }

    fg_sim_reader_close(&rd);

    if (rc == 0 && tr->n == 0) {
        fg_sim_error(err, size, "%s: no requests", path);
        rc = -1;
    }

    if (rc != 0) {
        free(res);

        if (times != NULL) {
            fg_sim_token_times_free(times);
        }

        return -1;
    }

    if (times != NULL) {
        times->start[tr->n] = ntimes;
        times->n = tr->n;
    }

    *results = res;

    return 0;
}


void
fg_sim_token_times_free(fg_sim_token_times_t *times)
{
    free(times->times);
    free(times->start);

    memset(times, 0, sizeof(fg_sim_token_times_t));
}
