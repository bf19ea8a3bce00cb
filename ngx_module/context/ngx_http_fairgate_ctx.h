
/*
 * fairgate: a request's context, the one record of a request in the
 * module.  The glue (request/) builds it once, when it first takes the
 * request, and hands it down to the parts that look at it or fill it in
 * (tenants/, balancer/, status/); they find it again through
 * ngx_http_fairgate_get_ctx(), also after an internal redirect.  Its pool
 * cleanup is the request's end: the handler that made it says what runs
 * there (ctx->end), so that nothing here calls back up.
 */

#ifndef _NGX_HTTP_FAIRGATE_CTX_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_CTX_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_module.h"
#include "ngx_http_fairgate_zone.h"
#include "ngx_http_fairgate_local.h"
#include "fg_price.h"
#include "fg_quota_json.h"


typedef struct ngx_http_fairgate_ctx_s  ngx_http_fairgate_ctx_t;


/* the longest model name a request may give */
#define NGX_HTTP_FAIRGATE_MODEL_LEN  256


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
    NGX_HTTP_FAIRGATE_PASSED,         /* not scheduled (not a POST) */
    NGX_HTTP_FAIRGATE_IDENTIFYING,    /* its key looked up in Redis */
    NGX_HTTP_FAIRGATE_IDENTIFIED      /* looked up: the first pass goes on */
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

    ngx_str_t                    key_id;     /* empty: no key */
    ngx_str_t                    user;
    ngx_str_t                    app;
    ngx_str_t                    model;      /* as the request names it */
    ngx_str_t                    model_target; /* its alias's; empty: none */
    ngx_str_t                    key_models; /* the key's; empty: any */
    ngx_str_t                    key_quota;  /* the key's quota and budget */
    ngx_str_t                    key_budget; /* settings, JSON; empty: none */
    fg_quota_rule_t             *key_rules;  /* both, read: the key's own */
    ngx_uint_t                   key_nrules; /* quotas (quota/) */
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

    /* what it cost at the model's prices, in billionths of their unit,
     * as its usage flows (0: no price applies) */
    uint64_t                     cost;

    /* drop-in: what the gateway saw, that bounds the upstream's usage */
    uint32_t                     max_out;    /* max tokens x choices */
    size_t                       body_bytes; /* of the request */
    off_t                        bytes_out;  /* of the response */

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

    /* fairgate_quota: what the quotas said of it (quota/); NULL: none */
    struct ngx_http_fairgate_quota_hit_s  *quota;

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

    /* prompt tokens a cache held (cached_set once known): the engine's
     * word in local mode; in drop-in the upstream's usage (OpenAI's
     * prompt_tokens_details or input_tokens_details.cached_tokens,
     * Anthropic's cache_read_input_tokens), for prices and the log */
    uint32_t                     cached;

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
    unsigned                     max_out_set:1; /* the request set one */
    unsigned                     usage_checked:1;
    unsigned                     usage_capped:1;

    /* drop-in: the API called (ngx_http_fairgate_api_e, by its path), and
     * usage_in known before the output is (Anthropic's streams say the
     * input in their first event, the output in their last) */
    unsigned                     dropin_api:3;
    unsigned                     usage_in_set:1;
    unsigned                     tail_lost:1; /* a body's last bytes */

    /* prices and the usage log (request/_price.c, status/): the model's
     * price, and when the first output token came (wall clock, ms;
     * 0: none yet) */
    const fg_price_t            *price;      /* NULL: none applies */
    uint64_t                     first_token;
    unsigned                     price_found:1; /* ctx->price looked up */
    unsigned                     cost_trailer:1; /* to send at the end */

    /* the request's end, run by its pool's cleanup (request/) */
    ngx_pool_cleanup_pt          end;
};


/* the context kept for the request: found by ngx_http_fairgate_get_ctx(),
 * and its end run by the request's pool cleanup, however it ends */
ngx_int_t ngx_http_fairgate_ctx_keep(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_pool_cleanup_pt end);

/* the request's context, also after an internal redirect */
ngx_http_fairgate_ctx_t *ngx_http_fairgate_get_ctx(ngx_http_request_t *r);


#endif /* _NGX_HTTP_FAIRGATE_CTX_H_INCLUDED_ */
