
/*
 * fairgate: Anthropic's Messages API (/v1/messages) in drop-in mode, as
 * its clients expect the gateway's own answers: its error body
 * (fg_anthropic.c).  What is counted of its requests and responses is
 * read with the OpenAI APIs' (ngx_module/request/ngx_http_fairgate_parse.c,
 * fg_usage.c).
 */

#ifndef _FG_ANTHROPIC_H_INCLUDED_
#define _FG_ANTHROPIC_H_INCLUDED_


#include <stddef.h>


/*
 * Anthropic's error body for an HTTP status, with a newline:
 *     {"type":"error","error":{"type":T,"message":M}}
 * T by the status as Anthropic names them (429 rate_limit_error, 401
 * authentication_error, 503 overloaded_error ...).  Call it with size 0
 * to measure.
 */
size_t fg_anthropic_error_body(unsigned status, const char *message,
    char *out, size_t size);

/* the error type Anthropic gives a status */
const char *fg_anthropic_error_type(unsigned status);


#endif /* _FG_ANTHROPIC_H_INCLUDED_ */
