
/*
 * fairgate: the simulator's traces and results files.
 *
 * A trace is JSON lines, one request each:
 *
 *     {"t": 1.25, "client": "alice", "input_tokens": 256,
 *      "output_tokens": 256, "max_output_tokens": 512, "weight": 2}
 *
 * t is the arrival in seconds; output_tokens the length the request will
 * generate; max_output_tokens (default output_tokens) what admission
 * reserves; weight (default 1) the client's, and the same on every line
 * that gives it.  Lines need not be sorted: a trace is sorted by arrival
 * once read, ties keeping file order.
 *
 * Optional fields, for the load generator and the multi-app schedulers:
 * "key" (the API key it is sent with), "user", "app", "interaction"
 * (strings), "stage" (an integer >= 0: the request's place in its
 * interaction), "system_tokens" (how many of input_tokens are the system
 * prompt: fewer than input_tokens) and "stream" (true or false).  A line
 * without "client" takes its "user" as client.
 *
 * Shared prefixes: "prefix" (a string, a shared-prefix id) and
 * "prefix_tokens" (an integer in [1, input_tokens]), given together: the
 * first prefix_tokens input tokens are the same in every request with
 * that id, the rest of the input is the request's own.  An id used with
 * different prefix_tokens means the shorter is a prefix of the longer.
 * The simulator's wsc and OIT read user, app, interaction, stage and
 * system_tokens; both tools replay an interaction's stages as dependent
 * (fg_sim_stages.h).
 *
 * Several models (--models, docs/multi-model.md): "model" (a string, the
 * name of a model of the models file; absent: the engine's one model).
 *
 * QoE expectations (Andes, fg_qoe.h): "ttft_target" (seconds, the time to
 * the first token the reader expects) and "tokens_per_s" (the reader's
 * speed), each a number > 0 and < 1e6.  A request with either has a QoE;
 * without ttft_target the target is FG_SIM_QOE_TTFT, without tokens_per_s
 * only the first token's lateness counts.
 *
 * A results file is JSON lines too, one request each, in trace order:
 *
 *     {"id": 0, "client": "alice", "arrival": 1.25, "first_token": 1.31,
 *      "finish": 9.8, "input_tokens": 256, "output_tokens": 256,
 *      "status": "ok", "weight": 2}
 *
 * status is ok, rejected, timeout, error or skipped; first_token and
 * finish are null unless ok.  skipped: never sent, as an earlier stage of
 * its interaction failed (dependent stages, fg_sim_stages.h); it is not
 * served, and counts toward neither throughput nor latency.  arrival is
 * when the request went out (or was skipped): its trace time, or later
 * when it waited for its interaction's earlier stages.  weight is there
 * when the trace gave the client one, and is read as in traces: default
 * 1, the same on every line of a client.
 * The trace's optional fields may follow, and are read as in traces;
 * then "cached_tokens" (an integer: prompt tokens the engine took from its
 * prefix cache) and "engine" (a string naming the engine that served it),
 * each when known; "qoe" (a number in [0, 1], Andes's QoE of the answer,
 * for the requests with expectations: 0 for one that got no answer, none
 * for one skipped); "preemptions" (an integer: times the engine preempted
 * it, under --engine-sched andes); "token_times" (an array of seconds,
 * when each output token came) is read by fg_sim_results_read_times().
 * Readers let other keys be.
 */

#ifndef _FG_SIM_TRACE_H_INCLUDED_
#define _FG_SIM_TRACE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>


typedef struct {
    char      *name;
    double     weight;
    unsigned   has_weight:1;
    size_t     weight_line;          /* where the weight was given */
} fg_sim_client_info_t;


/*
 * No padding and every field set (fg_sim_trace_add() clears the optional
 * ones), so that requests compare with memcmp().
 */
typedef struct {
    double     t;
    uint32_t   client;               /* index in the trace's clients */
    uint32_t   input_tokens;
    uint32_t   output_tokens;
    uint32_t   max_output_tokens;

    /* optional: strings are indices in the trace's strings, 0 for none */
    uint32_t   key;
    uint32_t   user;
    uint32_t   app;
    uint32_t   interaction;
    uint32_t   system_tokens;        /* of input_tokens, 0 when not given */
    int32_t    stage;                /* -1 when not given */
    int32_t    stream;               /* 0, 1, or -1 when not given */
    uint32_t   prefix;               /* a shared-prefix id's string */
    uint32_t   prefix_tokens;        /* of input_tokens, 0 without prefix */
    uint32_t   model;                /* the model it asks for; 0: the one */

    /* Andes's expectations (fg_qoe.h): 0 when not given */
    double     ttft_target;          /* s */
    double     tokens_per_s;         /* the reader's speed */
} fg_sim_req_t;


typedef struct {
    fg_sim_req_t          *reqs;
    size_t                 n;
    size_t                 nalloc;

    fg_sim_client_info_t  *clients;
    uint32_t               nclients;
    size_t                 nalloc_clients;

    /* the optional fields' strings, each once: strs[0] is NULL */
    char                 **strs;
    uint32_t               nstrs;
    size_t                 nalloc_strs;
    uint32_t              *str_index;    /* open addressing: index or 0 */
    uint32_t               str_slots;    /* a power of 2, or 0 */
} fg_sim_trace_t;


typedef enum {
    FG_SIM_OK = 0,
    FG_SIM_REJECTED,
    FG_SIM_TIMEOUT,
    FG_SIM_ERROR,                   /* the load generator's: no answer */
    FG_SIM_SKIPPED                  /* not sent: an earlier stage failed */
} fg_sim_status_e;


/*
 * requests by outcome, the simulator's figures and the load's summary:
 * by name, or by status (the names in fg_sim_status_e's order)
 */
typedef union {
    struct {
        uint64_t   served;
        uint64_t   rejected;
        uint64_t   timeout;
        uint64_t   errors;          /* no answer (load generator) */
        uint64_t   skipped;         /* an earlier stage failed */
    };
    uint64_t       by_status[FG_SIM_SKIPPED + 1];
} fg_sim_outcomes_t;


/*
 * arr with room for need elements of size: its allocation, *nalloc of
 * them, doubled (first the first time) when short; NULL when out of
 * memory, arr left as it was
 */
static inline void *
fg_sim_grow(void *arr, size_t need, size_t *nalloc, size_t size,
    size_t first)
{
    size_t   n;
    void    *more;

    if (need <= *nalloc) {
        return arr;
    }

    n = *nalloc ? 2 * *nalloc : first;

    more = realloc(arr, n * size);
    if (more != NULL) {
        *nalloc = n;
    }

    return more;
}


/* a status out of the enum's range counts as an error */
static inline void
fg_sim_outcome_count(fg_sim_outcomes_t *o, fg_sim_status_e status)
{
    o->by_status[(unsigned) status <= FG_SIM_SKIPPED ? status
                                                     : FG_SIM_ERROR]++;
}


/* the outcome of trace request i is results[i] */
typedef struct {
    double            first_token;
    double            finish;
    fg_sim_status_e   status;

    /* optional: prompt tokens the engine took from its prefix cache */
    uint32_t          cached_tokens;
    unsigned          has_cached:1;

    /* optional: the engine that served it, a string of the trace; 0 none */
    uint32_t          engine;

    /* optional: Andes's QoE, for requests with expectations */
    double            qoe;
    unsigned          has_qoe:1;

    /* optional: times it was preempted, under --engine-sched andes */
    uint32_t          preemptions;
    unsigned          has_preemptions:1;
} fg_sim_result_t;


/*
 * Per-token times read from results: request i's are times[start[i]] up
 * to, not including, times[start[i + 1]].
 */
typedef struct {
    double    *times;
    size_t    *start;
    size_t     n;                   /* requests */
} fg_sim_token_times_t;


/* JSON-quoted copies of a trace's client names and strings, for writers */
typedef struct {
    char      **clients;
    char      **strs;                /* strs[0] is NULL */
    uint32_t    nclients;
    uint32_t    nstrs;
} fg_sim_quoted_t;


/* tokens of one request: at most this, so reservations stay far in range */
#define FG_SIM_MAX_TOKENS  100000000

/* the TTFT target of a request that gives only tokens_per_s (Andes's) */
#define FG_SIM_QOE_TTFT    1.0

/* an interaction's stages: at most this many */
#define FG_SIM_MAX_STAGE   1000000


/* printf-style into err, size bytes: how the library reports a problem */
void fg_sim_error(char *err, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void fg_sim_trace_init(fg_sim_trace_t *tr);
void fg_sim_trace_free(fg_sim_trace_t *tr);

/* the index of client name, added if new; -1 when out of memory */
int64_t fg_sim_trace_client(fg_sim_trace_t *tr, const char *name);

/*
 * String s's index (> 0) in the trace's strings, added if new; -1 when out
 * of memory.
 */
int64_t fg_sim_trace_str(fg_sim_trace_t *tr, const char *s);

/* string i, or NULL for 0 */
const char *fg_sim_trace_str_get(const fg_sim_trace_t *tr, uint32_t i);

/* appends a request, its optional fields absent; -1 when out of memory */
int fg_sim_trace_add(fg_sim_trace_t *tr, double t, uint32_t client,
    uint32_t input_tokens, uint32_t output_tokens,
    uint32_t max_output_tokens);

/* by arrival, ties in the order they were added */
int fg_sim_trace_sort(fg_sim_trace_t *tr);

/* each returns 0, or -1 with "FILE:LINE: problem" in err */
int fg_sim_trace_read(fg_sim_trace_t *tr, const char *path, char *err,
    size_t size);
int fg_sim_trace_write(const fg_sim_trace_t *tr, const char *path,
    char *err, size_t size);

int fg_sim_results_write(const fg_sim_trace_t *tr,
    const fg_sim_result_t *results, const char *path, char *err,
    size_t size);

/* fills an empty trace from the results' requests, and *results (malloc) */
int fg_sim_results_read(fg_sim_trace_t *tr, fg_sim_result_t **results,
    const char *path, char *err, size_t size);

/* the same, and each request's "token_times" (none when absent) */
int fg_sim_results_read_times(fg_sim_trace_t *tr, fg_sim_result_t **results,
    fg_sim_token_times_t *times, const char *path, char *err, size_t size);
void fg_sim_token_times_free(fg_sim_token_times_t *times);

const char *fg_sim_status_name(fg_sim_status_e status);

/* 0, or -1 when out of memory */
int fg_sim_quoted_init(fg_sim_quoted_t *q, const fg_sim_trace_t *tr);
void fg_sim_quoted_free(fg_sim_quoted_t *q);

/* path for writing, or "-" for stdout: NULL with "PATH: reason" in err */
FILE *fg_sim_write_open(const char *path, char *err, size_t size);

/* closes what fg_sim_write_open() opened (stdout: flushes); 0 or -1 */
int fg_sim_write_close(FILE *fp, const char *path, char *err, size_t size);

/* q of tr's names, and path open for writing; NULL with q freed */
FILE *fg_sim_write_start(fg_sim_quoted_t *q, const fg_sim_trace_t *tr,
    const char *path, char *err, size_t size);

/*
 * a results line up to its status, and the client's weight: "id" i,
 * "client", "arrival", "first_token" and "finish" (null unless ok),
 * "input_tokens", "output_tokens", "status"; the caller adds the rest and
 * the closing brace
 */
void fg_sim_write_result(FILE *fp, const fg_sim_quoted_t *q,
    const fg_sim_trace_t *tr, size_t i, double arrival,
    fg_sim_status_e status, double first_token, double finish,
    uint32_t input_tokens, uint32_t output_tokens);

/* the request's optional fields, each as ", \"name\": value" */
void fg_sim_write_optional(FILE *fp, const fg_sim_quoted_t *q,
    const fg_sim_req_t *r, int with_key);

/* whether the request has QoE expectations: 1, its ttft and speed set */
int fg_sim_req_expect(const fg_sim_req_t *r, double *ttft, double *speed);


#endif /* _FG_SIM_TRACE_H_INCLUDED_ */
