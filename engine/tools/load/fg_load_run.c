
/*
 * fairgate: the load generator's run: a trace replayed against one URL,
 * each request's transfer (fg_load_xfer.c) started when it is due.
 */


#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "fg_load_run_int.h"
#include "fg_sim_latency.h"


/* the progress line's period, and the longest sleep: stop is seen then */
#define FG_LOAD_TICK       0.25


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
    conf->req.time_scale = 1.0;
    conf->time_scale = 1.0;
    conf->max_seconds = -1.0;
    conf->request_timeout = 600.0;
    conf->max_connections = 1024;
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


/* a transfer is done: its outcome counted, what waited for it released */
static void
fg_load_done(fg_load_run_t *run, fg_load_xfer_t *x, CURLcode rc)
{
    fg_load_result_t  *res;

    res = x->res;

    fg_load_xfer_outcome(x, rc);

    fg_sim_outcome_count(&run->sum->count, res->status);

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
    run->sum->count.errors++;

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

    run->sum->count.skipped++;

    fg_sim_stages_done(&run->deps, i, due, 0);
}


static void
fg_load_start(fg_load_run_t *run, size_t i)
{
    fg_load_xfer_t  *x;

    x = fg_load_xfer_new(run, i);
    if (x == NULL) {
        fg_load_failed(run, i, fg_load_now(run), "out of memory");
        return;
    }

    x->added = fg_load_now(run);

    fg_load_result_expect(x->res, &run->tr->reqs[i], &run->conf->qoe,
                          run->conf->time_scale, x->added);

    if (curl_multi_add_handle(run->multi, x->easy) != CURLM_OK) {
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
            "done %" PRIu64 "  errors %" PRIu64 "  %.1f req/s\033[K%s",
            now, s->sent, run->tr->n, run->active,
            s->count.served + s->count.rejected + s->count.timeout
            + s->count.errors,
            s->count.errors + s->count.timeout,
            now > 0 ? s->sent / now : 0.0, last ? "\n" : "");
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
