
/*
 * fairgate: the shared zone, where every worker's view of the tenants and
 * the fair queue lives (fairgate_zone).
 *
 * The zone's state is at shpool->data (ngx_http_fairgate_shctx_t), under
 * the zone's mutex: the policy core's scheduler, the tenants (users and
 * apps, in an rbtree with an LRU), the requests admitted (a node each, from
 * admission to their end), the workers' slots, the upstream's capacity and
 * the counters the status page reads.  It survives "nginx -s reload".
 *
 *     ngx_http_fairgate_zone_conf.c  the directive, and what a reload changed
 *     ngx_http_fairgate_zone.c       the zone made or taken over
 *     ngx_http_fairgate_tenant.c     users and apps: rbtree, LRU expiry
 *     ngx_http_fairgate_node.c       a request's node, made and freed
 *     ngx_http_fairgate_engines.c    the engines fed in local mode: slots,
 *                                    room, prefix caches, load
 *     ngx_http_fairgate_dispatch.c   the policy's next request, by capacity
 *     ngx_http_fairgate_workers.c    the workers' slots and their wake-ups
 *     ngx_http_fairgate_qoe_stats.c  the streams' QoE, per tenant and zone
 *
 * This header is the zone's contract for the parts above it (the glue's
 * request steps, local mode, tenants, status, Redis): the zone calls none
 * of them back by name.  What it must ask or tell them goes through
 * pointers they set: the owner's resume event and node reference of each
 * request (ngx_http_fairgate_entry_t), and local mode's engines
 * (ngx_http_fairgate_engine_ops_t).  Internals of the zone's own files:
 * ngx_http_fairgate_zone_int.h.
 */

#ifndef _NGX_HTTP_FAIRGATE_ZONE_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_ZONE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_sched.h"
#include "fg_oit.h"
#include "fg_quota.h"
#include "ngx_http_fairgate_module.h"


#define NGX_HTTP_FAIRGATE_MAX_TENANTS   10000

/* worker processes of every generation that may hold requests at once */
#define NGX_HTTP_FAIRGATE_SLOTS         256
#define NGX_HTTP_FAIRGATE_NO_SLOT       ((ngx_uint_t) -1)

/* seconds a tenant stays after its last request: its windows are empty */
#define NGX_HTTP_FAIRGATE_IDLE          60

/* queue-wait histogram: upper bounds in ms, and +Inf */
#define NGX_HTTP_FAIRGATE_BUCKETS       12

/* QoE histogram: upper bounds 0.1 ... 0.99, and +Inf (QoE is at most 1);
 * the buckets from GOOD on hold the streams at 0.95 or above */
#define NGX_HTTP_FAIRGATE_QOE_BUCKETS   8
#define NGX_HTTP_FAIRGATE_QOE_GOOD      6

#define NGX_HTTP_FAIRGATE_USER          0
#define NGX_HTTP_FAIRGATE_APP           1
#define NGX_HTTP_FAIRGATE_KEY           2   /* an API key, by its id */

/*
 * Engines a zone feeds in local mode (the last index of the policy core's
 * engines is the zone's upstream of drop-in mode), and the prompt blocks
 * of a request matched against their prefix caches.
 */
#define NGX_HTTP_FAIRGATE_ENGINES       (FG_SCHED_MAX_ENGINES - 1)
#define NGX_HTTP_FAIRGATE_ROUTE_BLOCKS  512

#define NGX_HTTP_FAIRGATE_REDIS_OFF         0
#define NGX_HTTP_FAIRGATE_REDIS_CONNECTING  1
#define NGX_HTTP_FAIRGATE_REDIS_UP          2
#define NGX_HTTP_FAIRGATE_REDIS_DOWN        3


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
    unsigned                     qloaded:1;  /* quota counts read from the
                                                state file */
    unsigned                     qsynced:1;  /* and synced once */
    unsigned                     qbusy:1;    /* had requests at the last
                                                round: synced once more */
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
    uint64_t                     failovers;  /* sentinels' masters moved */
    ngx_uint_t                   qstate;     /* fairgate_quota_state: 0 not
                                                read, 1 reading, 2 read */
    ngx_msec_t                   qwritten;   /* its last write, ms wall */
    uint64_t                     qsyncs;     /* quota rounds completed */
    uint64_t                     qkeys;      /* keys in the last one */
    ngx_msec_t                   qround_ms;  /* the last one took */
    size_t                       master_len; /* 0: none known */
    u_char                       master[NGX_SOCKADDR_STRLEN + 8];
} ngx_http_fairgate_redis_sh_t;


/*
 * The requests a tenant or the zone had throttled, by what refused them:
 * a rate limit's requests or tokens a minute (fairgate_user_limit,
 * fairgate_app_limit, the keys file), FairServe's OIT, or the rpm policy.
 * They add up to "throttled" (the status page, the dashboard).
 */
typedef struct {
    uint64_t                     requests;
    uint64_t                     tokens;
    uint64_t                     oit;
    uint64_t                     policy;
} ngx_http_fairgate_throttled_t;


/*
 * The Andes QoE of the streams a tenant or the zone was served
 * (ngx_http_fairgate_qoe_stats.c): their sum, for the mean, and a
 * histogram, a count per bucket (not cumulative) whose bounds are
 * ngx_http_fairgate_qoe_buckets; their total is the count.  40 bytes, so
 * that a tenant still fits a 1 KB slab chunk with a typical name.
 */
typedef struct {
    double                       sum;
    uint32_t                     bucket[NGX_HTTP_FAIRGATE_QOE_BUCKETS];
} ngx_http_fairgate_qoe_stats_t;


/*
 * fairgate_quota: a tenant's counts over one window definition, in the
 * zone's slab, a list per tenant (fg_quota.h has the counts' layout: what
 * this gateway counted, and what the others did, from the Redis sync).
 * Every quota of the same window ("per=day", "per=30d rolling") counts in
 * the same record, whatever its limits.  A tenant's first window is
 * ngx_http_fairgate_tenant_quota(), the others follow by "next"; all of
 * it is read and written under the zone's mutex.  A sync of the counters
 * (fairgate_redis) sends each window's local[] buckets as this gateway's
 * counts, keyed by tenant, window definition (win.per) and bucket start,
 * and writes the others' sum into win.remote with the window's current id
 * as its start (fg_quota_id()).
 */
typedef struct ngx_http_fairgate_qwin_s  ngx_http_fairgate_qwin_t;

struct ngx_http_fairgate_qwin_s {
    ngx_http_fairgate_qwin_t    *next;
    time_t                       until;      /* counts something until then:
                                                its tenant is not freed as
                                                idle before (epoch s) */
    fg_quota_limit_t             limit;      /* the limits a request was
                                                last checked against here,
                                                for the status page */
    fg_quota_win_t               win;        /* last: of variable size */
};


/*
 * A user, an app or an API key in the zone.  A user is a scheduler client: its
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

    /* what throttled it: a limit's requests or tokens, OIT, the policy */
    ngx_http_fairgate_throttled_t  throttled_by;

    /* the rate limits its last request was held to (0: none) */
    uint64_t                     limit_rpm;
    uint64_t                     limit_tpm;

    ngx_http_fairgate_qoe_stats_t  qoe;      /* its streams' QoE */

    ngx_http_fairgate_global_t   global;     /* fairgate_redis */

    /*
     * fairgate_quota: its first window, in 8-byte units from the zone's
     * start (0: none), so that a record still fits in 1 KB with a typical
     * name; ngx_http_fairgate_tenant_quota() has its address
     */
    uint32_t                     quota;

    u_char                       kind;
    u_char                       len;
    u_char                       name[1];
} ngx_http_fairgate_tenant_t;


/*
 * An engine of the zone (local mode), by its fairgate_engine name: its
 * capacity as it last published it, what the zone runs on it, and what
 * it was sent and found cached.  A slot once named keeps its name for the
 * zone's life, so that a request's engine index stays valid.
 */
typedef struct {
    u_char                       name[NGX_HTTP_FAIRGATE_ENGINE_NAME];
    size_t                       len;        /* 0: a free slot */
    ngx_uint_t                   seats;      /* batch seats; 0: unknown */
    ngx_uint_t                   tokens;     /* KV positions; 0: unknown */
    ngx_uint_t                   running;
    uint64_t                     running_tokens;
    uint64_t                     dispatched;
    uint64_t                     prompt_tokens;  /* of those dispatched */
    uint64_t                     matched_tokens; /* cached, as routed */
    uint64_t                     cached_tokens;  /* cached, as it said */
} ngx_http_fairgate_zengine_t;


/* an engine a request of local mode may go to, as its worker sees it */
typedef struct {
    ngx_str_t                    name;
    ngx_uint_t                   seats;      /* 0: not attached */
    ngx_uint_t                   tokens;
} ngx_http_fairgate_candidate_t;


/* a worker process's part of a zone: the requests it owns */
typedef struct {
    ngx_pid_t                    pid;        /* 0: free */
    ngx_queue_t                  owned;      /* ngx_http_fairgate_node_t */
    ngx_queue_t                  ready;      /* dispatched, not resumed */
} ngx_http_fairgate_slot_t;


/* a request in the zone, from admission to its end */
typedef struct ngx_http_fairgate_node_s  ngx_http_fairgate_node_t;

struct ngx_http_fairgate_node_s {
    fg_request_t                 req;
    ngx_queue_t                  owned;
    ngx_queue_t                  ready;

    ngx_http_fairgate_tenant_t  *user;
    ngx_http_fairgate_tenant_t  *app;        /* NULL: none */
    ngx_http_fairgate_tenant_t  *key;        /* fairgate_quota's; NULL:
                                                none */

    /*
     * fairgate_quota: when its request was counted in its tenants'
     * windows (epoch s; 0: not counted), and the tokens and cost counted
     * since, as they were settled
     */
    int64_t                      quota_at;
    uint64_t                     quota_tokens;
    uint64_t                     quota_cost;

    /*
     * Valid in the owner process only: the owner's event, whose handler
     * resumes the request once it is dispatched, and where the owner
     * keeps this node (cleared when the zone gives the node up first).
     */
    ngx_event_t                 *resume;
    ngx_http_fairgate_node_t   **ref;
    ngx_uint_t                   slot;

    ngx_msec_t                   queued;     /* monotonic */
    double                       at;         /* wall clock of admission */
    uint32_t                     reserved;   /* tokens in flight it holds */
    uint32_t                     windowed;   /* tokens it put in windows */

    /* the interaction it belongs to (0: none), as fg_oit keys it */
    uint64_t                     interaction;

    /*
     * Local mode: the zone's engines that may serve it (bits), and its
     * prompt's full blocks' hashes (in the zone's slab) for their prefix
     * caches.  No engine: the upstream of drop-in mode.
     */
    uint64_t                     engines;
    uint64_t                    *hashes;
    uint32_t                     n_hashes;
    uint32_t                     block_size;

    unsigned                     cached_set:1; /* the engine said */
    unsigned                     ready_set:1;
    unsigned                     holds:1;    /* holds capacity */
    unsigned                     user_counted:1;
    unsigned                     app_counted:1;
};


/*
 * A request as its owner hands it to the zone at admission: its tenants
 * and tokens; in local mode the engines that may serve it and its
 * prompt's full blocks' hashes; the owner's resume event and where it
 * keeps the node (ngx_http_fairgate_node_t's).
 */
typedef struct {
    ngx_str_t                   *user;
    ngx_str_t                   *app;        /* len 0: none */
    double                       weight;
    uint32_t                     tokens_in;
    uint32_t                     max_tokens;
    uint32_t                     reserve;    /* 0: tokens_in + max_tokens */

    ngx_http_fairgate_candidate_t  *engines;
    ngx_uint_t                   n_engines;
    uint64_t                    *hashes;
    uint32_t                     n_hashes;
    uint32_t                     block_size;

    ngx_event_t                 *resume;
    ngx_http_fairgate_node_t   **ref;
} ngx_http_fairgate_entry_t;


/*
 * What a zone asks of this worker's engines of local mode when it routes,
 * set by local mode at the worker's start
 * (local/ngx_http_fairgate_engine.c; NULL before: no engine is found):
 * the fairgate_engine of a name (NULL: none in this worker's
 * configuration), whether it is attached, and how many of a prompt's
 * leading full blocks its prefix cache holds.
 */
typedef struct {
    ngx_http_fairgate_engine_t  *(*get)(u_char *name, size_t len);
    ngx_uint_t                   (*up)(ngx_http_fairgate_engine_t *e);
    uint32_t                     (*prefix)(ngx_http_fairgate_engine_t *e,
                                     const uint64_t *hashes, uint32_t n,
                                     uint32_t block_size);
} ngx_http_fairgate_engine_ops_t;


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

    /*
     * The tenants by their hash too, open addressing at most half full
     * (max_tenants users and apps): a lookup reads a slot and a record or
     * two where the rbtree reads ~17 records at 100,000 tenants.  The
     * rbtree stays for the status page's ordered walk.
     */
    ngx_http_fairgate_tenant_t **index;
    ngx_uint_t                   index_mask;
    ngx_uint_t                   users;
    ngx_uint_t                   apps;
    ngx_uint_t                   keys;       /* fairgate_quota's */
    uint64_t                     expired;

    /*
     * Allocations the zone refused for want of room since it last said
     * so in the error log, and when it did (ms wall; 0: never)
     */
    uint64_t                     full;
    ngx_msec_t                   full_logged;

    /* capacity of the upstream: limits (0: none), and what is in use */
    ngx_uint_t                   inflight;
    ngx_uint_t                   inflight_tokens;
    ngx_uint_t                   running;
    uint64_t                     running_tokens;

    uint64_t                     throttled;
    ngx_http_fairgate_throttled_t  throttled_by;
    uint64_t                     queue_full;
    uint64_t                     timed_out;
    uint64_t                     tokens_in;
    uint64_t                     tokens_out;
    uint64_t                     reclaimed;
    uint64_t                     handoffs;   /* dispatched to another worker */

    /*
     * Local mode: the engines fed, and their capacity summed (batch seats
     * and KV positions as they last published them; 0: none).
     */
    ngx_http_fairgate_zengine_t  engines[NGX_HTTP_FAIRGATE_ENGINES];
    ngx_uint_t                   n_engines;
    ngx_uint_t                   local_inflight;
    ngx_uint_t                   local_tokens;
    uint64_t                     cached_tokens;  /* engines' reports */

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

    ngx_http_fairgate_qoe_stats_t  qoe;      /* every tenant's streams */

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

    /* this worker's fairgate_engine of each engine slot, once looked up
     * through engine_ops */
    ngx_http_fairgate_engine_ops_t  *engine_ops;
    ngx_http_fairgate_engine_t  *engine[NGX_HTTP_FAIRGATE_ENGINES];
    uint64_t                     engine_found;

    /*
     * While a reload creates the zone: the previous cycle's zone of the same
     * name, and what differs from it ("" if nothing: its state is reused).
     */
    ngx_shm_zone_t              *previous;
    u_char                      *changes;

    unsigned                     reused:1;
} ngx_http_fairgate_zone_t;


/* a bucket of the queue-wait histogram: its upper bound, ms and seconds */
typedef struct {
    ngx_msec_t                   le;
    const char                  *text;       /* as Prometheus writes it */
} ngx_http_fairgate_bucket_t;


/* a bucket of the QoE histogram: its upper bound, and as written */
typedef struct {
    double                       le;
    const char                  *text;
} ngx_http_fairgate_qoe_bucket_t;


/* workers to wake after the zone's mutex is released */
typedef struct {
    ngx_uint_t                   n;
    ngx_uint_t                   slot[NGX_HTTP_FAIRGATE_SLOTS];
    ngx_pid_t                    pid[NGX_HTTP_FAIRGATE_SLOTS];
    uint64_t                     seen[NGX_HTTP_FAIRGATE_SLOTS / 64];
    unsigned                     self:1;
} ngx_http_fairgate_wakes_t;


/* _zone_conf.c: fairgate_zone; a zone another directive names, checked
 * once http is read */
char *ngx_http_fairgate_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_fairgate_zone_ref(ngx_conf_t *cf, ngx_str_t *name,
    ngx_shm_zone_t **shm_zone, char *directive);
ngx_int_t ngx_http_fairgate_check_refs(ngx_conf_t *cf,
    ngx_http_fairgate_main_conf_t *fmcf);

/* _zone.c: the zone made or taken over; the reload counted once
 * committed */
ngx_int_t ngx_http_fairgate_init_zone(ngx_shm_zone_t *shm_zone, void *data);
ngx_int_t ngx_http_fairgate_zones_commit(ngx_cycle_t *cycle);

/* _clock.c */
double ngx_http_fairgate_now(void);
ngx_msec_t ngx_http_fairgate_wall_msec(void);

/* _tenant.c */
ngx_http_fairgate_tenant_t *ngx_http_fairgate_tenant_get(
    ngx_http_fairgate_zone_t *zone, ngx_uint_t kind, ngx_str_t *name,
    double weight);
ngx_uint_t ngx_http_fairgate_tenant_expire(ngx_http_fairgate_zone_t *zone,
    ngx_uint_t force);
ngx_uint_t ngx_http_fairgate_tenant_pages(ngx_uint_t n);
void ngx_http_fairgate_tenant_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
fg_window_t *ngx_http_fairgate_tenant_requests(ngx_http_fairgate_tenant_t *t);
ngx_http_fairgate_tenant_t *ngx_http_fairgate_tenant_find(
    ngx_http_fairgate_zone_t *zone, ngx_uint_t kind, u_char *name,
    size_t len);
uint64_t ngx_http_fairgate_global_requests(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t);
uint64_t ngx_http_fairgate_global_tokens(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t);

/* _tenant.c: fairgate_quota's windows of a tenant (NULL: none), a new one
 * put first */
ngx_http_fairgate_qwin_t *ngx_http_fairgate_tenant_quota(
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_tenant_t *t);
void ngx_http_fairgate_tenant_quota_add(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t, ngx_http_fairgate_qwin_t *w);

/* _tenant.c: memory of the zone's slab, idle tenants freed for it (NULL:
 * none left to free); a zone that refused one says so, once an interval */
void *ngx_http_fairgate_room_alloc(ngx_http_fairgate_zone_t *zone,
    size_t size);
void ngx_http_fairgate_room_full(ngx_http_fairgate_zone_t *zone,
    size_t size);

/* _node.c: a request's node made at admission (NULL: no room), and freed
 * at its end */
ngx_http_fairgate_node_t *ngx_http_fairgate_node_new_locked(
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_entry_t *entry);
void ngx_http_fairgate_node_free_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node);

/* _engines.c: the engine a dispatched request goes to, in its owner (NULL:
 * the upstream, or none of this worker's); the prompt tokens it found
 * cached, as it said */
ngx_http_fairgate_engine_t *ngx_http_fairgate_engines_chosen(
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_node_t *node);
void ngx_http_fairgate_engines_cached_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node, uint32_t cached);

/* _dispatch.c: what fits is dispatched, its owners to wake in *wakes;
 * when a place in the queue may free, in seconds */
extern ngx_http_fairgate_bucket_t
    ngx_http_fairgate_wait_buckets[NGX_HTTP_FAIRGATE_BUCKETS];
void ngx_http_fairgate_dispatch_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_wakes_t *wakes);
time_t ngx_http_fairgate_retry_after(ngx_http_fairgate_shctx_t *sh);

/* _qoe_stats.c */
extern ngx_http_fairgate_qoe_bucket_t
    ngx_http_fairgate_qoe_buckets[NGX_HTTP_FAIRGATE_QOE_BUCKETS];
void ngx_http_fairgate_qoe_stats_add(ngx_http_fairgate_qoe_stats_t *qs,
    double qoe);
uint64_t ngx_http_fairgate_qoe_stats_count(
    const ngx_http_fairgate_qoe_stats_t *qs, ngx_uint_t from);
double ngx_http_fairgate_qoe_stats_quantile(
    const ngx_http_fairgate_qoe_stats_t *qs, double p);

/* _workers.c: the worker's slot in each zone, taken at its start and
 * given up at its exit; the owners woken once the mutex is released */
ngx_int_t ngx_http_fairgate_workers_init_process(ngx_cycle_t *cycle);
void ngx_http_fairgate_workers_exit_process(ngx_cycle_t *cycle);
void ngx_http_fairgate_wakes_init(ngx_http_fairgate_wakes_t *wakes);
void ngx_http_fairgate_wake(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_wakes_t *wakes);


#endif /* _NGX_HTTP_FAIRGATE_ZONE_H_INCLUDED_ */
