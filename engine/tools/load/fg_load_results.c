
/*
 * fairgate: what the load generator measured, and its results file.
 */


#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "fg_load_results.h"


static const char  *fg_load_from_names[] = { "trace", "usage", "counted" };


int
fg_load_result_token(fg_load_result_t *res, double t)
{
    double  *more;

    more = fg_sim_grow(res->token_times, res->ntimes + 1, &res->nalloc_times,
                       sizeof(double), 64);
    if (more == NULL) {
        return -1;
    }

    res->token_times = more;

    res->token_times[res->ntimes++] = t;

    return 0;
}


void
fg_load_result_expect(fg_load_result_t *res, const fg_sim_req_t *r,
    const fg_qoe_expect_t *dflt, double scale, double submit)
{
    fg_qoe_expect_t  e;

    if (!res->stream) {
        return;
    }

    if (!fg_sim_req_expect(r, &e.ttft, &e.speed)) {
        if (!(dflt->ttft > 0.0) && !(dflt->speed > 0.0)) {
            return;
        }

        e.ttft = dflt->ttft > 0.0 ? dflt->ttft : FG_SIM_QOE_TTFT;
        e.speed = dflt->speed;
    }

    /* the reader's seconds as the trace's, as the run's other times */
    e.ttft *= scale;
    e.speed /= scale;

    fg_qoe_init(&res->qoe, &e, submit);
    res->has_qoe = 1;
}


void
fg_load_result_error(fg_load_result_t *res, const char *fmt, ...)
{
    int      len;
    char    *e;
    va_list  args;

    va_start(args, fmt);
    len = vsnprintf(NULL, 0, fmt, args);
    va_end(args);

    e = len >= 0 ? malloc(len + 1) : NULL;

    if (e != NULL) {
        va_start(args, fmt);
        vsnprintf(e, len + 1, fmt, args);
        va_end(args);
    }

    free(res->error);
    res->error = e;
}


void
fg_load_results_free(fg_load_result_t *res, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        free(res[i].error);
        free(res[i].engine);
        free(res[i].token_times);
    }

    free(res);
}


/* a message as a JSON string: servers' messages may hold anything */
static void
fg_load_write_string(FILE *fp, const char *s)
{
    char    *q;
    json_t  *j;

    j = json_string(s);
    q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;

    fputs(q ? q : "\"(not UTF-8)\"", fp);

    free(q);
    json_decref(j);
}


int
fg_load_results_write(const fg_sim_trace_t *tr, const fg_load_result_t *res,
    double time_scale, int token_times, const char *path, char *err,
    size_t size)
{
    int                      rc;
    FILE                    *fp;
    size_t                   i;
    uint32_t                 k;
    fg_sim_req_t             r;
    fg_sim_quoted_t          q;
    const fg_load_result_t  *x;

    fp = fg_sim_write_start(&q, tr, path, err, size);
    if (fp == NULL) {
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        x = &res[i];

        if (x->sent < 0.0) {
            continue;
        }

        r = tr->reqs[i];

        /* the format's order: arrival <= first_token <= finish */
        fg_sim_write_result(fp, &q, tr, i, x->sent, x->status,
                            fmax(x->first_token, x->sent),
                            fmax(x->finish, fmax(x->first_token, x->sent)),
                            x->input_tokens, x->output_tokens);

        /* what was sent, whatever the trace said */
        r.stream = x->stream ? 1 : 0;
        fg_sim_write_optional(fp, &q, &r, 0);

        fprintf(fp, ", \"scheduled\": %.6f, \"http_status\": %d, "
                "\"tokens_from\": \"%s\"", r.t * time_scale, x->http_status,
                fg_load_from_names[x->from]);

        if (x->status != FG_SIM_OK && x->error != NULL) {
            fputs(", \"error\": ", fp);
            fg_load_write_string(fp, x->error);
        }

        if (x->status == FG_SIM_OK && x->cached_tokens >= 0) {
            fprintf(fp, ", \"cached_tokens\": %lld",
                    (long long) x->cached_tokens);
        }

        if (x->engine != NULL) {
            fputs(", \"engine\": ", fp);
            fg_load_write_string(fp, x->engine);
        }

        if (token_times && x->status == FG_SIM_OK && x->ntimes > 0) {
            fputs(", \"token_times\": [", fp);

            for (k = 0; k < x->ntimes; k++) {
                fprintf(fp, "%s%.6f", k ? ", " : "", x->token_times[k]);
            }

            fputc(']', fp);
        }

        if (x->has_qoe) {
            fprintf(fp, ", \"qoe\": %.6f", x->status == FG_SIM_OK
                                             ? fg_qoe_value(&x->qoe) : 0.0);
        }

        fputs("}\n", fp);
    }

    fg_sim_quoted_free(&q);

    rc = ferror(fp);
    rc |= fp == stdout ? fflush(fp) : fclose(fp);

    if (rc != 0) {
        snprintf(err, size, "%s: write error", path);
        return -1;
    }

    return 0;
}
