
/*
 * fairgate: the simulator's traces and results files.
 */


#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_sim_trace.h"


typedef struct {
    FILE        *fp;
    const char  *path;
    char        *line;
    size_t       cap;
    size_t       lineno;
    char        *err;
    size_t       size;
} fg_sim_reader_t;


static const char  *fg_sim_status_names[] = { "ok", "rejected", "timeout" };


static void
fg_sim_error(char *err, size_t size, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(err, size, fmt, args);
    va_end(args);
}


void
fg_sim_trace_init(fg_sim_trace_t *tr)
{
    memset(tr, 0, sizeof(fg_sim_trace_t));
}


void
fg_sim_trace_free(fg_sim_trace_t *tr)
{
    uint32_t  i;

    for (i = 0; i < tr->nclients; i++) {
        free(tr->clients[i].name);
    }

    free(tr->clients);
    free(tr->reqs);

    fg_sim_trace_init(tr);
}


int64_t
fg_sim_trace_client(fg_sim_trace_t *tr, const char *name)
{
    uint32_t               i, n;
    fg_sim_client_info_t  *c;

    /* linear: traces have tens of clients, and this runs once a line */
    for (i = 0; i < tr->nclients; i++) {
        if (strcmp(tr->clients[i].name, name) == 0) {
            return i;
        }
    }

    if (tr->nclients == tr->nalloc_clients) {
        n = tr->nalloc_clients ? 2 * tr->nalloc_clients : 8;
        c = realloc(tr->clients, n * sizeof(fg_sim_client_info_t));
        if (c == NULL) {
            return -1;
        }

        tr->clients = c;
        tr->nalloc_clients = n;
    }

    c = &tr->clients[tr->nclients];
    memset(c, 0, sizeof(fg_sim_client_info_t));

    c->name = strdup(name);
    if (c->name == NULL) {
        return -1;
    }

    c->weight = 1.0;

    return tr->nclients++;
}


int
fg_sim_trace_add(fg_sim_trace_t *tr, double t, uint32_t client,
    uint32_t input_tokens, uint32_t output_tokens,
    uint32_t max_output_tokens)
{
    size_t         n;
    fg_sim_req_t  *r;

    if (tr->n == tr->nalloc) {
        n = tr->nalloc ? 2 * tr->nalloc : 1024;
        r = realloc(tr->reqs, n * sizeof(fg_sim_req_t));
        if (r == NULL) {
            return -1;
        }

        tr->reqs = r;
        tr->nalloc = n;
    }

    r = &tr->reqs[tr->n++];

    r->t = t;
    r->client = client;
    r->input_tokens = input_tokens;
    r->output_tokens = output_tokens;
    r->max_output_tokens = max_output_tokens;

    return 0;
}


static int
fg_sim_cmp_arrival(const void *a, const void *b)
{
    const fg_sim_req_t  *ra = *(fg_sim_req_t * const *) a;
    const fg_sim_req_t  *rb = *(fg_sim_req_t * const *) b;

    if (ra->t != rb->t) {
        return ra->t < rb->t ? -1 : 1;
    }

    /* qsort is not stable: the address keeps the order of addition */
    return (ra > rb) - (ra < rb);
}


int
fg_sim_trace_sort(fg_sim_trace_t *tr)
{
    size_t          i;
    fg_sim_req_t   *sorted, **order;

    if (tr->n < 2) {
        return 0;
    }

    order = malloc(tr->n * sizeof(fg_sim_req_t *));
    sorted = malloc(tr->n * sizeof(fg_sim_req_t));

    if (order == NULL || sorted == NULL) {
        free(order);
        free(sorted);
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        order[i] = &tr->reqs[i];
    }

    qsort(order, tr->n, sizeof(fg_sim_req_t *), fg_sim_cmp_arrival);

    for (i = 0; i < tr->n; i++) {
        sorted[i] = *order[i];
    }

    free(order);
    free(tr->reqs);

    tr->reqs = sorted;
    tr->nalloc = tr->n;

    return 0;
}


static int
fg_sim_reader_open(fg_sim_reader_t *rd, const char *path, char *err,
    size_t size)
{
    memset(rd, 0, sizeof(fg_sim_reader_t));

    rd->path = path;
    rd->err = err;
    rd->size = size;

    rd->fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (rd->fp == NULL) {
        fg_sim_error(err, size, "%s: %s", path, strerror(errno));
        return -1;
    }

    return 0;
}


static void
fg_sim_reader_close(fg_sim_reader_t *rd)
{
    if (rd->fp != NULL && rd->fp != stdin) {
        fclose(rd->fp);
    }

    free(rd->line);
}


/*
 * The next non-blank line as a JSON object: 1, 0 at the end, -1 on error
 * (with the message in rd->err).
 */
static int
fg_sim_reader_next(fg_sim_reader_t *rd, json_t **obj)
{
    ssize_t        len;
    const char    *p;
    json_error_t   jerr;

    for ( ;; ) {
        len = getline(&rd->line, &rd->cap, rd->fp);
        if (len < 0) {
            if (ferror(rd->fp)) {
                fg_sim_error(rd->err, rd->size, "%s:%zu: %s", rd->path,
                             rd->lineno + 1, strerror(errno));
                return -1;
            }

            return 0;
        }

        rd->lineno++;

        for (p = rd->line; *p == ' ' || *p == '\t' || *p == '\r'
                           || *p == '\n'; p++)
        {
            /* void */
        }

        if (*p != '\0') {
            break;
        }
    }

    *obj = json_loads(rd->line, JSON_REJECT_DUPLICATES, &jerr);
    if (*obj == NULL) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: not valid JSON: %s",
                     rd->path, rd->lineno, jerr.text);
        return -1;
    }

    if (!json_is_object(*obj)) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: expected a JSON object",
                     rd->path, rd->lineno);
        json_decref(*obj);
        return -1;
    }

    return 1;
}


/* a token count: an integer in [min, FG_SIM_MAX_TOKENS] */
static int
fg_sim_json_tokens(fg_sim_reader_t *rd, json_t *obj, const char *key,
    uint32_t min, uint32_t *v)
{
    json_int_t   n;
    json_t      *val;

    val = json_object_get(obj, key);

    if (val == NULL) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" is missing",
                     rd->path, rd->lineno, key);
        return -1;
    }

    if (!json_is_integer(val)) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" must be an integer",
                     rd->path, rd->lineno, key);
        return -1;
    }

    n = json_integer_value(val);

    if (n < (json_int_t) min || n > FG_SIM_MAX_TOKENS) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" must be in "
                     "[%u, %d], not %lld", rd->path, rd->lineno, key, min,
                     FG_SIM_MAX_TOKENS, (long long) n);
        return -1;
    }

    *v = (uint32_t) n;

    return 0;
}


/* a time: a finite number >= 0; null too when nullable (then *v < 0) */
static int
fg_sim_json_time(fg_sim_reader_t *rd, json_t *obj, const char *key,
    int nullable, double *v)
{
    json_t  *val;

    val = json_object_get(obj, key);

    if (val == NULL) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" is missing",
                     rd->path, rd->lineno, key);
        return -1;
    }

    if (nullable && json_is_null(val)) {
        *v = -1.0;
        return 0;
    }

    if (!json_is_number(val) || !(json_number_value(val) >= 0.0)
        || !isfinite(json_number_value(val)))
    {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" must be a number of "
                     "seconds >= 0%s", rd->path, rd->lineno, key,
                     nullable ? ", or null" : "");
        return -1;
    }

    *v = json_number_value(val);

    return 0;
}


static int
fg_sim_json_client(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    uint32_t *client)
{
    json_t   *val;
    int64_t   i;

    val = json_object_get(obj, "client");

    if (!json_is_string(val) || json_string_length(val) == 0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"client\" must be a "
                     "non-empty string", rd->path, rd->lineno);
        return -1;
    }

    if (strlen(json_string_value(val)) != json_string_length(val)) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"client\" holds a NUL",
                     rd->path, rd->lineno);
        return -1;
    }

    i = fg_sim_trace_client(tr, json_string_value(val));
    if (i < 0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: out of memory", rd->path,
                     rd->lineno);
        return -1;
    }

    *client = (uint32_t) i;

    return 0;
}


static int
fg_sim_trace_weight(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    uint32_t client)
{
    double                 w;
    json_t                *val;
    fg_sim_client_info_t  *c;

    val = json_object_get(obj, "weight");
    if (val == NULL) {
        return 0;
    }

    w = json_is_number(val) ? json_number_value(val) : -1.0;

    if (!(w > 0.0 && w < 1e9)) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"weight\" must be a number "
                     "> 0 and < 1e9", rd->path, rd->lineno);
        return -1;
    }

    c = &tr->clients[client];

    if (c->has_weight && c->weight != w) {
        /* one weight a client: which one would hold when is unclear */
        fg_sim_error(rd->err, rd->size, "%s:%zu: client \"%s\": weight %g "
                     "differs from %g given on line %zu", rd->path,
                     rd->lineno, c->name, w, c->weight, c->weight_line);
        return -1;
    }

    c->weight = w;
    c->has_weight = 1;
    c->weight_line = rd->lineno;

    return 0;
}


static int
fg_sim_trace_line(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj)
{
    double       t;
    json_t      *val;
    uint32_t     client, in, out, max_out;
    const char  *key;

    json_object_foreach(obj, key, val) {
        if (strcmp(key, "t") != 0 && strcmp(key, "client") != 0
            && strcmp(key, "input_tokens") != 0
            && strcmp(key, "output_tokens") != 0
            && strcmp(key, "max_output_tokens") != 0
            && strcmp(key, "weight") != 0)
        {
            /* a misspelt optional key would otherwise go unnoticed */
            fg_sim_error(rd->err, rd->size, "%s:%zu: unknown key \"%s\"",
                         rd->path, rd->lineno, key);
            return -1;
        }
    }

    if (fg_sim_json_time(rd, obj, "t", 0, &t) != 0
        || fg_sim_json_client(rd, tr, obj, &client) != 0
        || fg_sim_json_tokens(rd, obj, "input_tokens", 1, &in) != 0
        || fg_sim_json_tokens(rd, obj, "output_tokens", 1, &out) != 0
        || fg_sim_trace_weight(rd, tr, obj, client) != 0)
    {
        return -1;
    }

    max_out = out;

    if (json_object_get(obj, "max_output_tokens") != NULL) {
        if (fg_sim_json_tokens(rd, obj, "max_output_tokens", 1, &max_out)
            != 0)
        {
            return -1;
        }

        if (max_out < out) {
            fg_sim_error(rd->err, rd->size, "%s:%zu: \"max_output_tokens\" "
                         "(%u) is below \"output_tokens\" (%u)", rd->path,
                         rd->lineno, max_out, out);
            return -1;
        }
    }

    if (fg_sim_trace_add(tr, t, client, in, out, max_out) != 0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: out of memory", rd->path,
                     rd->lineno);
        return -1;
    }

    return 0;
}


int
fg_sim_trace_read(fg_sim_trace_t *tr, const char *path, char *err,
    size_t size)
{
    int               rc;
    json_t           *obj;
    fg_sim_reader_t   rd;

    if (fg_sim_reader_open(&rd, path, err, size) != 0) {
        return -1;
    }

    while ((rc = fg_sim_reader_next(&rd, &obj)) == 1) {
        rc = fg_sim_trace_line(&rd, tr, obj);
        json_decref(obj);

        if (rc != 0) {
            break;
        }
    }

    fg_sim_reader_close(&rd);

    if (rc != 0) {
        return -1;
    }

    if (tr->n == 0) {
        fg_sim_error(err, size, "%s: no requests", path);
        return -1;
    }

    if (fg_sim_trace_sort(tr) != 0) {
        fg_sim_error(err, size, "%s: out of memory", path);
        return -1;
    }

    return 0;
}


static char **
fg_sim_json_names(const fg_sim_trace_t *tr)
{
    char     **names;
    json_t    *s;
    uint32_t   i;

    names = calloc(tr->nclients + 1, sizeof(char *));
    if (names == NULL) {
        return NULL;
    }

    for (i = 0; i < tr->nclients; i++) {
        s = json_string(tr->clients[i].name);
        names[i] = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
        json_decref(s);

        if (names[i] == NULL) {
            goto failed;
        }
    }

    return names;

failed:

    for (i = 0; i < tr->nclients; i++) {
        free(names[i]);
    }

    free(names);

    return NULL;
}


static void
fg_sim_json_names_free(const fg_sim_trace_t *tr, char **names)
{
    uint32_t  i;

    for (i = 0; i < tr->nclients; i++) {
        free(names[i]);
    }

    free(names);
}


static FILE *
fg_sim_open_out(const char *path, char *err, size_t size)
{
    FILE  *fp;

    fp = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (fp == NULL) {
        fg_sim_error(err, size, "%s: %s", path, strerror(errno));
    }

    return fp;
}


static int
fg_sim_close_out(FILE *fp, const char *path, char *err, size_t size)
{
    int  rc;

    rc = fp == stdout ? fflush(fp) : fclose(fp);
    if (rc != 0) {
        fg_sim_error(err, size, "%s: %s", path, strerror(errno));
        return -1;
    }

    return 0;
}


int
fg_sim_trace_write(const fg_sim_trace_t *tr, const char *path, char *err,
    size_t size)
{
    FILE                        *fp;
    char                       **names;
    size_t                       i;
    const fg_sim_req_t          *r;
    const fg_sim_client_info_t  *c;

    names = fg_sim_json_names(tr);
    if (names == NULL) {
        fg_sim_error(err, size, "%s: out of memory", path);
        return -1;
    }

    fp = fg_sim_open_out(path, err, size);
    if (fp == NULL) {
        fg_sim_json_names_free(tr, names);
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];
        c = &tr->clients[r->client];

        /* microseconds: printed the same by every libc */
        fprintf(fp, "{\"t\": %.6f, \"client\": %s, \"input_tokens\": %u, "
                "\"output_tokens\": %u", r->t, names[r->client],
                r->input_tokens, r->output_tokens);

        if (r->max_output_tokens != r->output_tokens) {
            fprintf(fp, ", \"max_output_tokens\": %u", r->max_output_tokens);
        }

        if (c->has_weight) {
            fprintf(fp, ", \"weight\": %.17g", c->weight);
        }

        fputs("}\n", fp);
    }

    fg_sim_json_names_free(tr, names);

    return fg_sim_close_out(fp, path, err, size);
}


const char *
fg_sim_status_name(fg_sim_status_e status)
{
    if ((unsigned) status > FG_SIM_TIMEOUT) {
        return "unknown";
    }

    return fg_sim_status_names[status];
}


int
fg_sim_results_write(const fg_sim_trace_t *tr,
    const fg_sim_result_t *results, const char *path, char *err,
    size_t size)
{
    FILE                        *fp;
    char                       **names;
    size_t                       i;
    const fg_sim_req_t          *r;
    const fg_sim_result_t       *res;
    const fg_sim_client_info_t  *c;

    names = fg_sim_json_names(tr);
    if (names == NULL) {
        fg_sim_error(err, size, "%s: out of memory", path);
        return -1;
    }

    fp = fg_sim_open_out(path, err, size);
    if (fp == NULL) {
        fg_sim_json_names_free(tr, names);
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];
        res = &results[i];
        c = &tr->clients[r->client];

        fprintf(fp, "{\"id\": %zu, \"client\": %s, \"arrival\": %.6f, ", i,
                names[r->client], r->t);

        if (res->status == FG_SIM_OK) {
            fprintf(fp, "\"first_token\": %.6f, \"finish\": %.6f, ",
                    res->first_token, res->finish);

        } else {
            fputs("\"first_token\": null, \"finish\": null, ", fp);
        }

        fprintf(fp, "\"input_tokens\": %u, \"output_tokens\": %u, "
                "\"status\": \"%s\"", r->input_tokens, r->output_tokens,
                fg_sim_status_name(res->status));

        /* the weighted metric needs it, and the trace is not at hand */
        if (c->has_weight) {
            fprintf(fp, ", \"weight\": %.17g", c->weight);
        }

        fputs("}\n", fp);
    }

    fg_sim_json_names_free(tr, names);

    return fg_sim_close_out(fp, path, err, size);
}


static int
fg_sim_results_line(fg_sim_reader_t *rd, fg_sim_trace_t *tr,
    fg_sim_result_t *res, json_t *obj)
{
    double       arrival;
    json_t      *val;
    uint32_t     client, in, out, i;
    const char  *status;

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
        || fg_sim_trace_weight(rd, tr, obj, client) != 0)
    {
        return -1;
    }

    val = json_object_get(obj, "status");
    status = json_is_string(val) ? json_string_value(val) : "";

    for (i = 0; i <= FG_SIM_TIMEOUT; i++) {
        if (strcmp(status, fg_sim_status_names[i]) == 0) {
            break;
        }
    }

    if (i > FG_SIM_TIMEOUT) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"status\" must be \"ok\", "
                     "\"rejected\" or \"timeout\"", rd->path, rd->lineno);
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

    if (fg_sim_trace_add(tr, arrival, client, in, out, out) != 0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: out of memory", rd->path,
                     rd->lineno);
        return -1;
    }

    return 0;
}


int
fg_sim_results_read(fg_sim_trace_t *tr, fg_sim_result_t **results,
    const char *path, char *err, size_t size)
{
    int               rc;
    size_t            n;
    json_t           *obj;
    fg_sim_result_t  *res, *more;
    fg_sim_reader_t   rd;

    if (fg_sim_reader_open(&rd, path, err, size) != 0) {
        return -1;
    }

    res = NULL;
    n = 0;

    while ((rc = fg_sim_reader_next(&rd, &obj)) == 1) {

        if (tr->n == n) {
            n = n ? 2 * n : 1024;
            more = realloc(res, n * sizeof(fg_sim_result_t));
            if (more == NULL) {
                fg_sim_error(err, size, "%s:%zu: out of memory", path,
                             rd.lineno);
                json_decref(obj);
                rc = -1;
                break;
            }

            res = more;
        }

        rc = fg_sim_results_line(&rd, tr, &res[tr->n], obj);
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
        return -1;
    }

    *results = res;

    return 0;
}
