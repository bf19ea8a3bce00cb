
/*
 * fairgate: what the readers of traces and results share (private to
 * fg_sim_reader.c, fg_sim_trace_read.c and fg_sim_results_read.c).
 *
 * Each check reads one field of a line's object and, when it is wrong,
 * writes "FILE:LINE: problem" to the reader's err and returns -1.
 */

#ifndef _FG_SIM_TRACE_INT_H_INCLUDED_
#define _FG_SIM_TRACE_INT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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


/* path, or "-" for stdin: 0, or -1 with the reason in err */
int fg_sim_reader_open(fg_sim_reader_t *rd, const char *path, char *err,
    size_t size);
void fg_sim_reader_close(fg_sim_reader_t *rd);
int fg_sim_reader_next(fg_sim_reader_t *rd, json_t **obj);

int fg_sim_json_tokens(fg_sim_reader_t *rd, json_t *obj, const char *key,
    uint32_t min, uint32_t *v);
int fg_sim_json_time(fg_sim_reader_t *rd, json_t *obj, const char *key,
    int nullable, double *v);

/* "client" (or "user" when there is no client): its index in tr */
int fg_sim_json_client(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    uint32_t *client);

/* "weight", when given, as the client's: one weight a client */
int fg_sim_json_weight(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    uint32_t client);

int fg_sim_json_optional(fg_sim_reader_t *rd, fg_sim_trace_t *tr,
    json_t *obj, fg_sim_req_t *r);

/* a results line's "cached_tokens", "engine" and "qoe", each when given */
int fg_sim_json_served(fg_sim_reader_t *rd, fg_sim_trace_t *tr, json_t *obj,
    fg_sim_result_t *res);

/* adds the line's request, with the optional fields read into opt */
int fg_sim_reader_add(fg_sim_reader_t *rd, fg_sim_trace_t *tr, double t,
    uint32_t client, uint32_t in, uint32_t out, uint32_t max_out,
    const fg_sim_req_t *opt);


#endif /* _FG_SIM_TRACE_INT_H_INCLUDED_ */
