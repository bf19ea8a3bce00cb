
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
 * A results file is JSON lines too, one request each, in trace order:
 *
 *     {"id": 0, "client": "alice", "arrival": 1.25, "first_token": 1.31,
 *      "finish": 9.8, "input_tokens": 256, "output_tokens": 256,
 *      "status": "ok", "weight": 2}
 *
 * status is ok, rejected or timeout; first_token and finish are null
 * unless ok.  weight is there when the trace gave the client one, and is
 * read as in traces: default 1, the same on every line of a client.
 * Readers let other keys be.
 */

#ifndef _FG_SIM_TRACE_H_INCLUDED_
#define _FG_SIM_TRACE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


typedef struct {
    char      *name;
    double     weight;
    unsigned   has_weight:1;
    size_t     weight_line;          /* where the weight was given */
} fg_sim_client_info_t;


typedef struct {
    double     t;
    uint32_t   client;               /* index in the trace's clients */
    uint32_t   input_tokens;
    uint32_t   output_tokens;
    uint32_t   max_output_tokens;
} fg_sim_req_t;


typedef struct {
    fg_sim_req_t          *reqs;
    size_t                 n;
    size_t                 nalloc;

    fg_sim_client_info_t  *clients;
    uint32_t               nclients;
    uint32_t               nalloc_clients;
} fg_sim_trace_t;


typedef enum {
    FG_SIM_OK = 0,
    FG_SIM_REJECTED,
    FG_SIM_TIMEOUT
} fg_sim_status_e;


/* the outcome of trace request i is results[i] */
typedef struct {
    double            first_token;
    double            finish;
    fg_sim_status_e   status;
} fg_sim_result_t;


/* tokens of one request: at most this, so reservations stay far in range */
#define FG_SIM_MAX_TOKENS  100000000


void fg_sim_trace_init(fg_sim_trace_t *tr);
void fg_sim_trace_free(fg_sim_trace_t *tr);

/* the index of client name, added if new; -1 when out of memory */
int64_t fg_sim_trace_client(fg_sim_trace_t *tr, const char *name);

/* appends a request; -1 when out of memory */
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

const char *fg_sim_status_name(fg_sim_status_e status);


#endif /* _FG_SIM_TRACE_H_INCLUDED_ */
