
/*
 * fairgate: several gateways, one set of counters, through Redis.
 * docs/redis.md describes the design, the key layout and the bounds.
 *
 *     ngx_http_fairgate_redis_conf.c     the fairgate_redis directive
 *     ngx_http_fairgate_redis_link.c     a worker's link for each zone:
 *                                        ownership, connection, backoff
 *     ngx_http_fairgate_redis_sentinel.c where the sentinels say the
 *                                        master is, and when it moves
 *     ngx_http_fairgate_redis_adapter.c  hiredis in nginx's event loop
 *     ngx_http_fairgate_sync.c           the sync rounds
 *     ngx_http_fairgate_redis_args.c     a script call's arguments, as
 *                                        both kinds of round build them
 *     ngx_http_fairgate_qcount.c         quota windows' counts copied out
 *                                        of the zone, and merged into it
 *     ngx_http_fairgate_qsync.c          those counts' sync rounds
 *     ngx_http_fairgate_qstate.c         and their state file
 *     ngx_http_fairgate_redis_status.c   the status page's part
 *     ngx_http_fairgate_redis_cmd.c      each worker's link for its
 *                                        requests' commands (keys, admin)
 */

#ifndef _NGX_HTTP_FAIRGATE_REDIS_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_REDIS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_module.h"
#include "ngx_http_fairgate_zone.h"
#include "ngx_http_fairgate_prom.h"


struct redisAsyncContext;

typedef struct ngx_http_fairgate_round_s  ngx_http_fairgate_round_t;
typedef struct ngx_http_fairgate_redis_link_s  ngx_http_fairgate_redis_link_t;
typedef struct ngx_http_fairgate_sentinel_s  ngx_http_fairgate_sentinel_t;
typedef struct ngx_http_fairgate_qround_s  ngx_http_fairgate_qround_t;

/*
 * The end of a sync round, told to the link that started it: why it
 * failed (the link is to be dropped), or NULL and how many tenants it
 * synced in how long.
 */
typedef void (*ngx_http_fairgate_round_end_pt)(
    ngx_http_fairgate_redis_link_t *link, const char *failed,
    ngx_uint_t tenants, ngx_msec_t took);

/*
 * Where the sentinels say the master is (host, NUL-ended, and port), told
 * to the link: asked, or announced by a "+switch-master"; or why none
 * answered.
 */
typedef void (*ngx_http_fairgate_master_found_pt)(
    ngx_http_fairgate_redis_link_t *link, const char *failed, u_char *host,
    int port, ngx_uint_t announced);


/* a sentinel's address, resolved when the configuration is read */
typedef struct {
    ngx_str_t                    text;       /* "host:port", as written */
    u_char                      *host;       /* the address, NUL-ended */
    int                          port;
} ngx_http_fairgate_redis_addr_t;


/* fairgate_redis, one per http block; it serves every fairgate_zone */
struct ngx_http_fairgate_redis_conf_s {
    ngx_str_t                    address;    /* as written; len 0: the
                                                sentinels name it */
    ngx_str_t                    host;       /* or the socket; NUL-ended */
    ngx_int_t                    port;       /* 0: a unix socket */
    ngx_array_t                 *sentinels;  /* of _redis_addr_t; NULL:
                                                none */
    ngx_str_t                    master;     /* the sentinels' name of it */
    ngx_str_t                    sentinel_password;
    ngx_str_t                    password;   /* NUL-ended; len 0: none */
    ngx_int_t                    db;         /* -1: no SELECT */
    ngx_str_t                    prefix;
    ngx_str_t                    id;         /* this gateway's name */
    ngx_msec_t                   interval;
    ngx_msec_t                   timeout;
};


/* a worker's link to Redis for one zone (its sync rounds, if it owns them) */
struct ngx_http_fairgate_redis_link_s {
    ngx_http_fairgate_zone_t        *zone;
    ngx_http_fairgate_redis_conf_t  *conf;
    ngx_log_t                       *log;

    struct redisAsyncContext        *ac;
    ngx_event_t                      tick;

    /* the server synced with: fixed, or the sentinels' master */
    ngx_http_fairgate_sentinel_t    *sentinel;   /* NULL: fixed */
    ngx_http_fairgate_master_found_pt  found;    /* set by _redis_link.c */
    ngx_str_t                        addr;       /* "host:port", for logs */
    u_char                           host[NGX_SOCKADDR_STRLEN + 1];
    u_char                           text[NGX_SOCKADDR_STRLEN + 8];
    int                              port;

    ngx_msec_t                       connecting; /* since, 0: not */
    ngx_msec_t                       backoff;    /* next wait */
    ngx_msec_t                       retry_at;   /* no attempt before */
    ngx_str_t                        field;  /* "ID:PID:STAMP:", then the
                                                tenant's incarnation */

    /* the rounds in flight, NULL: none */
    ngx_http_fairgate_round_t       *round;
    ngx_http_fairgate_qround_t      *qround;     /* the quotas' */
    ngx_uint_t                       qrounds;    /* started */
    uint64_t                         qepoch;     /* of the last one */
    ngx_uint_t                       rounds;     /* started */
    ngx_http_fairgate_round_end_pt   round_end;  /* set by _redis_link.c */

    unsigned                         connected:1;
    unsigned                         owner:1;
    unsigned                         known:1;    /* the master's address */
};


/*
 * A bucket of a tenant's quota window (fairgate_quota), copied out of the
 * zone: a calendar or fixed window's one, or one of a rolling window's
 * (each of them, those this gateway did not count in too, for the sync).
 */
typedef struct {
    ngx_str_t                    name;
    ngx_uint_t                   kind;
    uint64_t                     incarnation;
    fg_quota_per_t               per;
    int64_t                      id;         /* the window's, now */
    fg_quota_count_t             c;          /* c.start: the bucket's */
    fg_quota_count_t             others;     /* the sync's answer */
    fg_quota_count_t             adopt;      /* and this gateway's own
                                                from another record */
    unsigned                     own:1;      /* counted here */
    unsigned                     add:1;      /* a new record's first sync:
                                                an earlier one's counts are
                                                added, not the larger kept */
    unsigned                     adopted:1;
} ngx_http_fairgate_qentry_t;


/* fairgate_quota_state, one per http block */
struct ngx_http_fairgate_qstate_conf_s {
    ngx_str_t                    path;       /* a directory, NUL-ended */
    ngx_msec_t                   interval;
};


/* what the module registers: fairgate_redis (_redis_conf.c); a worker's
 * link made and closed (_redis_link.c) */
char *ngx_http_fairgate_redis(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_fairgate_redis_init_process(ngx_cycle_t *cycle);
void ngx_http_fairgate_redis_exit_process(ngx_cycle_t *cycle);

/* _redis_sentinel.c */
ngx_http_fairgate_sentinel_t *ngx_http_fairgate_sentinel_create(
    ngx_http_fairgate_redis_link_t *link, ngx_pool_t *pool);
void ngx_http_fairgate_sentinel_ask(ngx_http_fairgate_redis_link_t *link);
void ngx_http_fairgate_sentinel_tick(ngx_http_fairgate_redis_link_t *link);
void ngx_http_fairgate_sentinel_close(ngx_http_fairgate_redis_link_t *link);

/* _redis_adapter.c */
ngx_connection_t *ngx_http_fairgate_redis_attach(struct redisAsyncContext *ac,
    ngx_log_t *log);

/* _redis_status.c: root is the status page's json_t */
ngx_int_t ngx_http_fairgate_redis_status_json(ngx_http_request_t *r,
    void *root);
ngx_int_t ngx_http_fairgate_redis_prom(ngx_http_request_t *r,
    ngx_http_fairgate_prom_t *w);

/* _redis_args.c: a script call's arguments, formatted into one buffer */
typedef struct {
    const char                     **argv;
    size_t                          *argvlen;
    ngx_uint_t                       argc;
    u_char                          *p;
    u_char                          *last;
} ngx_http_fairgate_redis_args_t;

#define ngx_http_fairgate_redis_literal(a, s)                                 \
    ngx_http_fairgate_redis_arg(a, s, sizeof(s) - 1)

ngx_int_t ngx_http_fairgate_redis_args_init(ngx_http_fairgate_redis_args_t *a,
    ngx_pool_t *pool, ngx_uint_t argc, size_t size);
void ngx_http_fairgate_redis_arg(ngx_http_fairgate_redis_args_t *a,
    const char *s, size_t len);
void ngx_http_fairgate_redis_argf(ngx_http_fairgate_redis_args_t *a,
    const char *fmt, ...);
void ngx_http_fairgate_redis_arg_end(ngx_http_fairgate_redis_args_t *a,
    u_char *p);

/* _redis_cmd.c: this worker's command link, connected at first use;
 * NULL: Redis is not reachable now (a failure's backoff is running) */
struct redisAsyncContext *ngx_http_fairgate_redis_cmd(
    ngx_http_fairgate_redis_conf_t *rc);
void ngx_http_fairgate_redis_cmd_drop(void);
void ngx_http_fairgate_redis_cmd_exit(void);

/* _qcount.c: under the zone's mutex */
ngx_int_t ngx_http_fairgate_qcount_copy(ngx_http_fairgate_zone_t *zone,
    ngx_array_t *entries, ngx_uint_t all, ngx_msec_t recent);
ngx_int_t ngx_http_fairgate_qcount_merge(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_qentry_t *e, ngx_uint_t make);
void ngx_http_fairgate_qcount_remote(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_qentry_t *e, fg_quota_count_t *sum);
u_char *ngx_http_fairgate_qcount_tag(u_char *p, fg_quota_per_t *per);

/* _qsync.c */
ngx_int_t ngx_http_fairgate_qsync_start(ngx_http_fairgate_redis_link_t *link);

/* _qstate.c */
char *ngx_http_fairgate_qstate(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
void ngx_http_fairgate_qstate_init_module(ngx_cycle_t *cycle);
void ngx_http_fairgate_qstate_init_process(ngx_cycle_t *cycle);
void ngx_http_fairgate_qstate_exit_process(ngx_cycle_t *cycle);

/* _sync.c */
ngx_int_t ngx_http_fairgate_sync_start(ngx_http_fairgate_redis_link_t *link);
ngx_uint_t ngx_http_fairgate_sync_late(ngx_http_fairgate_redis_link_t *link);


#endif /* _NGX_HTTP_FAIRGATE_REDIS_H_INCLUDED_ */
