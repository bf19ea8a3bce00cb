
/*
 * fairgate: a request's way through the module, and its context.
 *
 * The precontent handler (ngx_http_fairgate_handler.c) takes each request
 * of a "fairgate zone=..." location through these steps, in this order:
 *
 *   1. identify      who the tenant is: an API key, or variables
 *                    (ngx_http_fairgate_identify.c), and the interaction
 *                    its headers name (tenants/ngx_http_fairgate_interaction.c)
 *   2. parse         the body read and parsed: the token estimate of
 *                    drop-in mode (ngx_http_fairgate_parse.c), or local
 *                    mode's OpenAI request, tokenized (local/, through
 *                    ngx_http_fairgate_content.c)
 *   3. admit         the tenant's records, OIT and the rate limits, then
 *                    the scheduler (ngx_http_fairgate_admit.c)
 *   4. queue         dispatched at once by capacity, or parked until
 *                    another request's end makes room or it times out
 *                    (ngx_http_fairgate_queue.c, zone/)
 *   5. pass          on to the upstream (proxy_pass; its responses read by
 *                    ngx_http_fairgate_filter.c) or to the engine (local/)
 *   6. account       output tokens charged as they stream, and the request
 *                    settled and its capacity freed at its end, however it
 *                    ends (ngx_http_fairgate_account.c)
 *
 * A step that refuses the request answers it (ngx_http_fairgate_error.c)
 * and says so in ctx->phase.  Local mode's content handler
 * (ngx_http_fairgate_content.c) hands the request to local/ and hears
 * back from it through the request's report handler.
 *
 * This header is the contract of the request's steps for the module file
 * and the parts that look at a request (tenants/, status/, balancer/);
 * the steps' own entry points are in ngx_http_fairgate_request_int.h.
 */

#ifndef _NGX_HTTP_FAIRGATE_REQUEST_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_REQUEST_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_module.h"
#include "ngx_http_fairgate_http.h"
#include "ngx_http_fairgate_zone.h"
#include "ngx_http_fairgate_local.h"


typedef struct ngx_http_fairgate_ctx_s  ngx_http_fairgate_ctx_t;


/* what happened to a request, for $fairgate_outcome */
typedef enum {
    NGX_HTTP_FAIRGATE_NONE = 0,
    NGX_HTTP_FAIRGATE_SERVED,
    NGX_HTTP_FAIRGATE_UPSTREAM_ERROR,
    NGX_HTTP_FAIRGATE_ABORTED,
    NGX_HTTP_FAIRGATE_THROTTLED,
    NGX_HTTP_FAIRGATE_QUEUE_FULL,
    NGX_HTTP_FAIRGATE_TIMEOUT,
    NGX_HTTP_FAIRGATE_UNAUTHORIZED,
    NGX_HTTP_FAIRGATE_BAD_REQUEST,
    NGX_HTTP_FAIRGATE_ERROR
} ngx_http_fairgate_outcome_e;


/* where a request is in the module */
typedef enum {
    NGX_HTTP_FAIRGATE_READING = 0,    /* its body */
    NGX_HTTP_FAIRGATE_READ,           /* body read, not yet admitted */
    NGX_HTTP_FAIRGATE_QUEUED,         /* parked in the fair queue */
    NGX_HTTP_FAIRGATE_ADMITTED,       /* on its way to the upstream */
    NGX_HTTP_FAIRGATE_REFUSED,        /* answered by the module */
    NGX_HTTP_FAIRGATE_PASSED          /* not scheduled (not a POST) */
} ngx_http_fairgate_phase_e;


/* what a request was allowed, for the x-ratelimit-* headers */
typedef struct {
    ngx_uint_t                   limit;      /* 0: no limit applies */
    uint64_t                     remaining;
    double                       reset;      /* seconds */
} ngx_http_fairgate_rl_t;


/* a stream's token pacer (_pace.c) */
typedef struct ngx_http_fairgate_pace_s  ngx_http_fairgate_pace_t;


struct ngx_http_fairgate_ctx_s {
    ngx_http_request_t          *request;
    ngx_http_fairgate_zone_t    *zone;
    ngx_http_fairgate_node_t    *node;       /* in the zone, or NULL */

    ngx_http_fairgate_phase_e    phase;
    ngx_http_fairgate_outcome_e  outcome;

    ngx_str_t                    user;
    ngx_str_t                    app;
    double                       weight;
    double                       priority;
    ngx_http_fairgate_limit_t    user_limit;
    ngx_http_fairgate_limit_t    app_limit;

    /* FairServe: the request's interaction, from its headers */
    ngx_str_t                    interaction_name;
    uint64_t                     interaction; /* 0: none */
    uint32_t                     stage;
    uint32_t                     stages;     /* declared; 0: unknown */
    uint32_t                     system_tokens; /* of tokens_in */
    fg_oit_verdict_e             oit;

    /* estimates at admission, then what the upstream said or we counted */
    uint32_t                     tokens_in;
    uint32_t                     max_tokens;
    uint32_t                     tokens_out;
    uint32_t                     charged;    /* output charged so far */
    uint32_t                     usage_in;
    uint32_t                     usage_out;

    /* drop-in: the start of the prompt's text, as fairgate_prefix hashes
     * it (balancer/); empty when no upstream of the configuration does */
    ngx_str_t                    prompt;

    ngx_msec_t                   start;
    ngx_msec_t                   queue_ms;

    /* Andes's QoE expectations: fairgate_qoe, or the request's headers */
    ngx_msec_t                   qoe_ttft;   /* 0: none */
    double                       qoe_speed;  /* tokens a second, 0: none */
    ngx_http_fairgate_pace_t    *pace;       /* NULL: not paced */

    ngx_http_fairgate_rl_t       rl_requests;
    ngx_http_fairgate_rl_t       rl_tokens;

    /* the limit a throttled request hit */
    const char                  *hit_type;   /* "requests", "tokens" */
    const char                  *hit_who;    /* "user", "app" */
    ngx_uint_t                   hit_limit;
    uint64_t                     hit_used;
    uint64_t                     hit_need;
    double                       hit_wait;

    ngx_event_t                  timer;      /* its wait in the queue */
    ngx_event_t                  resume;     /* the zone dispatched it */

    /*
     * Local mode: the request as the engine takes it (with what the zone
     * routes it by: its KV room, its candidate engines, its prompt's
     * block hashes), and the engine that serves it.
     */
    ngx_http_fairgate_api_t     *api;
    ngx_str_t                    engine;
    uint32_t                     cached;     /* the engine said, tokens */

    /* the response: a JSON body kept whole, or SSE lines */
    ngx_buf_t                   *body;
    ngx_buf_t                   *line;

    unsigned                     stream:1;
    unsigned                     counting:1;
    unsigned                     sse:1;
    unsigned                     complete:1;
    unsigned                     usage:1;
    unsigned                     overflow:1;
    unsigned                     upstream_error:1;
    unsigned                     local:1;
    unsigned                     oit_set:1;  /* ctx->oit is a verdict */
    unsigned                     overloaded:1; /* at admission */
    unsigned                     cached_set:1; /* ctx->cached is known */
};


/* what the module registers: the precontent handler (_handler.c); local
 * mode's directive, whose content handler is _content.c's; fairgate_qoe
 * (_qoe.c); the response filters (_filter.c, _pace.c, _errors.c) */
ngx_int_t ngx_http_fairgate_handler(ngx_http_request_t *r);
char *ngx_http_fairgate_engine_pass(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_fairgate_qoe(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_fairgate_filter_init(ngx_conf_t *cf);
ngx_int_t ngx_http_fairgate_pace_init(ngx_conf_t *cf);
ngx_int_t ngx_http_fairgate_errors_init(ngx_conf_t *cf);

/* _ctx.c: the request's context, also after an internal redirect */
ngx_http_fairgate_ctx_t *ngx_http_fairgate_get_ctx(ngx_http_request_t *r);

/* _pace.c: a stream's QoE as delivered, 0..1; -1: not measured */
double ngx_http_fairgate_pace_qoe(ngx_http_fairgate_pace_t *p);

/* _error.c: a step refuses the request (the parts that check it too) */
ngx_int_t ngx_http_fairgate_refuse(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_outcome_e outcome,
    ngx_uint_t status, const char *type, const char *param,
    const char *code, const char *message, time_t retry_after);
ngx_int_t ngx_http_fairgate_refuse_header(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *param, const char *code,
    const char *message);


#endif /* _NGX_HTTP_FAIRGATE_REQUEST_H_INCLUDED_ */
