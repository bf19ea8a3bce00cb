
/*
 * fairgate: what the load generator's run and its transfers share
 * (private to fg_load_run.c and fg_load_xfer.c).
 */

#ifndef _FG_LOAD_RUN_INT_H_INCLUDED_
#define _FG_LOAD_RUN_INT_H_INCLUDED_


#include <stddef.h>
#include <time.h>

#include <curl/curl.h>

#include "fg_load_run.h"
#include "fg_load_sse.h"
#include "fg_sim_stages.h"


/* a whole answer (not streamed) may be this long at most */
#define FG_LOAD_BODY_MAX   (16 * 1024 * 1024)



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


/* seconds since the run's start */
static inline double
fg_load_now(const fg_load_run_t *run)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (double) (ts.tv_sec - run->start.tv_sec)
           + (ts.tv_nsec - run->start.tv_nsec) / 1e9;
}


/* request i's transfer, its easy handle set up; NULL when out of memory */
fg_load_xfer_t *fg_load_xfer_new(fg_load_run_t *run, size_t i);
void fg_load_xfer_free(fg_load_xfer_t *x);

/*
 * The result of a transfer libcurl is done with (rc its code): the status
 * and its error, when it went out, the tokens (the answer's, or the
 * trace's when not served).
 */
void fg_load_xfer_outcome(fg_load_xfer_t *x, CURLcode rc);


#endif /* _FG_LOAD_RUN_INT_H_INCLUDED_ */
