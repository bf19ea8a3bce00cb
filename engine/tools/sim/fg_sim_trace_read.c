
/*
 * fairgate: reading a trace file (fg_sim_trace.h): a line's keys, each
 * one known, and the trace sorted by arrival once read.
 */


#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "fg_sim_trace_int.h"


/* the optional fields of a request, in the order they are written */
static const char  *fg_sim_optional_keys[] = {
    "key", "user", "app", "interaction", "stage", "system_tokens", "stream",
    "prefix", "prefix_tokens", "model", "ttft_target", "tokens_per_s",
    NULL
};


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
        || fg_sim_json_weight(rd, tr, obj, client) != 0
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

    if (opt.prefix_tokens > in) {
        fg_sim_error(rd->err, rd->size, "%s:%zu: \"prefix_tokens\" (%u) "
                     "exceeds \"input_tokens\" (%u), which counts them",
                     rd->path, rd->lineno, opt.prefix_tokens, in);
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

    return fg_sim_reader_add(rd, tr, t, client, in, out, max_out, &opt);
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
