
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


static const char  *fg_sim_status_names[] = {
    "ok", "rejected", "timeout", "error", "skipped"
};


/* the optional fields of a request, in the order they are written */
static const char  *fg_sim_optional_keys[] = {
    "key", "user", "app", "interaction", "stage", "system_tokens", "stream",
    NULL
};


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

    for (i = 1; i < tr->nstrs; i++) {
        free(tr->strs[i]);
    }

    free(tr->clients);
    free(tr->reqs);
    free(tr->strs);
    free(tr->str_index);

    fg_sim_trace_init(tr);
}


/* FNV-1a: strings are short names, this is enough to spread them */
static uint32_t
fg_sim_str_hash(const char *s)
{
    uint32_t  h;

    for (h = 2166136261u; *s != '\0'; s++) {
        h = (h ^ (unsigned char) *s) * 16777619u;
    }

    return h;
}


static int
fg_sim_str_rehash(fg_sim_trace_t *tr, uint32_t slots)
{
    uint32_t   i, j, *index;

    index = calloc(slots, sizeof(uint32_t));
    if (index == NULL) {
        return -1;
    }

    for (i = 1; i < tr->nstrs; i++) {
        j = fg_sim_str_hash(tr->strs[i]) & (slots - 1);

        while (index[j] != 0) {
            j = (j + 1) & (slots - 1);
        }

        index[j] = i;
    }

    free(tr->str_index);
    tr->str_index = index;
    tr->str_slots = slots;

    return 0;
}


int64_t
fg_sim_trace_str(fg_sim_trace_t *tr, const char *s)
{
    char      **strs;
    uint32_t    j, n;

    /* at most half full: probes stay short */
    if (2 * (tr->nstrs + 1) > tr->str_slots
        && fg_sim_str_rehash(tr, tr->str_slots ? 2 * tr->str_slots : 64)
           != 0)
    {
        return -1;
    }

    j = fg_sim_str_hash(s) & (tr->str_slots - 1);

    while (tr->str_index[j] != 0) {
        if (strcmp(tr->strs[tr->str_index[j]], s) == 0) {
            return tr->str_index[j];
        }

        j = (j + 1) & (tr->str_slots - 1);
    }

    if (tr->nstrs + 1 >= tr->nalloc_strs) {
        n = tr->nalloc_strs ? 2 * tr->nalloc_strs : 64;
        strs = realloc(tr->strs, n * sizeof(char *));
        if (strs == NULL) {
            return -1;
        }

        tr->strs = strs;
        tr->nalloc_strs = n;
    }

    if (tr->nstrs == 0) {
        tr->strs[0] = NULL;
        tr->nstrs = 1;
    }

    tr->strs[tr->nstrs] = strdup(s);
    if (tr->strs[tr->nstrs] == NULL) {
        return -1;
    }

    tr->str_index[j] = tr->nstrs;

    return tr->nstrs++;
}


const char *
fg_sim_trace_str_get(const fg_sim_trace_t *tr, uint32_t i)
{
    return i > 0 && i < tr->nstrs ? tr->strs[i] : NULL;
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

    memset(r, 0, sizeof(fg_sim_req_t));

    r->t = t;
    r->client = client;
    r->input_tokens = input_tokens;
    r->output_tokens = output_tokens;
    r->max_output_tokens = max_output_tokens;
    r->stage = -1;
    r->stream = -1;

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

    if (!json_is_string(val) || json_string_length(val) == 0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" must be a "
                     "non-empty string", rd->path, rd->lineno, key);
        return -1;
    }

    if (strlen(json_string_value(val)) != json_string_length(val)) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" holds a NUL",
                     rd->path, rd->lineno, key);
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

    if (!json_is_string(val) || json_string_length(val) == 0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"%s\" must be a "
                     "non-empty string", rd->path, rd->lineno, key);
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
    if (idx < 0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: out of memory", rd->path,
                     rd->lineno);
        return -1;
    }

    *v = (uint32_t) idx;

    return 0;
}


/* the optional fields of a trace line, or of a results line */
static int
fg_sim_json_optional(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    fg_sim_req_t *r)
{
    json_t      *val;
    json_int_t   n;

    if (fg_sim_json_str(rd, tr, obj, "key", &r->key) != 0
        || fg_sim_json_str(rd, tr, obj, "user", &r->user) != 0
        || fg_sim_json_str(rd, tr, obj, "app", &r->app) != 0
        || fg_sim_json_str(rd, tr, obj, "interaction", &r->interaction)
           != 0)
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

    return 0;
}


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
    double         t;
    json_t        *val;
    size_t         i;
    uint32_t       client, in, out, max_out;
    const char    *key;
    fg_sim_req_t   opt;

    json_object_foreach(obj, key, val) {
        for (i = 0; fg_sim_optional_keys[i] != NULL; i++) {
            if (strcmp(key, fg_sim_optional_keys[i]) == 0) {
                break;
            }
        }

        if (strcmp(key, "t") != 0 && strcmp(key, "client") != 0
            && strcmp(key, "input_tokens") != 0
            && strcmp(key, "output_tokens") != 0
            && strcmp(key, "max_output_tokens") != 0
            && strcmp(key, "weight") != 0
            && fg_sim_optional_keys[i] == NULL)
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
        || fg_sim_trace_weight(rd, tr, obj, client) != 0
        || fg_sim_json_optional(rd, tr, obj, &opt) != 0)
    {
        return -1;
    }

    if (opt.system_tokens >= in) {
        /* the user's part of the prompt is never empty */
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"system_tokens\" (%u) "
                     "must be below \"input_tokens\" (%u), which counts "
                     "them", rd->path, rd->lineno, opt.system_tokens, in);
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

    fg_sim_set_optional(&tr->reqs[tr->n - 1], &opt);

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
    size_t                       i;
    fg_sim_quoted_t              q;
    const fg_sim_req_t          *r;
    const fg_sim_client_info_t  *c;

    if (fg_sim_quoted_init(&q, tr) != 0) {
        fg_sim_error(err, size, "%s: out of memory", path);
        return -1;
    }

    fp = fg_sim_open_out(path, err, size);
    if (fp == NULL) {
        fg_sim_quoted_free(&q);
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];
        c = &tr->clients[r->client];

        /* microseconds: printed the same by every libc */
        fprintf(fp, "{\"t\": %.6f, \"client\": %s, \"input_tokens\": %u, "
                "\"output_tokens\": %u", r->t, q.clients[r->client],
                r->input_tokens, r->output_tokens);

        if (r->max_output_tokens != r->output_tokens) {
            fprintf(fp, ", \"max_output_tokens\": %u", r->max_output_tokens);
        }

        if (c->has_weight) {
            fprintf(fp, ", \"weight\": %.17g", c->weight);
        }

        fg_sim_write_optional(fp, &q, r, 1);

        fputs("}\n", fp);
    }

    fg_sim_quoted_free(&q);

    return fg_sim_close_out(fp, path, err, size);
}


const char *
fg_sim_status_name(fg_sim_status_e status)
{
    if ((unsigned) status > FG_SIM_SKIPPED) {
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
    size_t                       i;
    fg_sim_quoted_t              q;
    const fg_sim_req_t          *r;
    const fg_sim_result_t       *res;
    const fg_sim_client_info_t  *c;

    if (fg_sim_quoted_init(&q, tr) != 0) {
        fg_sim_error(err, size, "%s: out of memory", path);
        return -1;
    }

    fp = fg_sim_open_out(path, err, size);
    if (fp == NULL) {
        fg_sim_quoted_free(&q);
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        r = &tr->reqs[i];
        res = &results[i];
        c = &tr->clients[r->client];

        fprintf(fp, "{\"id\": %zu, \"client\": %s, \"arrival\": %.6f, ", i,
                q.clients[r->client], r->t);

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

        /* not the key: results get passed around more than traces */
        fg_sim_write_optional(fp, &q, r, 0);

        fputs("}\n", fp);
    }

    fg_sim_quoted_free(&q);

    return fg_sim_close_out(fp, path, err, size);
}


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
        || fg_sim_trace_weight(rd, tr, obj, client) != 0
        || fg_sim_json_optional(rd, tr, obj, &opt) != 0)
    {
        return -1;
    }

    val = json_object_get(obj, "status");
    status = json_is_string(val) ? json_string_value(val) : "";

    for (i = 0; i <= FG_SIM_SKIPPED; i++) {
        if (strcmp(status, fg_sim_status_names[i]) == 0) {
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

    if (fg_sim_trace_add(tr, arrival, client, in, out, out) != 0) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: out of memory", rd->path,
                     rd->lineno);
        return -1;
    }

    fg_sim_set_optional(&tr->reqs[tr->n - 1], &opt);

    return 0;
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


typedef struct {
    uint32_t   interaction;
    int32_t    stage;
    size_t     id;
} fg_sim_stage_key_t;


static int
fg_sim_stage_cmp(const void *a, const void *b)
{
    const fg_sim_stage_key_t  *x = a, *y = b;

    if (x->interaction != y->interaction) {
        return x->interaction < y->interaction ? -1 : 1;
    }

    if (x->stage != y->stage) {
        return x->stage < y->stage ? -1 : 1;
    }

    return (x->id > y->id) - (x->id < y->id);
}


/* heap order: by due time, then by id */
static int
fg_sim_stages_before(const fg_sim_stages_t *st, size_t a, size_t b)
{
    if (st->due[a] != st->due[b]) {
        return st->due[a] < st->due[b];
    }

    return a < b;
}


static void
fg_sim_stages_push(fg_sim_stages_t *st, size_t id)
{
    size_t  i, parent;

    i = st->nheap++;

    while (i > 0) {
        parent = (i - 1) / 2;

        if (!fg_sim_stages_before(st, id, st->heap[parent])) {
            break;
        }

        st->heap[i] = st->heap[parent];
        i = parent;
    }

    st->heap[i] = id;
}


int
fg_sim_stages_init(fg_sim_stages_t *st, const fg_sim_trace_t *tr,
    int open_loop)
{
    size_t               i, j, first, n;
    fg_sim_stage_key_t  *keys;

    memset(st, 0, sizeof(fg_sim_stages_t));

    n = tr->n ? tr->n : 1;

    st->tr = tr;
    st->due = calloc(n, sizeof(double));
    st->wait = calloc(n, sizeof(uint32_t));
    st->failed = calloc(n, 1);
    st->order = calloc(n, sizeof(size_t));
    st->pos = calloc(n, sizeof(size_t));
    st->heap = calloc(n, sizeof(size_t));
    keys = calloc(n, sizeof(fg_sim_stage_key_t));

    if (st->due == NULL || st->wait == NULL || st->failed == NULL
        || st->order == NULL || st->pos == NULL || st->heap == NULL
        || keys == NULL)
    {
        free(keys);
        fg_sim_stages_free(st);
        return -1;
    }

    for (i = 0; i < tr->n; i++) {
        st->due[i] = tr->reqs[i].t;

        if (!open_loop && tr->reqs[i].interaction != 0
            && tr->reqs[i].stage >= 0)
        {
            keys[st->norder].interaction = tr->reqs[i].interaction;
            keys[st->norder].stage = tr->reqs[i].stage;
            keys[st->norder].id = i;
            st->norder++;
        }
    }

    qsort(keys, st->norder, sizeof(fg_sim_stage_key_t), fg_sim_stage_cmp);

    /* each waits for its interaction's requests before its stage */
    first = 0;

    for (j = 0; j < st->norder; j++) {
        if (keys[j].interaction != keys[first].interaction) {
            first = j;
        }

        st->order[j] = keys[j].id;
        st->pos[keys[j].id] = j;

        for (i = first; keys[i].stage < keys[j].stage; i++) {
            st->wait[keys[j].id]++;
        }
    }

    free(keys);

    for (i = 0; i < tr->n; i++) {
        if (st->wait[i] == 0) {
            fg_sim_stages_push(st, i);
        }
    }

    return 0;
}


void
fg_sim_stages_free(fg_sim_stages_t *st)
{
    free(st->due);
    free(st->wait);
    free(st->failed);
    free(st->order);
    free(st->pos);
    free(st->heap);

    memset(st, 0, sizeof(fg_sim_stages_t));
}


int
fg_sim_stages_peek(const fg_sim_stages_t *st, size_t *id, double *due)
{
    if (st->nheap == 0) {
        return 0;
    }

    *id = st->heap[0];
    *due = st->due[st->heap[0]];

    return 1;
}


int
fg_sim_stages_take(fg_sim_stages_t *st, size_t *id, double *due)
{
    size_t  i, child, last;

    *id = st->heap[0];
    *due = st->due[*id];

    last = st->heap[--st->nheap];
    i = 0;

    for ( ;; ) {
        child = 2 * i + 1;

        if (child >= st->nheap) {
            break;
        }

        if (child + 1 < st->nheap
            && fg_sim_stages_before(st, st->heap[child + 1], st->heap[child]))
        {
            child++;
        }

        if (!fg_sim_stages_before(st, st->heap[child], last)) {
            break;
        }

        st->heap[i] = st->heap[child];
        i = child;
    }

    if (st->nheap > 0) {
        st->heap[i] = last;
    }

    return !st->failed[*id];
}


void
fg_sim_stages_done(fg_sim_stages_t *st, size_t id, double t, int ok)
{
    size_t               j, k;
    const fg_sim_req_t  *r, *q;

    r = &st->tr->reqs[id];

    if (r->interaction == 0 || r->stage < 0 || st->norder == 0
        || st->order[st->pos[id]] != id)
    {
        return;
    }

    /* the same interaction's later requests follow it in order */
    for (j = st->pos[id] + 1; j < st->norder; j++) {
        k = st->order[j];
        q = &st->tr->reqs[k];

        if (q->interaction != r->interaction) {
            break;
        }

        if (q->stage == r->stage || st->wait[k] == 0) {
            continue;
        }

        if (!ok) {
            st->failed[k] = 1;
        }

        if (t > st->due[k]) {
            st->due[k] = t;
        }

        if (--st->wait[k] == 0) {
            fg_sim_stages_push(st, k);
        }
    }
}
