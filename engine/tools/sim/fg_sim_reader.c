
/*
 * fairgate: reading the simulator's JSON-lines files: the reader, and the
 * checks of the fields that traces and results share.
 */


#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_sim_trace_int.h"


int
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


void
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
int
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
int
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
int
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


/* val is a non-empty string, else -1 with the problem */
static int
fg_sim_json_nonempty(fg_sim_reader_t *rd, json_t *val, const char *key)
{
    if (!json_is_string(val) || json_string_length(val) == 0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" must be a "
                     "non-empty string", rd->path, rd->lineno, key);
        return -1;
    }

    return 0;
}


static int
fg_sim_reader_nomem(fg_sim_reader_t *rd)
{
    fg_sim_error(rd->err, rd->size, "%s:%zu: out of memory", rd->path,
                 rd->lineno);
    return -1;
}


/* a client's or string's index as fg_sim_trace_*() returned it, -1: none */
static int
fg_sim_json_index(fg_sim_reader_t *rd, int64_t idx, uint32_t *v)
{
    if (idx < 0) {
        return fg_sim_reader_nomem(rd);
    }

    *v = (uint32_t) idx;

    return 0;
}


int
fg_sim_json_client(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    uint32_t *client)
{
    json_t      *val;
    int64_t      i;
    const char  *key;

    /* a multi-app trace may name its tenants by "user" alone */
    key = "client";
    val = json_object_get(obj, key);

    if (val == NULL && json_object_get(obj, "user") != NULL) {
        key = "user";
        val = json_object_get(obj, key);
    }

    if (fg_sim_json_nonempty(rd, val, key) != 0) {
        return -1;
    }

    if (strlen(json_string_value(val)) != json_string_length(val)) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" holds a NUL",
                     rd->path, rd->lineno, key);
        return -1;
    }

    i = fg_sim_trace_client(tr, json_string_value(val));

    return fg_sim_json_index(rd, i, client);
}


/*
 * An optional string: absent is 0.  The load generator sends these in
 * HTTP headers, so control characters are refused (no header injection),
 * and a key is visible ASCII as a bearer token is.
 */
static int
fg_sim_json_str(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    const char *key, uint32_t *v)
{
    json_t               *val;
    size_t                i, len;
    int64_t               idx;
    const unsigned char  *p;

    val = json_object_get(obj, key);

    if (val == NULL) {
        *v = 0;
        return 0;
    }

    if (fg_sim_json_nonempty(rd, val, key) != 0) {
        return -1;
    }

    p = (const unsigned char *) json_string_value(val);
    len = json_string_length(val);

    for (i = 0; i < len; i++) {
        if (p[i] < 0x20 || p[i] == 0x7f
            || (strcmp(key, "key") == 0 && (p[i] == ' ' || p[i] > 0x7f)))
        {
            fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" holds a "
                         "character it may not (%s)", rd->path, rd->lineno,
                         key, strcmp(key, "key") == 0
                              ? "a key is visible ASCII"
                              : "no control characters");
            return -1;
        }
    }

    idx = fg_sim_trace_str(tr, (const char *) p);

    return fg_sim_json_index(rd, idx, v);
}


/* "prefix" and "prefix_tokens", both or neither */
static int
fg_sim_json_prefix(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    fg_sim_req_t *r)
{
    r->prefix_tokens = 0;

    if (fg_sim_json_str(rd, tr, obj, "prefix", &r->prefix) != 0) {
        return -1;
    }

    if ((r->prefix != 0) != (json_object_get(obj, "prefix_tokens") != NULL))
    {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"prefix\" and "
                     "\"prefix_tokens\" go together", rd->path, rd->lineno);
        return -1;
    }

    if (r->prefix != 0
        && fg_sim_json_tokens(rd, obj, "prefix_tokens", 1, &r->prefix_tokens)
           != 0)
    {
        return -1;
    }

    return 0;
}


/* an optional number in (0, 1e6): absent is 0 */
static int
fg_sim_json_positive(fg_sim_reader_t *rd, json_t *obj, const char *key,
    double *v)
{
    json_t  *val;

    *v = 0.0;
    val = json_object_get(obj, key);

    if (val == NULL) {
        return 0;
    }

    *v = json_is_number(val) ? json_number_value(val) : -1.0;

    if (!(*v > 0.0 && *v < 1e6)) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" must be a number "
                     "> 0 and < 1e6", rd->path, rd->lineno, key);
        return -1;
    }

    return 0;
}


/* the optional fields of a trace line, or of a results line */
int
fg_sim_json_optional(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    fg_sim_req_t *r)
{
    json_t      *val;
    json_int_t   n;

    if (fg_sim_json_str(rd, tr, obj, "key", &r->key) != 0
        || fg_sim_json_str(rd, tr, obj, "user", &r->user) != 0
        || fg_sim_json_str(rd, tr, obj, "app", &r->app) != 0
        || fg_sim_json_str(rd, tr, obj, "interaction", &r->interaction)
           != 0
        || fg_sim_json_str(rd, tr, obj, "model", &r->model) != 0)
    {
        return -1;
    }

    r->stage = -1;
    val = json_object_get(obj, "stage");

    if (val != NULL) {
        n = json_is_integer(val) ? json_integer_value(val) : -1;

        if (n < 0 || n > FG_SIM_MAX_STAGE) {
            fg_sim_error(rd->err, rd->size, "%s:%zu: \"stage\" must be an "
                         "integer in [0, %d]", rd->path, rd->lineno,
                         FG_SIM_MAX_STAGE);
            return -1;
        }

        r->stage = (int32_t) n;
    }

    r->system_tokens = 0;

    if (json_object_get(obj, "system_tokens") != NULL
        && fg_sim_json_tokens(rd, obj, "system_tokens", 0, &r->system_tokens)
           != 0)
    {
        return -1;
    }

    if (fg_sim_json_prefix(rd, tr, obj, r) != 0) {
        return -1;
    }

    r->stream = -1;
    val = json_object_get(obj, "stream");

    if (val != NULL) {
        if (!json_is_boolean(val)) {
            fg_sim_error(rd->err, rd->size, "%s:%zu: \"stream\" must be "
                         "true or false", rd->path, rd->lineno);
            return -1;
        }

        r->stream = json_is_true(val) ? 1 : 0;
    }

    if (fg_sim_json_positive(rd, obj, "ttft_target", &r->ttft_target) != 0
        || fg_sim_json_positive(rd, obj, "tokens_per_s", &r->tokens_per_s)
           != 0)
    {
        return -1;
    }

    return 0;
}


/* copies the optional fields read into the request added */
static void
fg_sim_set_optional(fg_sim_req_t *to, const fg_sim_req_t *from)
{
    to->key = from->key;
    to->user = from->user;
    to->app = from->app;
    to->interaction = from->interaction;
    to->system_tokens = from->system_tokens;
    to->stage = from->stage;
    to->stream = from->stream;
    to->prefix = from->prefix;
    to->prefix_tokens = from->prefix_tokens;
    to->model = from->model;
    to->ttft_target = from->ttft_target;
    to->tokens_per_s = from->tokens_per_s;
}


int
fg_sim_reader_add(fg_sim_reader_t *rd, fg_sim_trace_t *tr, double t,
    uint32_t client, uint32_t in, uint32_t out, uint32_t max_out,
    const fg_sim_req_t *opt)
{
    if (fg_sim_trace_add(tr, t, client, in, out, max_out) != 0) {
        return fg_sim_reader_nomem(rd);
    }

    fg_sim_set_optional(&tr->reqs[tr->n - 1], opt);

    return 0;
}


int
fg_sim_json_served(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    fg_sim_result_t *res)
{
    json_t  *val;

    res->cached_tokens = 0;
    res->has_cached = 0;
    res->qoe = 0.0;
    res->has_qoe = 0;

    val = json_object_get(obj, "qoe");

    if (val != NULL) {
        res->qoe = json_is_number(val) ? json_number_value(val) : -1.0;

        if (!(res->qoe >= 0.0 && res->qoe <= 1.0)) {
            fg_sim_error(rd->err, rd->size, "%s:%zu: \"qoe\" must be a "
                         "number in [0, 1]", rd->path, rd->lineno);
            return -1;
        }

        res->has_qoe = 1;
    }

    if (json_object_get(obj, "cached_tokens") != NULL) {
        if (fg_sim_json_tokens(rd, obj, "cached_tokens", 0,
                               &res->cached_tokens)
            != 0)
        {
            return -1;
        }

        res->has_cached = 1;
    }

    /* analyze totals them, as the run's JSON does */
    res->preemptions = 0;
    res->has_preemptions = 0;

    if (json_object_get(obj, "preemptions") != NULL) {
        if (fg_sim_json_tokens(rd, obj, "preemptions", 0, &res->preemptions)
            != 0)
        {
            return -1;
        }

        res->has_preemptions = 1;
    }

    return fg_sim_json_str(rd, tr, obj, "engine", &res->engine);
}


int
fg_sim_json_weight(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
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
