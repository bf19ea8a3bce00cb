
/*
 * fairgate: declarations shared by the nginx glue of the module
 * (ngx_http_fairgate_*.c).  The policy core (fg_*.h) knows nothing of nginx;
 * this is where the two meet.
 *
 *     _module.c      directives, configuration, phase handler and filter
 *                    registration, worker start and exit
 *     _zone.c        fairgate_zone: the shared zone and its state
 *     _tenant.c      users and apps in the zone: rbtree, LRU expiry
 *     _keys.c        the API keys file
 *     _handler.c     the precontent handler: identify, read and parse the
 *                    body, estimate, admit, queue
 *     _limits.c      sliding-window rate limits and x-ratelimit-* headers
 *     _queue.c       the fair queue: dispatch by capacity, parking, waking
 *                    other workers, release at the end of every request
 *     _filter.c      response header and body filters: token counting
 *     _error.c       OpenAI-style error responses
 *     _variables.c   $fairgate_* variables
 *     _status.c      fairgate_status: JSON and Prometheus text
 *     _engine.c      fairgate_engine: the model loaded at configuration
 *                    time, each worker's client of the engine segment
 *     _api.c         fairgate_engine_pass: the OpenAI API of local mode,
 *                    request to tokens to the engine
 *     _stream.c      engine events to SSE chunks or one JSON body
 *     _interaction.c FairServe: interaction headers, the overload signal,
 *                    OIT admission (fairgate_oit), app profiles for wsc
 *                    (fairgate_app_profile)
 *     _redis.c       fairgate_redis: hiredis in the event loop, the
 *                    connection to Redis, its backoff, status
 *     _sync.c        the sync rounds: counters shared by several gateways
 */

#ifndef _NGX_HTTP_FAIRGATE_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_sched.h"
#include "fg_oit.h"
#include "fg_shm_client.h"
#include "fg_tokenizer.h"
#include "fg_chat_template.h"
#include "fg_openai_request.h"
#include "fg_openai_response.h"


#define NGX_HTTP_FAIRGATE_MAX_TENANTS   10000

/* worker processes of every generation that may hold requests at once */
#define NGX_HTTP_FAIRGATE_SLOTS         256
#define NGX_HTTP_FAIRGATE_NO_SLOT       ((ngx_uint_t) -1)

#define NGX_HTTP_FAIRGATE_NAME_LEN      255

/* keys a worker remembers (their digests found), and their longest */
#define NGX_HTTP_FAIRGATE_KEY_CACHE     1024
#define NGX_HTTP_FAIRGATE_KEY_CACHED    120

/* seconds a tenant stays after its last request: its windows are empty */
#define NGX_HTTP_FAIRGATE_IDLE          60

/* queue-wait histogram: upper bounds in ms, and +Inf */
#define NGX_HTTP_FAIRGATE_BUCKETS       12

#define NGX_HTTP_FAIRGATE_USER          0
#define NGX_HTTP_FAIRGATE_APP           1

/* fairgate_oit's defaults: overload at 90% of the capacity, and the
 * requests an interaction may make before it is checked like a new one */
#define NGX_HTTP_FAIRGATE_OVERLOAD      0.9
#define NGX_HTTP_FAIRGATE_MAX_REQUESTS  64

/* the longest X-Fairgate-Interaction value */
#define NGX_HTTP_FAIRGATE_INTERACTION_LEN  128

#define NGX_HTTP_FAIRGATE_STATUS_JSON   0
#define NGX_HTTP_FAIRGATE_STATUS_PROM   1


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


/*
 * fairgate_redis: a tenant's part of the global picture, what the other
 * gateways counted as of the last sync round that reached it; valid while
 * "epoch" is the zone's (each connection to Redis starts a new one).
 */
typedef struct {
    uint64_t                     requests;   /* others' window sums */
    uint64_t                     tokens;
    double                       service;    /* others' service: the most
                                                seen, it only grows */
    uint64_t                     epoch;
    uint64_t                     incarnation; /* its field in Redis; 0: none
                                                 yet */
    unsigned                     seen:1;     /* service has a baseline */
} ngx_http_fairgate_global_t;


/* fairgate_redis: a zone's sync state, in the zone for every worker */
typedef struct {
    ngx_pid_t                    owner;      /* the worker that syncs */
    ngx_msec_t                   heartbeat;  /* its last tick, ms wall */
    ngx_msec_t                   stale;      /* a heartbeat older: gone */
    ngx_uint_t                   state;      /* NGX_HTTP_FAIRGATE_REDIS_* */
    uint64_t                     epoch;      /* connections made */
    uint64_t                     incarnations;
    uint64_t                     syncs;      /* rounds completed */
    uint64_t                     failures;   /* times it went down */
    uint64_t                     errors;     /* failed replies, timeouts */
    uint64_t                     synced;     /* tenants in the last round */
    ngx_msec_t                   round_ms;   /* the last round took */
    ngx_msec_t                   last_sync;  /* ms wall */
    time_t                       down_since;
    uint64_t                     stamp;      /* zone created, ms wall */
} ngx_http_fairgate_redis_sh_t;


#define NGX_HTTP_FAIRGATE_REDIS_OFF         0
#define NGX_HTTP_FAIRGATE_REDIS_CONNECTING  1
#define NGX_HTTP_FAIRGATE_REDIS_UP          2
#define NGX_HTTP_FAIRGATE_REDIS_DOWN        3


typedef struct ngx_http_fairgate_redis_conf_s  ngx_http_fairgate_redis_conf_t;


/*
 * A user or an app in the zone.  A user is a scheduler client: its
 * requests window is the client's own window of requests let in (the core
 * keeps it for the rpm policy, and the module counts into it otherwise), so
 * that a record fits in 1 KB with its name.
 */
typedef struct {
    ngx_rbtree_node_t            node;       /* key: hash of kind and name */
    ngx_queue_t                  lru;

    union {
        fg_client_t              client;     /* a user */

        struct {                             /* an app */
            fg_window_t          requests;
            fg_app_t            *profile;    /* wsc; NULL: none yet */
            uint32_t             profile_crc; /* of the directive it has */
        } app;
    } u;

    fg_window_t                  tokens;

    ngx_msec_t                   last;       /* last request, monotonic */
    ngx_uint_t                   refs;       /* requests holding it */

    uint64_t                     requests;   /* served, whatever the end */
    uint64_t                     tokens_in;  /* settled */
    uint64_t                     tokens_out;
    uint64_t                     throttled;
    uint64_t                     queue_full;
    uint64_t                     timed_out;

    ngx_http_fairgate_global_t   global;     /* fairgate_redis */

    u_char                       kind;
    u_char                       len;
    u_char                       name[1];
} ngx_http_fairgate_tenant_t;


/* a worker process's part of a zone: the requests it owns */
typedef struct {
    ngx_pid_t                    pid;        /* 0: free */
    ngx_queue_t                  owned;      /* ngx_http_fairgate_node_t */
    ngx_queue_t                  ready;      /* dispatched, not resumed */
} ngx_http_fairgate_slot_t;


typedef struct ngx_http_fairgate_ctx_s  ngx_http_fairgate_ctx_t;


/* a request in the zone, from admission to its end */
typedef struct {
    fg_request_t                 req;
    ngx_queue_t                  owned;
    ngx_queue_t                  ready;

    ngx_http_fairgate_tenant_t  *user;
    ngx_http_fairgate_tenant_t  *app;        /* NULL: none */

    /* the owner's request context: valid in the owner process only */
    ngx_http_fairgate_ctx_t     *ctx;
    ngx_uint_t                   slot;

    ngx_msec_t                   queued;     /* monotonic */
    double                       at;         /* wall clock of admission */
    uint32_t                     reserved;   /* tokens in flight it holds */
    uint32_t                     windowed;   /* tokens it put in windows */

    /* the interaction it belongs to (0: none), as fg_oit keys it */
    uint64_t                     interaction;

    unsigned                     ready_set:1;
    unsigned                     holds:1;    /* holds capacity */
    unsigned                     user_counted:1;
    unsigned                     app_counted:1;
} ngx_http_fairgate_node_t;


/*
 * The zone's shared state, at shpool->data.  No function pointers and
 * nothing of a cycle's memory: it outlives reloads.  (The rbtree's insert
 * pointer is set by each process right before it inserts.)
 */
typedef struct {
    fg_sched_t                  *sched;
    ngx_uint_t                   reloads;    /* reloads it has survived */

    ngx_rbtree_t                 rbtree;
    ngx_rbtree_node_t            sentinel;
    ngx_queue_t                  lru;
    ngx_uint_t                   users;
    ngx_uint_t                   apps;
    uint64_t                     expired;

    /* capacity of the upstream: limits (0: none), and what is in use */
    ngx_uint_t                   inflight;
    ngx_uint_t                   inflight_tokens;
    ngx_uint_t                   running;
    uint64_t                     running_tokens;

    uint64_t                     throttled;
    uint64_t                     queue_full;
    uint64_t                     timed_out;
    uint64_t                     tokens_in;
    uint64_t                     tokens_out;
    uint64_t                     reclaimed;
    uint64_t                     handoffs;   /* dispatched to another worker */

    /*
     * Local mode: the engine's published capacity (its batch seats and
     * KV positions), set when a request for it is admitted; 0: none.
     */
    ngx_uint_t                   local_inflight;
    ngx_uint_t                   local_tokens;

    /* mean time a request holds capacity, ms, moving average */
    double                       service_ms;

    /*
     * FairServe: the open interactions (table in the zone, 0 slots: none
     * tracked) and users seen and served since the zone was made.
     */
    fg_oit_t                     oit;
    ngx_uint_t                   overloaded; /* OIT's last look found so */
    uint64_t                     users_seen;
    uint64_t                     users_served;

    uint64_t                     wait_bucket[NGX_HTTP_FAIRGATE_BUCKETS];
    uint64_t                     wait_count;
    double                       wait_sum;   /* seconds */

    ngx_http_fairgate_slot_t     slots[NGX_HTTP_FAIRGATE_SLOTS];

    ngx_http_fairgate_redis_sh_t  redis;
} ngx_http_fairgate_shctx_t;


/* a fairgate_zone of one configuration cycle, in that cycle's pool */
typedef struct {
    ngx_str_t                    name;
    ngx_str_t                    cost;       /* the cost= text, or "linear" */
    fg_sched_conf_t              conf;
    ngx_uint_t                   inflight;
    ngx_uint_t                   inflight_tokens;
    ngx_uint_t                   interactions; /* table slots */
    ngx_msec_t                   interaction_idle;

    ngx_shm_zone_t              *shm_zone;
    ngx_slab_pool_t             *shpool;
    ngx_http_fairgate_shctx_t   *sh;

    /* this worker's slot in the zone */
    ngx_uint_t                   slot;

    /*
     * While a reload creates the zone: the previous cycle's zone of the same
     * name, and what differs from it ("" if nothing: its state is reused).
     */
    ngx_shm_zone_t              *previous;
    u_char                      *changes;

    unsigned                     reused:1;
} ngx_http_fairgate_zone_t;


/* a zone named by fairgate_status or fairgate, checked once http is read */
typedef struct {
    ngx_shm_zone_t              *shm_zone;
    ngx_str_t                    file;
    ngx_uint_t                   line;
    char                        *directive;
} ngx_http_fairgate_zone_ref_t;


/* a rate limit: requests and tokens per minute; 0: none */
typedef struct {
    ngx_uint_t                   rpm;
    ngx_uint_t                   tpm;
} ngx_http_fairgate_limit_t;


typedef struct {
    ngx_str_t                    name;
    ngx_http_fairgate_limit_t    limit;
} ngx_http_fairgate_app_limit_t;


/* fairgate_app_profile: an app's expected lengths, seeded into the zone */
typedef struct {
    ngx_str_t                    name;
    fg_app_t                     app;        /* stages, learn */
    ngx_uint_t                   oit_rpm;    /* NGX_CONF_UNSET_UINT: the
                                                fairgate_oit default */
    uint32_t                     crc;        /* of the directive's words */
} ngx_http_fairgate_profile_t;


/* one line of a keys file */
typedef struct {
    u_char                       digest[32]; /* SHA-256 of the key */
    ngx_str_t                    user;
    ngx_str_t                    app;
    double                       weight;
    double                       priority;   /* wsc's E, 1 by default */
    ngx_http_fairgate_limit_t    limit;      /* 0: the user default */
} ngx_http_fairgate_key_t;


/* a key a worker has seen, so that its SHA-256 is worked out once */
typedef struct {
    ngx_http_fairgate_key_t     *key;
    size_t                       len;
    u_char                       data[NGX_HTTP_FAIRGATE_KEY_CACHED];
} ngx_http_fairgate_key_cache_t;


/* a keys file: its lines, and an open-addressing table by digest */
typedef struct {
    ngx_str_t                    file;
    ngx_array_t                  keys;       /* ngx_http_fairgate_key_t */
    ngx_http_fairgate_key_t    **table;
    ngx_uint_t                   mask;

    /* per worker, made at its first request */
    ngx_http_fairgate_key_cache_t  *cache;
} ngx_http_fairgate_keys_t;


typedef struct ngx_http_fairgate_api_s  ngx_http_fairgate_api_t;


/*
 * A fairgate_engine: the model's tokenizer and chat template, loaded at
 * configuration time and shared by the workers through fork; then each
 * worker's own client of the engine segment.
 */
typedef struct {
    ngx_str_t                    name;
    ngx_str_t                    shm;        /* NUL-terminated */
    ngx_str_t                    model;      /* the GGUF path */
    ngx_str_t                    id;         /* what "model" must name */
    ngx_msec_t                   dead_after;

    fg_tokenizer_t              *tok;
    fg_chat_template_t           tmpl;
    uint32_t                     context;    /* the GGUF's, 0: unknown */
    size_t                       max_piece;

    /* per worker, from init_process */
    fg_shm_client_t             *client;
    ngx_connection_t            *conn;       /* wraps the client's fd */
    ngx_event_t                  tick;
    ngx_rbtree_t                 rbtree;     /* open requests by id */
    ngx_rbtree_node_t            sentinel;
    uint64_t                     next_id;
    uint64_t                     generation; /* of the attached engine */
    ngx_array_t                  cancels;    /* uint64_t ids to retry */
    uint64_t                     lost;       /* times the engine was lost */
    ngx_msec_t                   down_since;
    ngx_log_t                   *log;
    unsigned                     warned:1;   /* why it cannot attach */
} ngx_http_fairgate_engine_t;


typedef struct {
    ngx_array_t                  zones;      /* ngx_http_fairgate_zone_t * */
    ngx_array_t                  engines;    /* ngx_http_fairgate_engine_t *
                                              */
    ngx_array_t                  refs;       /* ngx_http_fairgate_zone_ref_t */
    ngx_array_t                  keys;       /* ngx_http_fairgate_keys_t * */
    ngx_http_fairgate_redis_conf_t  *redis;  /* NULL: none */
} ngx_http_fairgate_main_conf_t;


typedef struct {
    /* fairgate_status */
    ngx_array_t                 *status;     /* ngx_shm_zone_t *; empty: all */
    ngx_uint_t                   status_format;

    /* fairgate */
    ngx_shm_zone_t              *zone;       /* NULL: off */
    ngx_uint_t                   queue;      /* waiting requests a tenant */
    ngx_msec_t                   timeout;

    ngx_http_fairgate_keys_t    *keys;
    ngx_http_complex_value_t    *user;
    ngx_http_complex_value_t    *app;
    ngx_http_complex_value_t    *weight;

    ngx_http_fairgate_limit_t    user_limit;
    ngx_array_t                 *app_limits; /* ngx_http_fairgate_app_limit_t */

    ngx_uint_t                   throttle_status;
    ngx_uint_t                   queue_status;
    ngx_uint_t                   max_tokens;

    /* fairgate_oit, fairgate_app_profile */
    ngx_flag_t                   oit;
    double                       oit_overload; /* share of capacity */
    ngx_uint_t                   oit_user_rpm;
    ngx_uint_t                   oit_app_rpm;
    ngx_uint_t                   oit_max_requests;
    ngx_array_t                 *profiles;   /* ngx_http_fairgate_profile_t */

    /* fairgate_engine_pass: the engine, NULL: chosen by "model" */
    ngx_flag_t                   engine_pass;
    ngx_http_fairgate_engine_t  *engine;
} ngx_http_fairgate_loc_conf_t;


/* what a request was allowed, for the x-ratelimit-* headers */
typedef struct {
    ngx_uint_t                   limit;      /* 0: no limit applies */
    uint64_t                     remaining;
    double                       reset;      /* seconds */
} ngx_http_fairgate_rl_t;


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

    ngx_msec_t                   start;
    ngx_msec_t                   queue_ms;

    ngx_http_fairgate_rl_t       rl_requests;
    ngx_http_fairgate_rl_t       rl_tokens;

    /* the limit a throttled request hit */
    const char                  *hit_type;   /* "requests", "tokens" */
    const char                  *hit_who;    /* "user", "app" */
    ngx_uint_t                   hit_limit;
    uint64_t                     hit_used;
    uint64_t                     hit_need;
    double                       hit_wait;

    ngx_event_t                  timer;

    /* local mode: the request as the engine takes it */
    ngx_http_fairgate_api_t     *api;
    uint32_t                     reserve;    /* KV positions it may take */
    ngx_uint_t                   local_inflight;
    ngx_uint_t                   local_tokens;

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
};


/* a request of local mode, from its parse to its last event */
struct ngx_http_fairgate_api_s {
    ngx_rbtree_node_t            node;       /* key: the request id */
    ngx_http_request_t          *request;
    ngx_http_fairgate_ctx_t     *ctx;        /* NULL: no fairgate zone */
    ngx_http_fairgate_engine_t  *engine;
    fg_oai_request_t            *oai;

    int32_t                     *ids;        /* the prompt */
    uint32_t                     n_ids;
    uint32_t                     max_tokens; /* 0: to the context's end */

    uint32_t                     n_prompt;   /* usage, as the engine says */
    uint32_t                     generated;

    fg_tok_stream_t              dec;
    fg_oai_stop_t                stop;
    fg_oai_resp_t                resp;

    char                        *piece;      /* decoder output */
    size_t                       piece_size;
    char                        *text;       /* stop matcher output */
    size_t                       text_size;

    ngx_buf_t                   *body;       /* non-stream: the text */
    ngx_chain_t                 *free;
    ngx_chain_t                 *busy;

    ngx_msec_t                   submitted_at;
    ngx_msec_t                   first_at;   /* first token */

    unsigned                     submitted:1;
    unsigned                     done:1;
    unsigned                     stream:1;
    unsigned                     parsed:1;
    unsigned                     finish:2;   /* fg_oai_finish_e */
};


/* _module.c */
ngx_http_fairgate_ctx_t *ngx_http_fairgate_get_ctx(ngx_http_request_t *r);

/* _handler.c */
ngx_int_t ngx_http_fairgate_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_fairgate_body(ngx_http_request_t *r, u_char **data,
    size_t *len);

/* _zone.c */
char *ngx_http_fairgate_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_fairgate_zone_ref(ngx_conf_t *cf, ngx_str_t *name,
    ngx_shm_zone_t **shm_zone, char *directive);
ngx_int_t ngx_http_fairgate_check_refs(ngx_conf_t *cf,
    ngx_http_fairgate_main_conf_t *fmcf);
ngx_int_t ngx_http_fairgate_zones_commit(ngx_cycle_t *cycle);
double ngx_http_fairgate_now(void);

/* _tenant.c */
ngx_http_fairgate_tenant_t *ngx_http_fairgate_tenant_get(
    ngx_http_fairgate_zone_t *zone, ngx_uint_t kind, ngx_str_t *name,
    double weight);
void ngx_http_fairgate_tenant_expire(ngx_http_fairgate_zone_t *zone,
    ngx_uint_t force);
ngx_uint_t ngx_http_fairgate_tenant_pages(ngx_uint_t n);
void ngx_http_fairgate_tenant_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
fg_window_t *ngx_http_fairgate_tenant_requests(ngx_http_fairgate_tenant_t *t);
ngx_http_fairgate_tenant_t *ngx_http_fairgate_tenant_find(
    ngx_http_fairgate_zone_t *zone, ngx_uint_t kind, u_char *name,
    size_t len);

/* _keys.c */
char *ngx_http_fairgate_keys(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_http_fairgate_key_t *ngx_http_fairgate_key_find(
    ngx_http_fairgate_keys_t *keys, ngx_str_t *key);

/* _limits.c */
char *ngx_http_fairgate_user_limit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_fairgate_app_limit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_fairgate_limits_check(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_uint_t enforce, double now);
void ngx_http_fairgate_limits_settle(ngx_http_fairgate_node_t *node,
    uint32_t tokens, ngx_uint_t served, double now);
ngx_int_t ngx_http_fairgate_limits_reject(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
ngx_int_t ngx_http_fairgate_limits_headers(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);

/* _queue.c */
ngx_int_t ngx_http_fairgate_queue_init_process(ngx_cycle_t *cycle);
void ngx_http_fairgate_queue_exit_process(ngx_cycle_t *cycle);
ngx_int_t ngx_http_fairgate_enqueue(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
void ngx_http_fairgate_charge(ngx_http_fairgate_ctx_t *ctx, uint32_t n);
void ngx_http_fairgate_release(void *data);

/* _filter.c */
ngx_int_t ngx_http_fairgate_filter_init(ngx_conf_t *cf);

/* _error.c */
ngx_int_t ngx_http_fairgate_send_error(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, const char *param, const char *code,
    const char *message, time_t retry_after);
ngx_int_t ngx_http_fairgate_send_error_body(ngx_http_request_t *r,
    ngx_uint_t status, ngx_buf_t *b, time_t retry_after);

/* _variables.c */
ngx_int_t ngx_http_fairgate_add_variables(ngx_conf_t *cf);

/* _status.c */
char *ngx_http_fairgate_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* _engine.c */
char *ngx_http_fairgate_engine(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_fairgate_engine_pass(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_fairgate_engine_init_process(ngx_cycle_t *cycle);
void ngx_http_fairgate_engine_exit_process(ngx_cycle_t *cycle);
ngx_http_fairgate_engine_t *ngx_http_fairgate_engine_find(
    ngx_http_fairgate_main_conf_t *fmcf, const char *model, size_t len);
ngx_int_t ngx_http_fairgate_engine_submit(ngx_http_fairgate_api_t *api);
void ngx_http_fairgate_engine_forget(ngx_http_fairgate_api_t *api,
    ngx_uint_t cancel);

/* _api.c */
ngx_int_t ngx_http_fairgate_api_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_fairgate_api_parse(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
ngx_int_t ngx_http_fairgate_api_error(ngx_http_request_t *r,
    fg_oai_error_t *err, time_t retry_after);

/* _interaction.c */
char *ngx_http_fairgate_oit(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_fairgate_app_profile(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_fairgate_interaction_read(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
ngx_int_t ngx_http_fairgate_interaction_admit(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_loc_conf_t *flcf,
    double now);
void ngx_http_fairgate_interaction_end(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node, uint64_t tokens, ngx_uint_t served,
    double now);
ngx_uint_t ngx_http_fairgate_overloaded(ngx_http_fairgate_shctx_t *sh,
    double threshold);
void ngx_http_fairgate_profile_free(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t);

/* _stream.c */
ngx_int_t ngx_http_fairgate_stream_start(ngx_http_fairgate_api_t *api);
void ngx_http_fairgate_stream_event(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);
void ngx_http_fairgate_stream_fail(ngx_http_fairgate_api_t *api,
    ngx_uint_t status, const char *code, const char *message);

/* _redis.c */
char *ngx_http_fairgate_redis(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_fairgate_redis_init_process(ngx_cycle_t *cycle);
void ngx_http_fairgate_redis_exit_process(ngx_cycle_t *cycle);
ngx_int_t ngx_http_fairgate_redis_status_json(ngx_http_request_t *r,
    void *root);
size_t ngx_http_fairgate_redis_prom_size(ngx_http_request_t *r);
u_char *ngx_http_fairgate_redis_prom(ngx_http_request_t *r, u_char *p);

/* _sync.c */
uint64_t ngx_http_fairgate_global_requests(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t);
uint64_t ngx_http_fairgate_global_tokens(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t);


extern ngx_module_t  ngx_http_fairgate_module;


#endif /* _NGX_HTTP_FAIRGATE_H_INCLUDED_ */
