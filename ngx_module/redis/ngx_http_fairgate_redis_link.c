
/*
 * fairgate: "fairgate_redis ADDRESS [password=P] [db=N] [prefix=P]
 * [interval=TIME] [timeout=TIME] [id=NAME];", several gateways sharing
 * their counters in Redis.
 *
 * Each zone has one worker that syncs it (its "owner", kept in the zone
 * with a heartbeat, taken over by another worker when it stops beating).
 * The owner keeps a connection to Redis through hiredis's async API, run
 * in nginx's event loop by the adapter below: the hooks add and delete
 * level-triggered events on a connection wrapping hiredis's socket (hiredis
 * reads 16 KB a call, and an edge-triggered event would stall a larger
 * reply), and the cleanup hook gives the connection back without closing
 * the socket, which hiredis closes.  No call here waits on Redis: the
 * address is resolved at configuration time, connecting is non-blocking,
 * and every command is pipelined with a callback.
 *
 * Every interval the owner runs a sync round (ngx_http_fairgate_sync.c).
 * Redis unreachable, slow (a connection or a round taking over "timeout")
 * or answering errors: the link is dropped, the zone's state says "down"
 * (logged once), the limits and the scheduler go on with local counters
 * only, and connecting is retried with exponential backoff; the first
 * round after reconnecting pushes every tenant's figures again, which is
 * all a restarted, empty Redis needs.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <jansson.h>

#include "ngx_http_fairgate_redis.h"


#define NGX_HTTP_FAIRGATE_REDIS_INTERVAL  1000
#define NGX_HTTP_FAIRGATE_REDIS_TIMEOUT   1000
#define NGX_HTTP_FAIRGATE_BACKOFF_MIN     100
#define NGX_HTTP_FAIRGATE_BACKOFF_MAX     5000


static void ngx_http_fairgate_redis_tick(ngx_event_t *ev);
static ngx_uint_t ngx_http_fairgate_redis_own(
    ngx_http_fairgate_redis_link_t *link);
static void ngx_http_fairgate_redis_connect(
    ngx_http_fairgate_redis_link_t *link);
static void ngx_http_fairgate_redis_close(
    ngx_http_fairgate_redis_link_t *link);
static void ngx_http_fairgate_redis_connected(const redisAsyncContext *ac,
    int status);
static void ngx_http_fairgate_redis_disconnected(const redisAsyncContext *ac,
    int status);
static void ngx_http_fairgate_redis_setup_reply(redisAsyncContext *ac,
    void *r, void *data);
static void ngx_http_fairgate_redis_read_handler(ngx_event_t *ev);
static void ngx_http_fairgate_redis_write_handler(ngx_event_t *ev);
static void ngx_http_fairgate_redis_add_read(void *data);
static void ngx_http_fairgate_redis_del_read(void *data);
static void ngx_http_fairgate_redis_add_write(void *data);
static void ngx_http_fairgate_redis_del_write(void *data);
static void ngx_http_fairgate_redis_cleanup(void *data);
static const char *ngx_http_fairgate_redis_state_name(ngx_uint_t state);
static json_t *ngx_http_fairgate_redis_zone_json(
    ngx_http_fairgate_zone_t *zone);
static u_char *ngx_http_fairgate_redis_label(u_char *p, ngx_str_t *name);


/* a tenant's global figures, copied out of the zone for the status page */
typedef struct {
    u_char                       name[NGX_HTTP_FAIRGATE_NAME_LEN + 1];
    size_t                       len;
    ngx_uint_t                   kind;
    uint64_t                     requests;
    uint64_t                     tokens;
    double                       service;
} ngx_http_fairgate_redis_snap_t;


/* this worker's links, one a zone, from init_process */
static ngx_http_fairgate_redis_link_t  *ngx_http_fairgate_redis_links;
static ngx_uint_t                       ngx_http_fairgate_redis_nlinks;


char *
ngx_http_fairgate_redis(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_main_conf_t  *fmcf = conf;

    u_char                          *p;
    ngx_int_t                        n;
    ngx_str_t                       *value, s;
    ngx_url_t                        u;
    ngx_uint_t                       i;
    ngx_msec_t                       ms;
    ngx_http_fairgate_redis_conf_t  *rc;

    if (fmcf->redis) {
        return "is duplicate";
    }

    value = cf->args->elts;

    rc = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_redis_conf_t));
    if (rc == NULL) {
        return NGX_CONF_ERROR;
    }

    rc->address = value[1];
    rc->db = -1;
    rc->interval = NGX_CONF_UNSET_MSEC;
    rc->timeout = NGX_CONF_UNSET_MSEC;
    ngx_str_set(&rc->prefix, "fairgate:");
    rc->id = cf->cycle->hostname;

    /* resolved here: a worker must not wait on DNS */

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url = value[1];
    u.default_port = 6379;

    if (ngx_parse_url(cf->pool, &u) != NGX_OK || u.naddrs == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid address \"%V\" in \"fairgate_redis\"%s%s",
                           &value[1], u.err ? ": " : "",
                           u.err ? u.err : "");
        return NGX_CONF_ERROR;
    }

    if (u.family == AF_UNIX) {
        rc->port = 0;
        rc->host.len = value[1].len - 5;
        rc->host.data = ngx_pnalloc(cf->pool, rc->host.len + 1);
        if (rc->host.data == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memcpy(rc->host.data, value[1].data + 5, rc->host.len);
        rc->host.data[rc->host.len] = '\0';

    } else {
        rc->port = u.port;
        rc->host.data = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN + 1);
        if (rc->host.data == NULL) {
            return NGX_CONF_ERROR;
        }

        rc->host.len = ngx_sock_ntop(u.addrs[0].sockaddr,
                                     u.addrs[0].socklen, rc->host.data,
                                     NGX_SOCKADDR_STRLEN, 0);
        rc->host.data[rc->host.len] = '\0';
    }

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "password=", 9) == 0) {
            rc->password.data = value[i].data + 9;
            rc->password.len = value[i].len - 9;

            if (rc->password.len == 0) {
                goto invalid;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "db=", 3) == 0) {
            n = ngx_atoi(value[i].data + 3, value[i].len - 3);

            if (n == NGX_ERROR || n > 1000000) {
                goto invalid;
            }

            rc->db = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "prefix=", 7) == 0) {
            rc->prefix.data = value[i].data + 7;
            rc->prefix.len = value[i].len - 7;
            continue;
        }

        if (ngx_strncmp(value[i].data, "id=", 3) == 0) {
            rc->id.data = value[i].data + 3;
            rc->id.len = value[i].len - 3;

            if (rc->id.len == 0 || rc->id.len > 128) {
                goto invalid;
            }

            for (p = rc->id.data; p < rc->id.data + rc->id.len; p++) {
                if (*p <= ' ' || *p == ':' || *p >= 0x7f) {
                    goto invalid;
                }
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "interval=", 9) == 0
            || ngx_strncmp(value[i].data, "timeout=", 8) == 0)
        {
            p = (u_char *) ngx_strchr(value[i].data, '=') + 1;

            s.data = p;
            s.len = value[i].data + value[i].len - p;

            ms = ngx_parse_time(&s, 0);

            if (ms == (ngx_msec_t) NGX_ERROR || ms < 10 || ms > 600000) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid time \"%V\" in "
                                   "\"fairgate_redis\", expected 10ms to "
                                   "10m", &value[i]);
                return NGX_CONF_ERROR;
            }

            if (value[i].data[0] == 'i') {
                rc->interval = ms;

            } else {
                rc->timeout = ms;
            }

            continue;
        }

        goto invalid;
    }

    if (rc->interval == NGX_CONF_UNSET_MSEC) {
        rc->interval = NGX_HTTP_FAIRGATE_REDIS_INTERVAL;
    }

    if (rc->timeout == NGX_CONF_UNSET_MSEC) {
        rc->timeout = NGX_HTTP_FAIRGATE_REDIS_TIMEOUT;
    }

    fmcf->redis = rc;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\" in \"fairgate_redis\"",
                       &value[i]);
    return NGX_CONF_ERROR;
}


ngx_int_t
ngx_http_fairgate_redis_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                       i;
    ngx_http_fairgate_zone_t       **zone;
    ngx_http_fairgate_redis_link_t  *link;
    ngx_http_fairgate_main_conf_t   *fmcf;

    fmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_fairgate_module);

    if (fmcf == NULL || fmcf->zones.nelts == 0) {
        return NGX_OK;
    }

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    zone = fmcf->zones.elts;

    if (fmcf->redis == NULL) {

        /*
         * A reload took fairgate_redis away: the zone counts locally from
         * now on, whatever the previous generation last synced.
         */

        for (i = 0; i < fmcf->zones.nelts; i++) {
            ngx_shmtx_lock(&zone[i]->shpool->mutex);
            zone[i]->sh->redis.state = NGX_HTTP_FAIRGATE_REDIS_OFF;
            zone[i]->sh->redis.epoch++;
            ngx_shmtx_unlock(&zone[i]->shpool->mutex);
        }

        return NGX_OK;
    }

    link = ngx_pcalloc(cycle->pool, fmcf->zones.nelts
                                    * sizeof(ngx_http_fairgate_redis_link_t));
    if (link == NULL) {
        return NGX_ERROR;
    }

    ngx_http_fairgate_redis_links = link;
    ngx_http_fairgate_redis_nlinks = fmcf->zones.nelts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        link[i].zone = zone[i];
        link[i].conf = fmcf->redis;
        link[i].log = cycle->log;
        link[i].backoff = NGX_HTTP_FAIRGATE_BACKOFF_MIN;

        link[i].tick.handler = ngx_http_fairgate_redis_tick;
        link[i].tick.data = &link[i];
        link[i].tick.log = cycle->log;
        link[i].tick.cancelable = 1;

        /* the first tick at once: a starting gateway syncs early */
        ngx_add_timer(&link[i].tick, 1);
    }

    return NGX_OK;
}


void
ngx_http_fairgate_redis_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                       i;
    ngx_http_fairgate_redis_link_t  *link;

    for (i = 0; i < ngx_http_fairgate_redis_nlinks; i++) {
        link = &ngx_http_fairgate_redis_links[i];

        if (link->tick.timer_set) {
            ngx_del_timer(&link->tick);
        }

        ngx_http_fairgate_redis_close(link);

        if (link->owner) {
            ngx_shmtx_lock(&link->zone->shpool->mutex);

            if (link->zone->sh->redis.owner == ngx_pid) {
                link->zone->sh->redis.owner = 0;
            }

            ngx_shmtx_unlock(&link->zone->shpool->mutex);
        }
    }

    ngx_http_fairgate_redis_nlinks = 0;
}


static void
ngx_http_fairgate_redis_tick(ngx_event_t *ev)
{
    ngx_http_fairgate_redis_link_t  *link = ev->data;

    ngx_msec_t  elapsed;

    if (ngx_exiting || ngx_quit || ngx_terminate) {

        /* the next generation's workers take over */

        ngx_http_fairgate_redis_close(link);

        ngx_shmtx_lock(&link->zone->shpool->mutex);

        if (link->zone->sh->redis.owner == ngx_pid) {
            link->zone->sh->redis.owner = 0;
        }

        ngx_shmtx_unlock(&link->zone->shpool->mutex);

        link->owner = 0;
        return;
    }

    ngx_add_timer(ev, link->conf->interval);

    if (!ngx_http_fairgate_redis_own(link)) {
        ngx_http_fairgate_redis_close(link);
        return;
    }

    if (link->ac == NULL) {
        if ((ngx_msec_int_t) (ngx_current_msec - link->retry_at) >= 0) {
            ngx_http_fairgate_redis_connect(link);
        }

        return;
    }

    if (!link->connected) {
        elapsed = ngx_current_msec - link->connecting;

        if (elapsed >= link->conf->timeout) {
            ngx_http_fairgate_redis_fail(link, "connecting timed out");
        }

        return;
    }

    if (link->round) {
        if (ngx_http_fairgate_sync_late(link)) {
            ngx_http_fairgate_redis_fail(link, "a sync round timed out");
        }

        return;
    }

    if (ngx_http_fairgate_sync_start(link) != NGX_OK) {
        ngx_http_fairgate_redis_fail(link, "a sync round failed to start");
    }
}


/* 1 if this worker syncs the zone: it does, or its owner stopped beating */

static ngx_uint_t
ngx_http_fairgate_redis_own(ngx_http_fairgate_redis_link_t *link)
{
    ngx_msec_t                     now, late;
    ngx_uint_t                     own;
    ngx_http_fairgate_redis_sh_t  *rs;

    now = ngx_http_fairgate_wall_msec();
    late = 3 * link->conf->interval + 1000;
    rs = &link->zone->sh->redis;
    own = 0;

    ngx_shmtx_lock(&link->zone->shpool->mutex);

    if (rs->owner == ngx_pid
        || rs->owner == 0
        || (ngx_msec_int_t) (now - rs->heartbeat) > (ngx_msec_int_t) late)
    {
        rs->owner = ngx_pid;
        rs->heartbeat = now;
        rs->stale = late;

        if (rs->stamp == 0) {
            rs->stamp = now;
        }

        if (rs->state == NGX_HTTP_FAIRGATE_REDIS_OFF) {
            rs->state = NGX_HTTP_FAIRGATE_REDIS_CONNECTING;
        }

        own = 1;
    }

    if (own && link->field.len == 0) {
        link->field.data = ngx_pnalloc(ngx_cycle->pool,
                                       link->conf->id.len + 2 * NGX_INT64_LEN
                                       + 3);
        if (link->field.data) {
            link->field.len = ngx_sprintf(link->field.data, "%V:%P:%uL:",
                                          &link->conf->id,
                                          (ngx_pid_t) getppid(),
                                          (uint64_t) rs->stamp)
                              - link->field.data;
        }
    }

    ngx_shmtx_unlock(&link->zone->shpool->mutex);

    if (own && link->field.len == 0) {
        own = 0;
    }

    link->owner = own;

    return own;
}


static void
ngx_http_fairgate_redis_connect(ngx_http_fairgate_redis_link_t *link)
{
    ngx_connection_t                *c;
    redisAsyncContext               *ac;
    ngx_http_fairgate_redis_conf_t  *rc;

    rc = link->conf;

    if (rc->port) {
        ac = redisAsyncConnect((char *) rc->host.data, (int) rc->port);

    } else {
        ac = redisAsyncConnectUnix((char *) rc->host.data);
    }

    if (ac == NULL) {
        ngx_http_fairgate_redis_fail(link, "out of memory");
        return;
    }

    if (ac->err) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, link->log, 0,
                       "fairgate_redis: connect: %s", ac->errstr);
        redisAsyncFree(ac);
        ngx_http_fairgate_redis_fail(link, "connect() failed");
        return;
    }

    c = ngx_get_connection(ac->c.fd, link->log);
    if (c == NULL) {
        redisAsyncFree(ac);
        ngx_http_fairgate_redis_fail(link, "no free connection");
        return;
    }

    c->data = ac;
    c->read->handler = ngx_http_fairgate_redis_read_handler;
    c->write->handler = ngx_http_fairgate_redis_write_handler;
    c->read->log = link->log;
    c->write->log = link->log;

    link->ac = ac;
    link->conn = c;
    link->connected = 0;
    link->connecting = ngx_current_msec;

    ac->data = link;
    ac->ev.data = c;
    ac->ev.addRead = ngx_http_fairgate_redis_add_read;
    ac->ev.delRead = ngx_http_fairgate_redis_del_read;
    ac->ev.addWrite = ngx_http_fairgate_redis_add_write;
    ac->ev.delWrite = ngx_http_fairgate_redis_del_write;
    ac->ev.cleanup = ngx_http_fairgate_redis_cleanup;

    /* hiredis waits for the first write event with this */

    (void) redisAsyncSetDisconnectCallback(ac,
                                          ngx_http_fairgate_redis_disconnected);
    (void) redisAsyncSetConnectCallback(ac,
                                        ngx_http_fairgate_redis_connected);
}


static void
ngx_http_fairgate_redis_connected(const redisAsyncContext *cac, int status)
{
    ngx_http_fairgate_redis_link_t  *link = cac->data;

    ngx_http_fairgate_redis_sh_t  *rs;
    redisAsyncContext             *ac;

    if (link == NULL) {
        return;
    }

    if (status != REDIS_OK) {

        /* hiredis frees the context when this returns */

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, link->log, 0,
                       "fairgate_redis: connect: %s", cac->errstr);

        link->ac = NULL;
        ngx_http_fairgate_redis_fail(link, "connecting failed");
        return;
    }

    ac = link->ac;
    link->connected = 1;
    link->rounds = 0;
    link->connecting = 0;

    if (link->conf->password.len) {
        (void) redisAsyncCommand(ac, ngx_http_fairgate_redis_setup_reply,
                                 (void *) "AUTH", "AUTH %b",
                                 link->conf->password.data,
                                 link->conf->password.len);
    }

    if (link->conf->db >= 0) {
        (void) redisAsyncCommand(ac, ngx_http_fairgate_redis_setup_reply,
                                 (void *) "SELECT", "SELECT %d",
                                 (int) link->conf->db);
    }

    /*
     * A new epoch: what tenants hold of the global picture is old until a
     * round of this connection refreshes it.
     */

    rs = &link->zone->sh->redis;

    ngx_shmtx_lock(&link->zone->shpool->mutex);
    rs->epoch++;
    ngx_shmtx_unlock(&link->zone->shpool->mutex);

    /* resynchronise at once, behind AUTH and SELECT on the same link */

    if (link->round == NULL && ngx_http_fairgate_sync_start(link) != NGX_OK) {
        ngx_http_fairgate_redis_fail(link, "a sync round failed to start");
    }
}


static void
ngx_http_fairgate_redis_setup_reply(redisAsyncContext *ac, void *r,
    void *data)
{
    ngx_http_fairgate_redis_link_t  *link = ac->data;

    redisReply  *reply = r;

    if (reply == NULL || link == NULL) {
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_ERR, link->log, 0,
                      "fairgate_redis: %s failed: %*s", (char *) data,
                      (size_t) reply->len, reply->str);
        ngx_http_fairgate_redis_fail(link, "the server refused the link");
    }
}


static void
ngx_http_fairgate_redis_disconnected(const redisAsyncContext *ac, int status)
{
    ngx_http_fairgate_redis_link_t  *link = ac->data;

    /*
     * Lost, not closed by us (that clears the callback first); hiredis
     * frees the context when this returns.
     */

    link->ac = NULL;
    link->connected = 0;

    ngx_http_fairgate_redis_fail(link, (status == REDIS_OK)
                                       ? "the server closed the connection"
                                       : "the connection failed");
}


/*
 * Redis is down, slow or refusing: drop the link (its round ends with it),
 * say so once, and retry later, each failure waiting twice as long.
 */

void
ngx_http_fairgate_redis_fail(ngx_http_fairgate_redis_link_t *link,
    const char *why)
{
    ngx_uint_t                     was;
    ngx_http_fairgate_redis_sh_t  *rs;

    ngx_http_fairgate_redis_close(link);

    rs = &link->zone->sh->redis;

    ngx_shmtx_lock(&link->zone->shpool->mutex);

    was = rs->state;
    rs->errors++;

    if (was != NGX_HTTP_FAIRGATE_REDIS_DOWN) {
        rs->state = NGX_HTTP_FAIRGATE_REDIS_DOWN;
        rs->failures++;
        rs->down_since = ngx_time();
    }

    ngx_shmtx_unlock(&link->zone->shpool->mutex);

    if (was != NGX_HTTP_FAIRGATE_REDIS_DOWN) {
        ngx_log_error(NGX_LOG_WARN, link->log, 0,
                      "fairgate_redis: Redis at %V is down for zone \"%V\" "
                      "(%s): counting locally, reconnecting with backoff",
                      &link->conf->address, &link->zone->name, why);

    } else {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, link->log, 0,
                       "fairgate_redis: still down for zone \"%V\": %s",
                       &link->zone->name, why);
    }

    link->retry_at = ngx_current_msec + link->backoff;
    link->backoff *= 2;

    if (link->backoff > NGX_HTTP_FAIRGATE_BACKOFF_MAX) {
        link->backoff = NGX_HTTP_FAIRGATE_BACKOFF_MAX;
    }
}


/* a round went through: the zone sees the global picture again */

void
ngx_http_fairgate_redis_synced(ngx_http_fairgate_redis_link_t *link,
    ngx_uint_t tenants, ngx_msec_t took)
{
    time_t                         down;
    ngx_uint_t                     was;
    ngx_http_fairgate_redis_sh_t  *rs;

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        /* the next generation decides, maybe to go without Redis */
        return;
    }

    rs = &link->zone->sh->redis;

    ngx_shmtx_lock(&link->zone->shpool->mutex);

    was = rs->state;
    down = rs->down_since;

    rs->state = NGX_HTTP_FAIRGATE_REDIS_UP;
    rs->syncs++;
    rs->synced = tenants;
    rs->round_ms = took;
    rs->last_sync = ngx_http_fairgate_wall_msec();

    ngx_shmtx_unlock(&link->zone->shpool->mutex);

    link->backoff = NGX_HTTP_FAIRGATE_BACKOFF_MIN;

    if (was == NGX_HTTP_FAIRGATE_REDIS_DOWN) {
        ngx_log_error(NGX_LOG_NOTICE, link->log, 0,
                      "fairgate_redis: Redis at %V is back for zone \"%V\" "
                      "after %T s: counters resynchronised",
                      &link->conf->address, &link->zone->name,
                      ngx_time() - down);

    } else if (was == NGX_HTTP_FAIRGATE_REDIS_CONNECTING) {
        ngx_log_error(NGX_LOG_INFO, link->log, 0,
                      "fairgate_redis: zone \"%V\" syncs with Redis at %V "
                      "every %M ms", &link->zone->name, &link->conf->address,
                      link->conf->interval);
    }
}


/* frees the link's context: pending callbacks run with no reply */

static void
ngx_http_fairgate_redis_close(ngx_http_fairgate_redis_link_t *link)
{
    redisAsyncContext  *ac;

    ac = link->ac;

    if (ac == NULL) {
        return;
    }

    link->ac = NULL;
    link->connected = 0;
    link->connecting = 0;

    /* callbacks still find the link: a round in flight must end */
    ac->onDisconnect = NULL;

    redisAsyncFree(ac);
}


/* the adapter: hiredis's hooks on nginx events */

static void
ngx_http_fairgate_redis_read_handler(ngx_event_t *ev)
{
    ngx_connection_t  *c = ev->data;

    redisAsyncHandleRead(c->data);
}


static void
ngx_http_fairgate_redis_write_handler(ngx_event_t *ev)
{
    ngx_connection_t  *c = ev->data;

    redisAsyncHandleWrite(c->data);
}


static void
ngx_http_fairgate_redis_add_read(void *data)
{
    ngx_connection_t  *c = data;

    ngx_event_t  *ev;

    ev = c->read;

    if (!ev->active && ngx_add_event(ev, NGX_READ_EVENT, NGX_LEVEL_EVENT)
                       != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0,
                      "fairgate_redis: adding a read event failed");
    }
}


static void
ngx_http_fairgate_redis_del_read(void *data)
{
    ngx_connection_t  *c = data;

    ngx_event_t  *ev;

    ev = c->read;

    if (ev->active) {
        (void) ngx_del_event(ev, NGX_READ_EVENT, 0);
    }
}


static void
ngx_http_fairgate_redis_add_write(void *data)
{
    ngx_connection_t  *c = data;

    ngx_event_t  *ev;

    ev = c->write;

    if (!ev->active && ngx_add_event(ev, NGX_WRITE_EVENT, NGX_LEVEL_EVENT)
                       != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0,
                      "fairgate_redis: adding a write event failed");
    }
}


static void
ngx_http_fairgate_redis_del_write(void *data)
{
    ngx_connection_t  *c = data;

    ngx_event_t  *ev;

    ev = c->write;

    if (ev->active) {
        (void) ngx_del_event(ev, NGX_WRITE_EVENT, 0);
    }
}


/* hiredis is done with the socket and closes it itself */

static void
ngx_http_fairgate_redis_cleanup(void *data)
{
    ngx_connection_t  *c = data;

    redisAsyncContext               *ac;
    ngx_http_fairgate_redis_link_t  *link;

    ac = c->data;
    link = ac->data;

    if (link->conn == c) {
        link->conn = NULL;
    }

    if (c->read->active) {
        (void) ngx_del_event(c->read, NGX_READ_EVENT, NGX_CLOSE_EVENT);
    }

    if (c->write->active) {
        (void) ngx_del_event(c->write, NGX_WRITE_EVENT, NGX_CLOSE_EVENT);
    }

    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }

    c->read->closed = 1;
    c->write->closed = 1;

    ngx_free_connection(c);

    c->fd = (ngx_socket_t) -1;
}


static const char *
ngx_http_fairgate_redis_state_name(ngx_uint_t state)
{
    static const char  *names[] = { "off", "connecting", "up", "down" };

    return (state < 4) ? names[state] : "unknown";
}


/*
 * The status page's "redis" object: per zone its state and counts, and
 * what the other gateways counted of each tenant (rpm, tpm: requests and
 * tokens in their windows; service: their service, unweighted).
 */

ngx_int_t
ngx_http_fairgate_redis_status_json(ngx_http_request_t *r, void *data)
{
    json_t  *root = data;

    json_t                         *redis, *zones, *z;
    ngx_uint_t                      i;
    ngx_http_fairgate_zone_t      **zone;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);

    if (fmcf->redis == NULL) {
        return NGX_OK;
    }

    zones = json_array();

    redis = json_pack("{s:s%, s:I, s:I, s:o}",
                      "address", (char *) fmcf->redis->address.data,
                      fmcf->redis->address.len,
                      "interval_ms", (json_int_t) fmcf->redis->interval,
                      "timeout_ms", (json_int_t) fmcf->redis->timeout,
                      "zones", zones);

    if (redis == NULL || json_object_set_new(root, "redis", redis) != 0) {
        return NGX_ERROR;
    }

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        z = ngx_http_fairgate_redis_zone_json(zone[i]);

        if (z == NULL || json_array_append_new(zones, z) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static json_t *
ngx_http_fairgate_redis_zone_json(ngx_http_fairgate_zone_t *zone)
{
    json_t                          *z, *users, *apps, *t;
    json_int_t                       ago;
    ngx_msec_t                       now;
    ngx_uint_t                       i, n, valid;
    ngx_queue_t                     *q;
    ngx_http_fairgate_shctx_t       *sh;
    ngx_http_fairgate_tenant_t      *tn;
    ngx_http_fairgate_redis_sh_t     rs;
    ngx_http_fairgate_redis_snap_t  *snap, *st;

    sh = zone->sh;
    now = ngx_http_fairgate_wall_msec();

    ngx_shmtx_lock(&zone->shpool->mutex);

    rs = sh->redis;
    n = 0;

    snap = ngx_alloc((sh->users + sh->apps + 1)
                     * sizeof(ngx_http_fairgate_redis_snap_t), ngx_cycle->log);

    valid = (rs.state == NGX_HTTP_FAIRGATE_REDIS_UP);

    for (q = ngx_queue_head(&sh->lru);
         snap && valid && q != ngx_queue_sentinel(&sh->lru)
         && n < sh->users + sh->apps;
         q = ngx_queue_next(q))
    {
        tn = ngx_queue_data(q, ngx_http_fairgate_tenant_t, lru);

        if (tn->global.epoch != rs.epoch) {
            continue;
        }

        st = &snap[n++];
        ngx_memcpy(st->name, tn->name, tn->len);
        st->name[tn->len] = '\0';
        st->len = tn->len;
        st->kind = tn->kind;
        st->requests = tn->global.requests;
        st->tokens = tn->global.tokens;
        st->service = tn->global.service;
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    if (snap == NULL) {
        return NULL;
    }

    users = json_object();
    apps = json_object();

    for (i = 0; i < n && users && apps; i++) {
        st = &snap[i];

        t = json_pack("{s:I, s:I, s:f}",
                      "rpm", (json_int_t) st->requests,
                      "tpm", (json_int_t) st->tokens,
                      "service", st->service);

        if (t == NULL
            || json_object_set_new((st->kind == NGX_HTTP_FAIRGATE_USER)
                                   ? users : apps, (char *) st->name, t)
               != 0)
        {
            ngx_free(snap);
            json_decref(users);
            json_decref(apps);
            return NULL;
        }
    }

    ngx_free(snap);

    ago = rs.last_sync ? (json_int_t) (now - rs.last_sync) : -1;

    z = json_pack("{s:s%, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
                  " s:I, s:o, s:o}",
                  "zone", (char *) zone->name.data, zone->name.len,
                  "state", ngx_http_fairgate_redis_state_name(rs.state),
                  "owner", (json_int_t) rs.owner,
                  "epoch", (json_int_t) rs.epoch,
                  "syncs", (json_int_t) rs.syncs,
                  "failures", (json_int_t) rs.failures,
                  "errors", (json_int_t) rs.errors,
                  "tenants", (json_int_t) rs.synced,
                  "round_ms", (json_int_t) rs.round_ms,
                  "last_sync_ms_ago", ago,
                  "down_for_s", (json_int_t)
                      ((rs.state == NGX_HTTP_FAIRGATE_REDIS_DOWN)
                       ? ngx_time() - rs.down_since : 0),
                  "users", users,
                  "apps", apps);

    return z;
}


/* Prometheus: 5 families, a line a zone each */

size_t
ngx_http_fairgate_redis_prom_size(ngx_http_request_t *r)
{
    size_t                           size;
    ngx_uint_t                       i;
    ngx_http_fairgate_zone_t       **zone;
    ngx_http_fairgate_main_conf_t   *fmcf;

    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);

    if (fmcf->redis == NULL) {
        return 0;
    }

    size = 1024;
    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        size += 5 * (64 + NGX_INT64_LEN + 2 * zone[i]->name.len);
    }

    return size;
}


u_char *
ngx_http_fairgate_redis_prom(ngx_http_request_t *r, u_char *p)
{
    ngx_uint_t                       i, f;
    ngx_http_fairgate_zone_t       **zone;
    ngx_http_fairgate_redis_sh_t    *rs;
    ngx_http_fairgate_main_conf_t   *fmcf;

    static const char  *families[][3] = {
        { "fairgate_redis_up", "gauge",
          "1 while the zone syncs with Redis, 0 while it counts locally." },
        { "fairgate_redis_syncs_total", "counter",
          "Sync rounds completed." },
        { "fairgate_redis_failures_total", "counter",
          "Times Redis went down (unreachable, slow or refusing)." },
        { "fairgate_redis_errors_total", "counter",
          "Failed connection attempts, replies and timeouts." },
        { "fairgate_redis_round_seconds", "gauge",
          "How long the last sync round took." }
    };

    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);

    if (fmcf->redis == NULL || fmcf->zones.nelts == 0) {
        return p;
    }

    rs = ngx_palloc(r->pool,
                    fmcf->zones.nelts * sizeof(ngx_http_fairgate_redis_sh_t));
    if (rs == NULL) {
        return p;
    }

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        ngx_shmtx_lock(&zone[i]->shpool->mutex);
        rs[i] = zone[i]->sh->redis;
        ngx_shmtx_unlock(&zone[i]->shpool->mutex);
    }

    for (f = 0; f < 5; f++) {
        p = ngx_sprintf(p, "# HELP %s %s\n# TYPE %s %s\n", families[f][0],
                        families[f][2], families[f][0], families[f][1]);

        for (i = 0; i < fmcf->zones.nelts; i++) {
            p = ngx_sprintf(p, "%s{zone=\"", families[f][0]);
            p = ngx_http_fairgate_redis_label(p, &zone[i]->name);
            p = ngx_sprintf(p, "\"} ");

            switch (f) {
            case 0:
                p = ngx_sprintf(p, "%d\n",
                                rs[i].state == NGX_HTTP_FAIRGATE_REDIS_UP);
                break;
            case 1:
                p = ngx_sprintf(p, "%uL\n", rs[i].syncs);
                break;
            case 2:
                p = ngx_sprintf(p, "%uL\n", rs[i].failures);
                break;
            case 3:
                p = ngx_sprintf(p, "%uL\n", rs[i].errors);
                break;
            default:
                p = ngx_sprintf(p, "%.3f\n", rs[i].round_ms / 1000.0);
            }
        }
    }

    return p;
}


static u_char *
ngx_http_fairgate_redis_label(u_char *p, ngx_str_t *name)
{
    u_char  *s;

    for (s = name->data; s < name->data + name->len; s++) {
        if (*s == '\\' || *s == '"') {
            *p++ = '\\';
            *p++ = *s;

        } else if (*s == '\n') {
            *p++ = '\\';
            *p++ = 'n';

        } else {
            *p++ = *s;
        }
    }

    return p;
}
