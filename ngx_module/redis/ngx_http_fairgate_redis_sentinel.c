
/*
 * fairgate: Redis Sentinel, for a link whose fairgate_redis names
 * sentinels: which server is the master, and when it changes.
 *
 * Asking: the sentinels are tried in turn, from the last one that
 * answered, each on a connection of its own (AUTH if the sentinels have a
 * password, then "SENTINEL get-master-addr-by-name NAME"), each within the
 * link's timeout; the first address given goes to the link, which
 * connects to it and checks with ROLE that it is a master.  Watching: the
 * syncing worker stays subscribed to "+switch-master" on one sentinel, so
 * that a failover moves the link at once rather than at its next failure.
 * Both are hiredis's async API in nginx's event loop, as the link is
 * (ngx_http_fairgate_redis_adapter.c): no call here waits on a sentinel.
 * What is found goes back through the link's "found" (set by the link),
 * so that this file never calls the link by name.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_fairgate_redis.h"


/* a lost watch is made again after this long */
#define NGX_HTTP_FAIRGATE_SENTINEL_RETRY  1000


/* a connection to a sentinel: the question's or the watch's */
typedef struct {
    ngx_http_fairgate_sentinel_t    *sentinel;
    redisAsyncContext               *ac;
    ngx_uint_t                       index;  /* of conf->sentinels */
    ngx_msec_t                       since;
    unsigned                         watch:1;
} ngx_http_fairgate_sentinel_conn_t;


struct ngx_http_fairgate_sentinel_s {
    ngx_http_fairgate_redis_link_t     *link;
    ngx_http_fairgate_sentinel_conn_t   ask;
    ngx_http_fairgate_sentinel_conn_t   watch;
    ngx_uint_t                          first;  /* the last that answered */
    ngx_uint_t                          tries;  /* asked in this turn */
    ngx_msec_t                          watch_at; /* no watch before */
    const char                         *why;    /* the last refusal */
    unsigned                            asking:1;
};


static void ngx_http_fairgate_sentinel_next(ngx_http_fairgate_sentinel_t *s);
static ngx_int_t ngx_http_fairgate_sentinel_open(
    ngx_http_fairgate_sentinel_conn_t *c, ngx_uint_t index);
static void ngx_http_fairgate_sentinel_drop(
    ngx_http_fairgate_sentinel_conn_t *c);
static void ngx_http_fairgate_sentinel_connected(const redisAsyncContext *ac,
    int status);
static void ngx_http_fairgate_sentinel_disconnected(
    const redisAsyncContext *ac, int status);
static void ngx_http_fairgate_sentinel_lost(
    ngx_http_fairgate_sentinel_conn_t *c);
static void ngx_http_fairgate_sentinel_auth_reply(redisAsyncContext *ac,
    void *r, void *data);
static void ngx_http_fairgate_sentinel_addr_reply(redisAsyncContext *ac,
    void *r, void *data);
static void ngx_http_fairgate_sentinel_message(redisAsyncContext *ac,
    void *r, void *data);
static ngx_int_t ngx_http_fairgate_sentinel_found(
    ngx_http_fairgate_sentinel_t *s, ngx_str_t *host, ngx_str_t *port,
    ngx_uint_t announced);


ngx_http_fairgate_sentinel_t *
ngx_http_fairgate_sentinel_create(ngx_http_fairgate_redis_link_t *link,
    ngx_pool_t *pool)
{
    ngx_http_fairgate_sentinel_t  *s;

    s = ngx_pcalloc(pool, sizeof(ngx_http_fairgate_sentinel_t));
    if (s == NULL) {
        return NULL;
    }

    s->link = link;
    s->ask.sentinel = s;
    s->watch.sentinel = s;
    s->watch.watch = 1;

    return s;
}


/* asks the sentinels where the master is; the answer goes to link->found */

void
ngx_http_fairgate_sentinel_ask(ngx_http_fairgate_redis_link_t *link)
{
    ngx_http_fairgate_sentinel_t  *s = link->sentinel;

    if (s->asking) {
        return;
    }

    s->asking = 1;
    s->tries = 0;
    s->why = "no sentinel answered";

    ngx_http_fairgate_sentinel_next(s);
}


/* the next sentinel in turn, or the end of the turn: none answered */

static void
ngx_http_fairgate_sentinel_next(ngx_http_fairgate_sentinel_t *s)
{
    ngx_uint_t                       n;
    ngx_http_fairgate_redis_link_t  *link;

    link = s->link;
    n = link->conf->sentinels->nelts;

    ngx_http_fairgate_sentinel_drop(&s->ask);

    while (s->tries < n) {
        if (ngx_http_fairgate_sentinel_open(&s->ask,
                                            (s->first + s->tries++) % n)
            == NGX_OK)
        {
            return;
        }
    }

    s->asking = 0;
    link->found(link, s->why, NULL, 0, 0);
}


/*
 * Every tick of the syncing worker: a question unanswered within the
 * timeout goes to the next sentinel; the watch is made, or made again.
 */

void
ngx_http_fairgate_sentinel_tick(ngx_http_fairgate_redis_link_t *link)
{
    ngx_uint_t                     n;
    ngx_http_fairgate_sentinel_t  *s = link->sentinel;

    if (s->asking && s->ask.ac
        && ngx_current_msec - s->ask.since >= link->conf->timeout)
    {
        s->why = "the sentinels timed out";
        ngx_http_fairgate_sentinel_next(s);
    }

    if (s->watch.ac == NULL
        && (ngx_msec_int_t) (ngx_current_msec - s->watch_at) >= 0)
    {
        n = link->conf->sentinels->nelts;
        s->watch_at = ngx_current_msec + NGX_HTTP_FAIRGATE_SENTINEL_RETRY;

        (void) ngx_http_fairgate_sentinel_open(&s->watch,
                                               (s->watch.index + 1) % n);
    }
}


/* both connections closed: the worker exits or another one syncs */

void
ngx_http_fairgate_sentinel_close(ngx_http_fairgate_redis_link_t *link)
{
    ngx_http_fairgate_sentinel_t  *s = link->sentinel;

    if (s == NULL) {
        return;
    }

    s->asking = 0;
    s->watch_at = ngx_current_msec;

    ngx_http_fairgate_sentinel_drop(&s->ask);
    ngx_http_fairgate_sentinel_drop(&s->watch);
}


static ngx_int_t
ngx_http_fairgate_sentinel_open(ngx_http_fairgate_sentinel_conn_t *c,
    ngx_uint_t index)
{
    redisAsyncContext               *ac;
    ngx_http_fairgate_redis_addr_t  *sa;
    ngx_http_fairgate_redis_link_t  *link;

    link = c->sentinel->link;
    sa = link->conf->sentinels->elts;
    sa = &sa[index];

    c->index = index;

    ac = redisAsyncConnect((char *) sa->host, sa->port);
    if (ac == NULL) {
        return NGX_ERROR;
    }

    if (ac->err || ngx_http_fairgate_redis_attach(ac, link->log) == NULL) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, link->log, 0,
                       "fairgate_redis: sentinel %V: %s", &sa->text,
                       ac->err ? ac->errstr : "no free connection");
        redisAsyncFree(ac);
        return NGX_ERROR;
    }

    ac->data = c;
    c->ac = ac;
    c->since = ngx_current_msec;

    (void) redisAsyncSetDisconnectCallback(ac,
                                     ngx_http_fairgate_sentinel_disconnected);
    (void) redisAsyncSetConnectCallback(ac,
                                        ngx_http_fairgate_sentinel_connected);
    return NGX_OK;
}


/* ours, closed by us: its callbacks then find it no longer ours */

static void
ngx_http_fairgate_sentinel_drop(ngx_http_fairgate_sentinel_conn_t *c)
{
    redisAsyncContext  *ac;

    ac = c->ac;

    if (ac == NULL) {
        return;
    }

    c->ac = NULL;
    ac->onDisconnect = NULL;

    redisAsyncFree(ac);
}


static void
ngx_http_fairgate_sentinel_connected(const redisAsyncContext *cac,
    int status)
{
    ngx_http_fairgate_sentinel_conn_t  *c = cac->data;

    redisAsyncContext               *ac;
    ngx_http_fairgate_redis_conf_t  *rc;

    if (c == NULL || c->ac != cac) {
        return;
    }

    ac = c->ac;

    if (status != REDIS_OK) {
        /* hiredis frees the context when this returns */
        c->ac = NULL;
        ngx_http_fairgate_sentinel_lost(c);
        return;
    }

    rc = c->sentinel->link->conf;

    if (rc->sentinel_password.len) {
        (void) redisAsyncCommand(ac, ngx_http_fairgate_sentinel_auth_reply,
                                 NULL, "AUTH %b", rc->sentinel_password.data,
                                 rc->sentinel_password.len);
    }

    if (c->watch) {
        (void) redisAsyncCommand(ac, ngx_http_fairgate_sentinel_message, NULL,
                                 "SUBSCRIBE +switch-master");
        return;
    }

    (void) redisAsyncCommand(ac, ngx_http_fairgate_sentinel_addr_reply, NULL,
                             "SENTINEL get-master-addr-by-name %b",
                             rc->master.data, rc->master.len);
}


static void
ngx_http_fairgate_sentinel_disconnected(const redisAsyncContext *ac,
    int status)
{
    ngx_http_fairgate_sentinel_conn_t  *c = ac->data;

    /* lost, not closed by us; hiredis frees the context when this returns */

    if (c->ac == ac) {
        c->ac = NULL;
        ngx_http_fairgate_sentinel_lost(c);
    }
}


/* a sentinel unreachable or gone: the next one is asked or watched */

static void
ngx_http_fairgate_sentinel_lost(ngx_http_fairgate_sentinel_conn_t *c)
{
    ngx_http_fairgate_sentinel_t  *s = c->sentinel;

    if (c->watch) {
        s->watch_at = ngx_current_msec + NGX_HTTP_FAIRGATE_SENTINEL_RETRY;
        return;
    }

    if (s->asking) {
        ngx_http_fairgate_sentinel_next(s);
    }
}


static void
ngx_http_fairgate_sentinel_auth_reply(redisAsyncContext *ac, void *r,
    void *data)
{
    ngx_http_fairgate_sentinel_conn_t  *c = ac->data;

    redisReply  *reply = r;

    if (reply == NULL || c == NULL || c->ac != ac
        || reply->type != REDIS_REPLY_ERROR)
    {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, c->sentinel->link->log, 0,
                  "fairgate_redis: AUTH to a sentinel failed: %*s",
                  (size_t) reply->len, reply->str);

    c->sentinel->why = "a sentinel refused AUTH";

    ngx_http_fairgate_sentinel_drop(c);
    ngx_http_fairgate_sentinel_lost(c);
}


/* ["HOST", "PORT"], or nil: this sentinel does not know the name */

static void
ngx_http_fairgate_sentinel_addr_reply(redisAsyncContext *ac, void *r,
    void *data)
{
    ngx_http_fairgate_sentinel_conn_t  *c = ac->data;

    ngx_str_t                      host, port;
    redisReply                    *reply = r;
    ngx_http_fairgate_sentinel_t  *s;

    if (reply == NULL || c == NULL || c->ac != ac) {
        return;
    }

    s = c->sentinel;

    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2
        && reply->element[0]->type == REDIS_REPLY_STRING
        && reply->element[1]->type == REDIS_REPLY_STRING)
    {
        host.data = (u_char *) reply->element[0]->str;
        host.len = reply->element[0]->len;
        port.data = (u_char *) reply->element[1]->str;
        port.len = reply->element[1]->len;

        if (ngx_http_fairgate_sentinel_found(s, &host, &port, 0) == NGX_OK) {
            return;
        }

    } else if (reply->type == REDIS_REPLY_ERROR) {
        s->why = "a sentinel refused the question";

    } else {
        s->why = "the sentinels do not know the master's name";
    }

    ngx_http_fairgate_sentinel_next(s);
}


/* "+switch-master" published: "NAME OLDHOST OLDPORT NEWHOST NEWPORT" */

static void
ngx_http_fairgate_sentinel_message(redisAsyncContext *ac, void *r,
    void *data)
{
    ngx_http_fairgate_sentinel_conn_t  *c = ac->data;

    u_char                          *p, *last;
    ngx_str_t                        w[5];
    ngx_uint_t                       i;
    redisReply                      *reply = r, *msg;
    ngx_http_fairgate_redis_conf_t  *rc;

    if (reply == NULL || c == NULL || c->ac != ac
        || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3
        || reply->element[2]->type != REDIS_REPLY_STRING)
    {
        return;
    }

    msg = reply->element[2];
    p = (u_char *) msg->str;
    last = p + msg->len;

    for (i = 0; i < 5; i++) {
        while (p < last && *p == ' ') {
            p++;
        }

        w[i].data = p;

        while (p < last && *p != ' ') {
            p++;
        }

        w[i].len = p - w[i].data;
    }

    rc = c->sentinel->link->conf;

    if (w[4].len == 0 || w[0].len != rc->master.len
        || ngx_strncmp(w[0].data, rc->master.data, w[0].len) != 0)
    {
        return;
    }

    (void) ngx_http_fairgate_sentinel_found(c->sentinel, &w[3], &w[4], 1);
}


/*
 * An address the sentinels gave: to the link, if it is one (a numeric
 * address, that connecting may not wait on DNS).  The question's
 * connection is done with.
 */

static ngx_int_t
ngx_http_fairgate_sentinel_found(ngx_http_fairgate_sentinel_t *s,
    ngx_str_t *host, ngx_str_t *port, ngx_uint_t announced)
{
    u_char                           text[NGX_SOCKADDR_STRLEN + 1];
    ngx_int_t                        n;
    ngx_uint_t                       numeric;
    ngx_http_fairgate_redis_link_t  *link;
#if (NGX_HAVE_INET6)
    u_char                           in6[16];
#endif

    link = s->link;
    n = ngx_atoi(port->data, port->len);
    numeric = (host->len <= NGX_SOCKADDR_STRLEN
               && ngx_inet_addr(host->data, host->len) != INADDR_NONE);

#if (NGX_HAVE_INET6)
    numeric = numeric || (host->len <= NGX_SOCKADDR_STRLEN
                          && ngx_inet6_addr(host->data, host->len, in6)
                             == NGX_OK);
#endif

    if (n < 1 || n > 65535 || !numeric) {
        ngx_log_error(NGX_LOG_ERR, link->log, 0,
                      "fairgate_redis: a sentinel names master \"%V\" at "
                      "\"%V\" port \"%V\", not a numeric address",
                      &link->conf->master, host, port);
        s->why = "a sentinel gave no numeric address";
        return NGX_DECLINED;
    }

    ngx_memcpy(text, host->data, host->len);
    text[host->len] = '\0';

    if (!announced) {
        s->first = s->ask.index;
    }

    /* an announcement answers a question in flight too */
    s->asking = 0;
    ngx_http_fairgate_sentinel_drop(&s->ask);

    link->found(link, NULL, text, (int) n, announced);

    return NGX_OK;
}
