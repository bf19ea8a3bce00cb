
/*
 * fairgate: writing traces and results files (fg_sim_trace.h): names
 * quoted once, times to the microsecond so that every libc prints them
 * the same.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_sim_trace.h"


/* writes request i's line */
typedef void (*fg_sim_write_line_pt)(FILE *fp, const fg_sim_quoted_t *q,
    const fg_sim_trace_t *tr, size_t i, const void *data);


static const char  *fg_sim_status_names[] = {
    "ok", "rejected", "timeout", "error", "skipped"
};


/* a JSON string, quoted and escaped, malloc()ed; NULL when out of memory */
static char *
fg_sim_json_quote(const char *text)
{
    char    *q;
    json_t  *s;

    s = json_string(text);
    q = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    json_decref(s);

    return q;
}


int
fg_sim_quoted_init(fg_sim_quoted_t *q, const fg_sim_trace_t *tr)
{
    uint32_t  i;

    q->clients = calloc(tr->nclients + 1, sizeof(char *));
    q->strs = calloc(tr->nstrs + 1, sizeof(char *));
    q->nclients = tr->nclients;
    q->nstrs = tr->nstrs;

    if (q->clients == NULL || q->strs == NULL) {
        goto failed;
    }

    for (i = 0; i < tr->nclients; i++) {
        q->clients[i] = fg_sim_json_quote(tr->clients[i].name);
        if (q->clients[i] == NULL) {
            goto failed;
        }
    }

    for (i = 1; i < tr->nstrs; i++) {
        q->strs[i] = fg_sim_json_quote(tr->strs[i]);
        if (q->strs[i] == NULL) {
            goto failed;
        }
    }

    return 0;

failed:

    fg_sim_quoted_free(q);

    return -1;
}


void
fg_sim_quoted_free(fg_sim_quoted_t *q)
{
    uint32_t  i;

    for (i = 0; q->clients != NULL && i < q->nclients; i++) {
        free(q->clients[i]);
    }

    for (i = 0; q->strs != NULL && i < q->nstrs; i++) {
        free(q->strs[i]);
    }

    free(q->clients);
    free(q->strs);

    q->clients = NULL;
    q->strs = NULL;
}


void
fg_sim_write_optional(FILE *fp, const fg_sim_quoted_t *q,
    const fg_sim_req_t *r, int with_key)
{
    if (r->key && with_key) {
        fprintf(fp, ", \"key\": %s", q->strs[r->key]);
    }

    if (r->user) {
        fprintf(fp, ", \"user\": %s", q->strs[r->user]);
    }

    if (r->app) {
        fprintf(fp, ", \"app\": %s", q->strs[r->app]);
    }

    if (r->interaction) {
        fprintf(fp, ", \"interaction\": %s", q->strs[r->interaction]);
    }

    if (r->stage >= 0) {
        fprintf(fp, ", \"stage\": %d", (int) r->stage);
    }

    if (r->system_tokens) {
        fprintf(fp, ", \"system_tokens\": %u", r->system_tokens);
    }

    if (r->stream >= 0) {
        fprintf(fp, ", \"stream\": %s", r->stream ? "true" : "false");
    }

    if (r->prefix) {
        fprintf(fp, ", \"prefix\": %s, \"prefix_tokens\": %u",
                q->strs[r->prefix], r->prefix_tokens);
    }

    if (r->model) {
        fprintf(fp, ", \"model\": %s", q->strs[r->model]);
    }

    if (r->ttft_target > 0.0) {
        fprintf(fp, ", \"ttft_target\": %.17g", r->ttft_target);
    }

    if (r->tokens_per_s > 0.0) {
        fprintf(fp, ", \"tokens_per_s\": %.17g", r->tokens_per_s);
    }
}


int
fg_sim_req_expect(const fg_sim_req_t *r, double *ttft, double *speed)
{
    if (!(r->ttft_target > 0.0) && !(r->tokens_per_s > 0.0)) {
        return 0;
    }

    *ttft = r->ttft_target > 0.0 ? r->ttft_target : FG_SIM_QOE_TTFT;
    *speed = r->tokens_per_s;

    return 1;
}


FILE *
fg_sim_write_open(const char *path, char *err, size_t size)
{
    FILE  *fp;

    fp = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (fp == NULL) {
        fg_sim_error(err, size, "%s: %s", path, strerror(errno));
    }

    return fp;
}


int
fg_sim_write_close(FILE *fp, const char *path, char *err, size_t size)
{
    int  rc;

    rc = fp == stdout ? fflush(fp) : fclose(fp);
    if (rc != 0) {
        fg_sim_error(err, size, "%s: %s", path, strerror(errno));
        return -1;
    }

    return 0;
}


FILE *
fg_sim_write_start(fg_sim_quoted_t *q, const fg_sim_trace_t *tr,
    const char *path, char *err, size_t size)
{
    FILE  *fp;

    if (fg_sim_quoted_init(q, tr) != 0) {
        fg_sim_error(err, size, "%s: out of memory", path);
        return NULL;
    }

    fp = fg_sim_write_open(path, err, size);
    if (fp == NULL) {
        fg_sim_quoted_free(q);
    }

    return fp;
}


/* one request of the trace, as a trace line */
static void
fg_sim_trace_line(FILE *fp, const fg_sim_quoted_t *q,
    const fg_sim_trace_t *tr, size_t i, const void *data)
{
    const fg_sim_req_t          *r;
    const fg_sim_client_info_t  *c;

    (void) data;

    r = &tr->reqs[i];
    c = &tr->clients[r->client];

    /* microseconds: printed the same by every libc */
    fprintf(fp, "{\"t\": %.6f, \"client\": %s, \"input_tokens\": %u, "
            "\"output_tokens\": %u", r->t, q->clients[r->client],
            r->input_tokens, r->output_tokens);

    if (r->max_output_tokens != r->output_tokens) {
        fprintf(fp, ", \"max_output_tokens\": %u", r->max_output_tokens);
    }

    if (c->has_weight) {
        fprintf(fp, ", \"weight\": %.17g", c->weight);
    }

    fg_sim_write_optional(fp, q, r, 1);

    fputs("}\n", fp);
}


/* each request's line, written by line(), into path */
static int
fg_sim_write_lines(const fg_sim_trace_t *tr, fg_sim_write_line_pt line,
    const void *data, const char *path, char *err, size_t size)
{
    FILE             *fp;
    size_t            i;
    fg_sim_quoted_t   q;

    fp = fg_sim_write_start(&q, tr, path, err, size);
    if (fp == NULL) {
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        line(fp, &q, tr, i, data);
    }

    fg_sim_quoted_free(&q);

    return fg_sim_write_close(fp, path, err, size);
}


int
fg_sim_trace_write(const fg_sim_trace_t *tr, const char *path, char *err,
    size_t size)
{
    return fg_sim_write_lines(tr, fg_sim_trace_line, NULL, path, err, size);
}


const char *
fg_sim_status_name(fg_sim_status_e status)
{
    if ((unsigned) status > FG_SIM_SKIPPED) {
        return "unknown";
    }

    return fg_sim_status_names[status];
}


void
fg_sim_write_result(FILE *fp, const fg_sim_quoted_t *q,
    const fg_sim_trace_t *tr, size_t i, double arrival,
    fg_sim_status_e status, double first_token, double finish,
    uint32_t input_tokens, uint32_t output_tokens)
{
    const fg_sim_client_info_t  *c;

    c = &tr->clients[tr->reqs[i].client];

    fprintf(fp, "{\"id\": %zu, \"client\": %s, \"arrival\": %.6f, ", i,
            q->clients[tr->reqs[i].client], arrival);

    if (status == FG_SIM_OK) {
        fprintf(fp, "\"first_token\": %.6f, \"finish\": %.6f, ",
                first_token, finish);

    } else {
        fputs("\"first_token\": null, \"finish\": null, ", fp);
    }

    fprintf(fp, "\"input_tokens\": %u, \"output_tokens\": %u, "
            "\"status\": \"%s\"", input_tokens, output_tokens,
            fg_sim_status_name(status));

    /* the weighted metric needs it, and the trace is not at hand */
    if (c->has_weight) {
        fprintf(fp, ", \"weight\": %.17g", c->weight);
    }
}


/* request i's outcome, as a results line */
static void
fg_sim_result_line(FILE *fp, const fg_sim_quoted_t *q,
    const fg_sim_trace_t *tr, size_t i, const void *data)
{
    const fg_sim_req_t     *r;
    const fg_sim_result_t  *res;

    r = &tr->reqs[i];
    res = (const fg_sim_result_t *) data + i;

    fg_sim_write_result(fp, q, tr, i, r->t, res->status, res->first_token,
                        res->finish, r->input_tokens, r->output_tokens);

    /* not the key: results get passed around more than traces */
    fg_sim_write_optional(fp, q, r, 0);

    if (res->has_cached) {
        fprintf(fp, ", \"cached_tokens\": %u", res->cached_tokens);
    }

    if (res->engine) {
        fprintf(fp, ", \"engine\": %s", q->strs[res->engine]);
    }

    if (res->has_qoe) {
        fprintf(fp, ", \"qoe\": %.6f", res->qoe);
    }

    if (res->has_preemptions) {
        fprintf(fp, ", \"preemptions\": %u", res->preemptions);
    }

    fputs("}\n", fp);
}


int
fg_sim_results_write(const fg_sim_trace_t *tr,
    const fg_sim_result_t *results, const char *path, char *err,
    size_t size)
{
    return fg_sim_write_lines(tr, fg_sim_result_line, results, path, err,
                              size);
}
