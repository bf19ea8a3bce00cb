
/*
 * fairgate: the reading of an upstream's response for its token usage, in
 * drop-in mode; pure C so that it is fuzzed and tested without nginx
 * (ngx_module/request/ngx_http_fairgate_filter.c feeds it the body, or a
 * stream's lines).
 */

#ifndef FG_USAGE_H
#define FG_USAGE_H

#include <stddef.h>
#include <stdint.h>


/*
 * The upstream's own count, when it sent one, or the part of it an event
 * holds (Anthropic's stream says its input at its start and its output at
 * its end).  in is all the input: Anthropic's input_tokens do not count the
 * prompt cache's reads and writes, which are added to them; cached is the
 * part of it read from a prompt cache (prompt_tokens_details or
 * input_tokens_details.cached_tokens, cache_read_input_tokens).
 */
typedef struct {
    uint32_t   in;
    uint32_t   out;
    uint32_t   cached;
    unsigned   found:1;      /* in and out */
    unsigned   in_set:1;
    unsigned   out_set:1;
    unsigned   cached_set:1;
} fg_usage_t;


/*
 * What the gateway saw of a request, that bounds the usage its upstream
 * may report (docs/dropin.md): the request body's bytes, the response's,
 * and the output the request allowed (its max tokens times its choices)
 * when it set one.
 */
typedef struct {
    uint64_t   body_bytes;
    uint64_t   bytes_out;
    uint32_t   max_out;
    unsigned   max_out_set:1;
} fg_usage_seen_t;


/* the prompt tokens a server may add to what the request's bytes hold */
#define FG_USAGE_ADDED  32768


/*
 * Caps u to what was seen: 1 when it was over (u capped), 0 when not;
 * max_in and max_out get the caps.
 */
int fg_usage_cap(fg_usage_t *u, const fg_usage_seen_t *seen,
    uint64_t *max_in, uint64_t *max_out);

/* one SSE line (without its LF): the event's output tokens, estimated */
uint32_t fg_usage_sse_line(fg_usage_t *u, const unsigned char *p,
    const unsigned char *last);

/*
 * A whole JSON body (or its last bytes): 0 when its usage is its root's
 * last member, read into u (found, or only in_set: an embedding's)
 */
int fg_usage_at_end(fg_usage_t *u, const unsigned char *p,
    const unsigned char *last);

/*
 * A completion (whole) or a stream's event: its output tokens estimated
 * from its text; takes the usage when there is one.
 */
uint32_t fg_usage_scan(fg_usage_t *u, const unsigned char *p, size_t len,
    int whole);


#endif /* FG_USAGE_H */
