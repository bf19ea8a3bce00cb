
/*
 * fairgate: each worker's own link to Redis for commands of its requests
 * (a key looked up, the admin API), beside the zones' sync links.
 *
 * Connected at the first command, non-blocking, in nginx's event loop
 * (ngx_http_fairgate_redis_adapter.c); AUTH and SELECT go first on it,
 * pipelined with what follows.  A caller sends its commands on the
 * context it is given and hears back through hiredis's callback; when the
 * link fails every pending callback runs with no reply, and the next
 * attempt waits (100 ms, doubling up to 5 s): meanwhile the caller is
 * told that Redis is not reachable, at once, rather than waiting on it.
 * A caller whose command took too long drops the link
 * (ngx_http_fairgate_redis_cmd_drop()): a Redis that hangs is found by
 * the first request that waits on it.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_fairgate_redis.h"


#define NGX_HTTP_FAIRGATE_CMD_BACKOFF_MIN  100
#define NGX_HTTP_FAIRGATE_CMD_BACKOFF_MAX  5000


/*
 * A link without a zone: the adapter finds its connection through
 * ac->data as it does a zone's link's, hence the link first.
 */
typedef struct {
    ngx_http_fairgate_redis_link_t   link;
    ngx_msec_t                       backoff;
    ngx_msec_t                       retry_at;
} ngx_http_fairgate_redis_cmd_t;


static void ngx_http_fairgate_redis_cmd_connected(const redisAsyncContext *ac,
    int status);
static void ngx_http_fairgate_redis_cmd_lost(const redisAsyncContext *ac,
    int status);
static void ngx_http_fairgate_redis_cmd_failed(void);


/* this worker's link */
static ngx_http_fairgate_redis_cmd_t  ngx_http_fairgate_redis_cmd_link;


redisAsyncContext *
ngx_http_fairgate_redis_cmd(ngx_http_fairgate_redis_conf_t *rc)
{
    ngx_connection_t               *c;
    redisAsyncContext              *ac;
    ngx_http_fairgate_redis_cmd_t  *link;

    link = &ngx_http_fairgate_redis_cmd_link;

    if (link->link.ac) {
        return link->link.ac;
    }

    if (link->link.conf != rc) {
        /* a new cycle's configuration: a fresh start */
        link->link.conf = rc;
        link->backoff = NGX_HTTP_FAIRGATE_CMD_BACKOFF_MIN;
        link->retry_at = 0;
    }

    if (link->retry_at && (ngx_msec_int_t) (ngx_current_msec - link->retry_at)
                          < 0)
    {
        return NULL;
    }

    ac = rc->port ? redisAsyncConnect((char *) rc->host.data, (int) rc->port)
                  : redisAsyncConnectUnix((char *) rc->host.data);

    if (ac == NULL || ac->err) {
        if (ac) {
            redisAsyncFree(ac);
        }

        ngx_http_fairgate_redis_cmd_failed();
        return NULL;
    }

    c = ngx_http_fairgate_redis_attach(ac, ngx_cycle->log);
    if (c == NULL) {
        redisAsyncFree(ac);
        ngx_http_fairgate_redis_cmd_failed();
        return NULL;
    }

    ac->data = &link->link;
    link->link.ac = ac;

    (void) redisAsyncSetConnectCallback(ac,
                                        ngx_http_fairgate_redis_cmd_connected);
    (void) redisAsyncSetDisconnectCallback(ac,
                                           ngx_http_fairgate_redis_cmd_lost);

    /* their replies are not read: a refusal fails the commands after */

    if (rc->password.len) {
        (void) redisAsyncCommand(ac, NULL, NULL, "AUTH %b",
                                 rc->password.data, rc->password.len);
    }

    if (rc->db >= 0) {
        (void) redisAsyncCommand(ac, NULL, NULL, "SELECT %d", (int) rc->db);
    }

    return ac;
}


/* a command took too long: the link is dropped, its callbacks run */

void
ngx_http_fairgate_redis_cmd_drop(void)
{
    redisAsyncContext  *ac;

    ac = ngx_http_fairgate_redis_cmd_link.link.ac;

    if (ac == NULL) {
        return;
    }

    ngx_http_fairgate_redis_cmd_link.link.ac = NULL;
    ac->onDisconnect = NULL;

    ngx_http_fairgate_redis_cmd_failed();

    redisAsyncFree(ac);
}


static void
ngx_http_fairgate_redis_cmd_connected(const redisAsyncContext *ac,
    int status)
{
    ngx_http_fairgate_redis_cmd_t  *link = ac->data;

    if (status != REDIS_OK) {
        /* hiredis frees the context when this returns */
        link->link.ac = NULL;
        ngx_http_fairgate_redis_cmd_failed();
        return;
    }

    link->backoff = NGX_HTTP_FAIRGATE_CMD_BACKOFF_MIN;
    link->retry_at = 0;
}


static void
ngx_http_fairgate_redis_cmd_lost(const redisAsyncContext *ac, int status)
{
    ngx_http_fairgate_redis_cmd_t  *link = ac->data;

    link->link.ac = NULL;

    if (status != REDIS_OK) {
        ngx_http_fairgate_redis_cmd_failed();
    }
}


static void
ngx_http_fairgate_redis_cmd_failed(void)
{
    ngx_http_fairgate_redis_cmd_t  *link;

    link = &ngx_http_fairgate_redis_cmd_link;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "fairgate_redis: the command link failed, next try in "
                   "%M ms", link->backoff);

    link->retry_at = ngx_current_msec + link->backoff;
    link->backoff = ngx_min(link->backoff * 2,
                            NGX_HTTP_FAIRGATE_CMD_BACKOFF_MAX);
}


void
ngx_http_fairgate_redis_cmd_exit(void)
{
    ngx_http_fairgate_redis_cmd_drop();
}
