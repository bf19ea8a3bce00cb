
/*
 * fairgate: the load generator's run: a trace replayed against one URL.
 */


#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fg_load_run.h"
#include "fg_load_sse.h"
#include "fg_sim_latency.h"
#include "fg_sim_stages.h"


/* a whole answer (not streamed) may be this long at most */
#define FG_LOAD_BODY_MAX   (16 * 1024 * 1024)

/* the progress line's period, and the longest sleep: stop is seen then */
#define FG_LOAD_TICK       0.25


typedef enum {
    FG_LOAD_MODE_NONE = 0,
    FG_LOAD_MODE_SSE,
    FG_LOAD_MODE_BODY
} fg_load_mode_e;


typedef struct fg_load_run_s  fg_load_run_t;


/* one request in flight */
typedef struct fg_load_xfer_s  fg_load_xfer_t;

struct fg_load_xfer_s {
    fg_load_xfer_t      *prev;         /* the run's list of those in flight */
    fg_load_xfer_t      *next;
    fg_load_run_t       *run;
    size_t               id;
    CURL                *easy;
    struct curl_slist   *headers;
    char                *body;
    fg_load_result_t    *res;
    fg_load_sse_t        sse;
    char                *buf;          /* a body that is not a stream */
    size_t               len;
    size_t               cap;
    double               added;
    double               now;          /* of the read being parsed */
    double               last;         /* the last byte, < 0 before */
    fg_load_mode_e       mode;
    unsigned             too_big:1;
    unsigned             token_times:1;
    unsigned             oom:1;
    char                 errbuf[CURL_ERROR_SIZE];
};


struct fg_load_run_s {
    const fg_load_conf_t   *conf;
    const fg_sim_trace_t   *tr;
    fg_load_result_t       *res;
    fg_load_summary_t      *sum;
    CURLM                  *multi;
    struct timespec         start;
    fg_load_xfer_t         *inflight;
    fg_sim_stages_t         deps;           /* the requests to come */
    size_t                  active;
    double                  last_progress;
};


static double
fg_load_now(const fg_load_run_t *run)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (double) (ts.tv_sec - run->start.tv_sec)
           + (ts.tv_nsec - run->start.tv_nsec) / 1e9;
}


/* sleeps until t seconds after the start, whatever signals come */
static void
fg_load_sleep_until(const fg_load_run_t *run, double t)
{
    struct timespec  ts;

    ts.tv_sec = run->start.tv_sec + (time_t) floor(t);
    ts.tv_nsec = run->start.tv_nsec
                 + (long) ((t - floor(t)) * 1e9);

    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)
           == EINTR)
    {
        /* void */
    }
}


static int
fg_load_cmp_double(const void *a, const void *b)
{
    double  x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}


void
fg_load_conf_init(fg_load_conf_t *conf)
{
    memset(conf, 0, sizeof(fg_load_conf_t));

    conf->req.model = "default";
    conf->req.stream = 1;
    conf->req.ignore_eos = 1;
    conf->time_scale = 1.0;
    conf->max_seconds = -1.0;
    conf->request_timeout = 600.0;
    conf->max_connections = 1024;
}


static void
fg_load_on_token(void *data)
{
    fg_load_xfer_t  *x = data;

    if (x->res->first_token < 0.0) {
        x->res->first_token = x->now;
    }

    if (x->token_times && fg_load_result_token(x->res, x->now) != 0) {
        x->oom = 1;
    }
}


static size_t
fg_load_write(char *p, size_t size, size_t n, void *data)
{
    long             code;
    char            *ct, *more;
    size_t           len, cap;
    fg_load_xfer_t  *x = data;

    len = size * n;
    x->now = fg_load_now(x->run);
    x->last = x->now;

    if (x->mode == FG_LOAD_MODE_NONE) {
        code = 0;
        ct = NULL;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);

        /* an error answers in JSON even to a request that streams */
        x->mode = code / 100 == 2 && ct != NULL
                  && strncasecmp(ct, "text/event-stream", 17) == 0
                  ? FG_LOAD_MODE_SSE : FG_LOAD_MODE_BODY;

        if (x->mode == FG_LOAD_MODE_BODY && code / 100 == 2) {
            x->res->first_token = x->now;
        }
    }

    if (x->mode == FG_LOAD_MODE_SSE) {
        /* 0 aborts the transfer: the stream is broken, no need to wait */
        return fg_load_sse_feed(&x->sse, p, len) == 0 ? len : 0;
    }

    if (x->len + len > FG_LOAD_BODY_MAX) {
        x->too_big = 1;
        return 0;
    }

    if (x->len + len + 1 > x->cap) {
        for (cap = x->cap ? x->cap : 4096; cap < x->len + len + 1; cap *= 2) {
            /* void */
        }

        more = realloc(x->buf, cap);
        if (more == NULL) {
            x->oom = 1;
            return 0;
        }

        x->buf = more;
        x->cap = cap;
    }

    memcpy(x->buf + x->len, p, len);
    x->len += len;
    x->buf[x->len] = '\0';

    return len;
}


static void
fg_load_xfer_free(fg_load_xfer_t *x)
{
    if (x->easy != NULL) {
        curl_easy_cleanup(x->easy);
    }

    curl_slist_free_all(x->headers);
    free(x->body);
    free(x->buf);
    fg_load_sse_free(&x->sse);
    free(x);
}


/* the answer's error message and code, if it is OpenAI's error body */
static void
fg_load_error_body(fg_load_xfer_t *x, const char **message,
    const char **code, json_t **root)
{
    json_t  *e, *m, *c;

    *message = NULL;
    *code = NULL;
    *root = x->buf ? json_loadb(x->buf, x->len, 0, NULL) : NULL;

    e = json_object_get(*root, "error");
    m = json_object_get(e, "message");
    c = json_object_get(e, "code");

    *message = json_is_string(m) ? json_string_value(m) : NULL;
    *code = json_is_string(c) ? json_string_value(c) : NULL;
}


/* whitespace-separated words: the tokens of an answer without usage */
static uint32_t
fg_load_words(const char *s)
{
    int       in;
    uint32_t  n;

    for (n = 0, in = 0; *s; s++) {
        if (isspace((unsigned char) *s)) {
            in = 0;

        } else if (!in) {
            in = 1;
            n++;
        }
    }

    return n;
}


/* a 2xx answer that is not a stream: an OpenAI completion */
static void
fg_load_body_done(fg_load_xfer_t *x)
{
    json_t            *root, *choice, *msg, *text, *usage, *p, *c;
    json_error_t       jerr;
    fg_load_result_t  *res;

    res = x->res;

    root = json_loadb(x->buf ? x->buf : "", x->len, 0, &jerr);
    if (root == NULL) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "the answer is not JSON: %s", jerr.text);
        return;
    }

    choice = json_array_get(json_object_get(root, "choices"), 0);
    msg = json_object_get(choice, "message");
    text = json_is_object(msg) ? json_object_get(msg, "content")
                               : json_object_get(choice, "text");

    if (!json_is_object(choice) || !(json_is_string(text)
                                     || json_is_null(text)))
    {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "the answer has no choices[0] with "
                             "content");
        json_decref(root);
        return;
    }

    usage = json_object_get(root, "usage");
    p = json_object_get(usage, "prompt_tokens");
    c = json_object_get(usage, "completion_tokens");

    if (json_is_integer(p) && json_is_integer(c)
        && json_integer_value(p) >= 0 && json_integer_value(c) >= 0
        && json_integer_value(p) <= FG_SIM_MAX_TOKENS
        && json_integer_value(c) <= FG_SIM_MAX_TOKENS)
    {
        res->input_tokens = (uint32_t) json_integer_value(p);
        res->output_tokens = (uint32_t) json_integer_value(c);
        res->from = FG_LOAD_FROM_USAGE;

    } else {
        /* the prompt's words were its tokens (fg_load_req.h) */
        res->input_tokens = x->run->tr->reqs[x->id].input_tokens;
        res->output_tokens = json_is_string(text)
                             ? fg_load_words(json_string_value(text)) : 0;
        res->from = FG_LOAD_FROM_COUNT;
    }

    res->status = FG_SIM_OK;

    json_decref(root);
}


static void
fg_load_sse_done(fg_load_xfer_t *x)
{
    fg_load_result_t  *res;

    res = x->res;

    if (fg_load_sse_finish(&x->sse) != 0) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "stream: %s", x->sse.err);
        return;
    }

    if (x->sse.prompt_tokens >= 0
        && x->sse.prompt_tokens <= FG_SIM_MAX_TOKENS
        && x->sse.completion_tokens <= FG_SIM_MAX_TOKENS)
    {
        res->input_tokens = (uint32_t) x->sse.prompt_tokens;
        res->output_tokens = (uint32_t) x->sse.completion_tokens;
        res->from = FG_LOAD_FROM_USAGE;

    } else {
        res->input_tokens = x->run->tr->reqs[x->id].input_tokens;
        res->output_tokens = (uint32_t) x->sse.tokens;
        res->from = FG_LOAD_FROM_COUNT;
    }

    res->status = FG_SIM_OK;
}


static void
fg_load_unlink(fg_load_run_t *run, fg_load_xfer_t *x)
{
    if (x->prev != NULL) {
        x->prev->next = x->next;

    } else {
        run->inflight = x->next;
    }

    if (x->next != NULL) {
        x->next->prev = x->prev;
    }

    run->active--;
}


static void
fg_load_done(fg_load_run_t *run, fg_load_xfer_t *x, CURLcode rc)
{
    long               code;
    double             now;
    json_t            *root;
    curl_off_t         pre;
    const char        *message, *ecode;
    fg_load_result_t  *res;

    res = x->res;
    now = fg_load_now(run);

    code = 0;
    pre = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(x->easy, CURLINFO_PRETRANSFER_TIME_T, &pre);

    /* when the request went out: after the connection, or libcurl's queue */
    res->sent = x->added + (pre > 0 ? pre / 1e6 : 0.0);
    res->finish = x->last >= 0.0 ? x->last : now;
    res->http_status = (int) code;

    if (rc == CURLE_WRITE_ERROR && x->sse.failed) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "stream: %s", x->sse.err);

    } else if (rc == CURLE_WRITE_ERROR && x->too_big) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "an answer over %d bytes",
                             FG_LOAD_BODY_MAX);

    } else if (x->oom) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "out of memory");

    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        res->status = FG_SIM_TIMEOUT;
        fg_load_result_error(res, "no complete answer in %g s",
                             run->conf->request_timeout);

    } else if (rc != CURLE_OK) {
        res->status = FG_SIM_ERROR;
        fg_load_result_error(res, "%s", x->errbuf[0] ? x->errbuf
                                                     : curl_easy_strerror(rc));

    } else if (code / 100 != 2) {
        fg_load_error_body(x, &message, &ecode, &root);

        if (code == 429 || (code == 503 && ecode != NULL
                            && strcmp(ecode, "queue_full") == 0))
        {
            res->status = FG_SIM_REJECTED;

        } else if (code == 503 && ecode != NULL
                   && strcmp(ecode, "queue_timeout") == 0)
        {
            res->status = FG_SIM_TIMEOUT;

        } else {
            res->status = FG_SIM_ERROR;
        }

        fg_load_result_error(res, "HTTP %ld%s%s", code, message ? ": " : "",
                             message ? message : "");
        json_decref(root);

    } else if (x->mode == FG_LOAD_MODE_SSE) {
        fg_load_sse_done(x);

    } else {
        fg_load_body_done(x);
    }

    if (res->status == FG_SIM_OK) {
        /* a stream without content: its first token is its end */
        if (res->first_token < 0.0) {
            res->first_token = res->finish;
        }

        run->sum->served++;

    } else {
        res->input_tokens = run->tr->reqs[x->id].input_tokens;
        res->output_tokens = run->tr->reqs[x->id].output_tokens;
        res->from = FG_LOAD_FROM_TRACE;
        res->first_token = -1.0;

        switch (res->status) {
        case FG_SIM_REJECTED:
            run->sum->rejected++;
            break;
        case FG_SIM_TIMEOUT:
            run->sum->timeout++;
            break;
        default:
            run->sum->errors++;
        }
    }

    /* on the trace's clock: releases what waited for it */
    fg_sim_stages_done(&run->deps, x->id, res->finish / run->conf->time_scale,
                       res->status == FG_SIM_OK);

    curl_multi_remove_handle(run->multi, x->easy);
    fg_load_unlink(run, x);
    fg_load_xfer_free(x);
}


/* a request that could not even be started */
static void
fg_load_failed(fg_load_run_t *run, size_t i, double now, const char *why)
{
    fg_load_result_t  *res;

    res = &run->res[i];

    res->sent = now;
    res->status = FG_SIM_ERROR;
    res->input_tokens = run->tr->reqs[i].input_tokens;
    res->output_tokens = run->tr->reqs[i].output_tokens;
    res->from = FG_LOAD_FROM_TRACE;
    fg_load_result_error(res, "%s", why);

    run->sum->sent++;
    run->sum->errors++;

    fg_sim_stages_done(&run->deps, i, now / run->conf->time_scale, 0);
}


/* not sent: a lower stage of its interaction failed */
static void
fg_load_skip(fg_load_run_t *run, size_t i, double due)
{
    fg_load_result_t  *res;

    res = &run->res[i];

    res->sent = due * run->conf->time_scale;
    res->status = FG_SIM_SKIPPED;
    res->input_tokens = run->tr->reqs[i].input_tokens;
    res->output_tokens = run->tr->reqs[i].output_tokens;
    res->from = FG_LOAD_FROM_TRACE;
    res->stream = fg_load_req_stream(&run->conf->req, &run->tr->reqs[i]);
    fg_load_result_error(res, "not sent: an earlier stage of its "
                         "interaction failed");

    run->sum->skipped++;

    fg_sim_stages_done(&run->deps, i, due, 0);
}


static void
fg_load_start(fg_load_run_t *run, size_t i)
{
    CURL                  *e;
    fg_load_xfer_t        *x;
    const fg_load_conf_t  *conf;

    conf = run->conf;

    x = calloc(1, sizeof(fg_load_xfer_t));
    if (x == NULL) {
        fg_load_failed(run, i, fg_load_now(run), "out of memory");
        return;
    }

    x->run = run;
    x->id = i;
    x->res = &run->res[i];
    x->last = -1.0;
    x->token_times = conf->token_times;
    x->res->first_token = -1.0;
    x->res->stream = fg_load_req_stream(&conf->req, &run->tr->reqs[i]);

    fg_load_sse_init(&x->sse, fg_load_on_token, x);

    x->body = fg_load_req_body(&conf->req, run->tr, i);
    x->headers = fg_load_req_headers(&conf->req, run->tr, i);
    x->easy = e = curl_easy_init();

    if (x->body == NULL || x->headers == NULL || e == NULL) {
        fg_load_xfer_free(x);
        fg_load_failed(run, i, fg_load_now(run), "out of memory");
        return;
    }

    curl_easy_setopt(e, CURLOPT_URL, conf->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long) strlen(x->body));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fg_load_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "fairgate-load");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);

    /* the given URL and nothing else: no proxy, no redirect, http(s) */
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");

    if (conf->request_timeout > 0.0) {
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                         (long) ceil(conf->request_timeout * 1000));
    }

    x->added = fg_load_now(run);

    if (curl_multi_add_handle(run->multi, e) != CURLM_OK) {
        fg_load_xfer_free(x);
        fg_load_failed(run, i, fg_load_now(run), "libcurl refused the "
                       "transfer");
        return;
    }

    /* until it completes; fg_load_done() says when it really went out */
    x->res->sent = x->added;
    x->next = run->inflight;

    if (run->inflight != NULL) {
        run->inflight->prev = x;
    }

    run->inflight = x;
    run->active++;
    run->sum->sent++;
}


static void
fg_load_progress(fg_load_run_t *run, double now, int last)
{
    fg_load_summary_t  *s;

    if (!run->conf->progress
        || (!last && now - run->last_progress < FG_LOAD_TICK))
    {
        return;
    }

    run->last_progress = now;
    s = run->sum;

    fprintf(stderr, "\rfairgate-load %7.1fs  sent %zu/%zu  in flight %zu  "
            "done %zu  errors %zu  %.1f req/s\033[K%s", now, s->sent,
            run->tr->n, run->active,
            s->served + s->rejected + s->timeout + s->errors,
            s->errors + s->timeout, now > 0 ? s->sent / now : 0.0,
            last ? "\n" : "");
}


/* what is still in flight when the run stops: timeouts */
static void
fg_load_cut(fg_load_run_t *run, const char *why)
{
    size_t           id;
    fg_load_xfer_t  *x;

    while ((x = run->inflight) != NULL) {
        id = x->id;
        run->sum->cut++;

        /* libcurl would have timed it out, had it been given that long */
        fg_load_done(run, x, CURLE_OPERATION_TIMEDOUT);
        fg_load_result_error(&run->res[id], "%s", why);
    }
}


/* releases what is due, moves the transfers, and sleeps until more is */
static void
fg_load_loop(fg_load_run_t *run)
{
    int                    pending;
    double                 now, due, wait;
    size_t                 id;
    CURLMsg               *msg;
    fg_load_xfer_t        *x;
    const fg_load_conf_t  *conf;

    conf = run->conf;

    for ( ;; ) {
        now = fg_load_now(run);

        if (now >= conf->max_seconds || (conf->stop && *conf->stop)) {
            break;
        }

        while (fg_sim_stages_peek(&run->deps, &id, &due)
               && due * conf->time_scale <= now)
        {
            if (fg_sim_stages_take(&run->deps, &id, &due)) {
                fg_load_start(run, id);

            } else {
                fg_load_skip(run, id, due);
            }
        }

        curl_multi_perform(run->multi, &pending);

        while ((msg = curl_multi_info_read(run->multi, &pending)) != NULL) {
            if (msg->msg == CURLMSG_DONE) {
                x = NULL;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &x);
                fg_load_done(run, x, msg->data.result);
            }
        }

        /* what waits for an earlier stage is released by its outcome */
        if (!fg_sim_stages_peek(&run->deps, &id, &due) && run->active == 0) {
            break;
        }

        now = fg_load_now(run);
        fg_load_progress(run, now, 0);

        wait = fmin(FG_LOAD_TICK, conf->max_seconds - now);
        due = fg_sim_stages_peek(&run->deps, &id, &due)
              ? due * conf->time_scale : HUGE_VAL;
        wait = fmin(wait, due - now);

        if (wait <= 0.0) {
            continue;
        }

        /* the poll counts in milliseconds: the rest is slept exactly */
        if (wait < 0.001) {
            if (due - now <= wait) {
                fg_load_sleep_until(run, due);
            }

            continue;
        }

        curl_multi_poll(run->multi, NULL, 0, (int) (wait * 1000), NULL);
    }
}


/* the summary's requests not sent, and how late the others went out */
static int
fg_load_lags(fg_load_run_t *run)
{
    double                   due, lag, *lags;
    size_t                   i, nlag;
    fg_load_summary_t       *sum;
    const fg_load_result_t  *res;

    sum = run->sum;
    res = run->res;

    lags = malloc((run->tr->n + 1) * sizeof(double));
    if (lags == NULL) {
        return -1;
    }

    lag = 0.0;
    nlag = 0;

    for (i = 0; i < run->tr->n; i++) {
        if (res[i].sent < 0.0) {
            sum->unsent++;
            continue;
        }

        if (res[i].status == FG_SIM_SKIPPED) {
            continue;
        }

        /* its trace time, or when its earlier stages let it go */
        due = run->deps.due[i] * run->conf->time_scale;
        lags[nlag] = fabs(res[i].sent - due);
        sum->lag_max = fmax(sum->lag_max, lags[nlag]);
        lag += lags[nlag++];
    }

    qsort(lags, nlag, sizeof(double), fg_load_cmp_double);

    sum->lag_mean = nlag ? lag / nlag : 0.0;
    sum->lag_p99 = fg_sim_percentile(lags, nlag, 0.99);

    free(lags);

    return 0;
}


int
fg_load_run(const fg_load_conf_t *conf, const fg_sim_trace_t *tr,
    fg_load_result_t *res, fg_load_summary_t *sum, char *err, size_t size)
{
    int            rc;
    size_t         i;
    fg_load_run_t  run;

    memset(&run, 0, sizeof(fg_load_run_t));
    memset(sum, 0, sizeof(fg_load_summary_t));

    run.conf = conf;
    run.tr = tr;
    run.res = res;
    run.sum = sum;
    run.last_progress = -1.0;

    for (i = 0; i < tr->n; i++) {
        res[i].sent = -1.0;
        res[i].first_token = -1.0;
    }

    if (fg_sim_stages_init(&run.deps, tr, conf->open_loop_stages) != 0) {
        snprintf(err, size, "out of memory");
        return -1;
    }

    run.multi = curl_multi_init();
    if (run.multi == NULL) {
        fg_sim_stages_free(&run.deps);
        snprintf(err, size, "curl_multi_init() failed");
        return -1;
    }

    curl_multi_setopt(run.multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                      conf->max_connections);
    curl_multi_setopt(run.multi, CURLMOPT_MAXCONNECTS,
                      conf->max_connections);

    clock_gettime(CLOCK_MONOTONIC, &run.start);

    fg_load_loop(&run);

    fg_load_cut(&run, conf->stop && *conf->stop
                      ? "in flight when the run was interrupted"
                      : "in flight at --max-seconds");

    sum->elapsed = fg_load_now(&run);
    fg_load_progress(&run, sum->elapsed, 1);

    curl_multi_cleanup(run.multi);

    rc = fg_load_lags(&run);

    fg_sim_stages_free(&run.deps);

    if (rc != 0) {
        snprintf(err, size, "out of memory");
        return -1;
    }

    return 0;
}
