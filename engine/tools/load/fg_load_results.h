
/*
 * fairgate: what the load generator measured of each request, and the
 * results file it writes (the project's results format, docs/load.md).
 *
 * Each line has the format's fields (id, client, arrival, first_token,
 * finish, input_tokens, output_tokens, status, weight) and the trace
 * line's optional ones but the key, then:
 *
 *   "stream"       whether it was sent streaming (always written)
 *   "scheduled"    when it was due: the trace's t times the time scale
 *   "http_status"  the response's status, 0 when none came
 *   "tokens_from"  "usage" (the server's), "counted" (chunks with
 *                  content, or words of a whole answer, and the prompt
 *                  words sent) or "trace" (not served: the trace's)
 *   "error"        what went wrong, unless ok
 *   "cached_tokens"  prompt tokens the server took from its prefix cache,
 *                  when its usage said (prompt_tokens_details)
 *   "engine"       the x-fairgate-engine response header, when it came
 *   "token_times"  with --token-times, when each output token came
 *   "qoe"          Andes's QoE (fg_qoe.h) of a streamed request with
 *                  expectations (the trace's, else --ttft-target and
 *                  --tokens-per-s), from each chunk with content as it
 *                  came; the reader's clock starts when the request was
 *                  handed to libcurl; 0 unless ok
 *
 * Times are seconds from the start of the run.  Requests never sent (the
 * run was stopped first) have no line.
 */

#ifndef _FG_LOAD_RESULTS_H_INCLUDED_
#define _FG_LOAD_RESULTS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_qoe.h"
#include "fg_sim_trace.h"


typedef enum {
    FG_LOAD_FROM_TRACE = 0,
    FG_LOAD_FROM_USAGE,
    FG_LOAD_FROM_COUNT
} fg_load_from_e;


typedef struct {
    double            sent;             /* < 0: never sent */
    double            first_token;      /* < 0: none */
    double            finish;
    uint32_t          input_tokens;
    uint32_t          output_tokens;
    fg_load_from_e    from;
    fg_sim_status_e   status;
    int               http_status;
    int               stream;
    char             *error;            /* malloc()ed, or NULL */
    char             *engine;           /* malloc()ed, or NULL */
    int64_t           cached_tokens;    /* usage's; -1 when not said */

    double           *token_times;
    uint32_t          ntimes;
    size_t            nalloc_times;

    fg_qoe_t          qoe;              /* when has_qoe: as tokens come */
    unsigned          has_qoe:1;
} fg_load_result_t;


/* appends a token time: 0, or -1 when out of memory */
int fg_load_result_token(fg_load_result_t *res, double t);

/*
 * A streamed request's QoE starts at submit, with the trace request's
 * expectations, else dflt's (0: none); scale: run seconds per trace second.
 */
void fg_load_result_expect(fg_load_result_t *res, const fg_sim_req_t *r,
    const fg_qoe_expect_t *dflt, double scale, double submit);

/* replaces the error message (printf-style) */
void fg_load_result_error(fg_load_result_t *res, const char *fmt, ...);

void fg_load_results_free(fg_load_result_t *res, size_t n);

/* trace order; 0, or -1 with "PATH: problem" in err */
int fg_load_results_write(const fg_sim_trace_t *tr,
    const fg_load_result_t *res, double time_scale, int token_times,
    const char *path, char *err, size_t size);


#endif /* _FG_LOAD_RESULTS_H_INCLUDED_ */
