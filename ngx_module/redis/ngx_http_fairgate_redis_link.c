
/*
 * fairgate: a worker's link to Redis for each zone, when fairgate_redis is
 * on: who syncs the zone, the connection, and what happens when Redis
 * fails.
 *
 * Each zone has one worker that syncs it (its "owner", kept in the zone
 * with a heartbeat, taken over by another worker when it stops beating).
 * The owner keeps a connection to Redis through hiredis's async API, run
 * in nginx's event loop (ngx_http_fairgate_redis_adapter.c).  No call here
 * waits on Redis: the address was resolved at configuration time,
 * connecting is non-blocking, and every command is pipelined with a
 * callback.
 *
 * Every interval the owner runs a sync round (ngx_http_fairgate_sync.c).
 * Redis unreachable, slow (a connection or a round taking over "timeout")
 * or answering errors: the link is dropped, the zone's state says "down"
 * (logged once), the limits and the scheduler go on with local counters
 * only, and connecting is retried with exponential backoff; the first
 * round after reconnecting pushes every tenant's figures again, which is
 * all a restarted, empty Redis needs.
 *
 * With sentinels (ngx_http_fairgate_redis_sentinel.c), the server is the
 * master they name: asked before each connection, checked with ROLE once
 * connected, asked again after any failure (a lost connection, READONLY
 * from a demoted master), and followed at once when a sentinel announces
 * "+switch-master".  The rounds write snapshots, so the first round on
 * the new master writes there all that the old one held of this gateway.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_fairgate_redis.h"


#define NGX_HTTP_FAIRGATE_BACKOFF_MIN     100
#define NGX_HTTP_FAIRGATE_BACKOFF_MAX     5000


static void ngx_http_fairgate_redis_tick(ngx_event_t *ev);
static ngx_uint_t ngx_http_fairgate_redis_own(
    ngx_http_fairgate_redis_link_t *link);
static void ngx_http_fairgate_redis_disown(
    ngx_http_fairgate_redis_link_t *link);
static void ngx_http_fairgate_redis_connect(
    ngx_http_fairgate_redis_link_t *link);
static void ngx_http_fairgate_redis_fail(
    ngx_http_fairgate_redis_link_t *link, const char *why);
static void ngx_http_fairgate_redis_round_end(
    ngx_http_fairgate_redis_link_t *link, const char *failed,
    ngx_uint_t tenants, ngx_msec_t took);
static void ngx_http_fairgate_redis_close(
    ngx_http_fairgate_redis_link_t *link);
static void ngx_http_fairgate_redis_connected(const redisAsyncContext *ac,
    int status);
static void ngx_http_fairgate_redis_disconnected(const redisAsyncContext *ac,
    int status);
static void ngx_http_fairgate_redis_setup_reply(redisAsyncContext *ac,
    void *r, void *data);
static void ngx_http_fairgate_redis_role_reply(redisAsyncContext *ac,
    void *r, void *data);
static void ngx_http_fairgate_redis_found(ngx_http_fairgate_redis_link_t *link,
    const char *failed, u_char *host, int port, ngx_uint_t announced);
static void ngx_http_fairgate_redis_release(
    ngx_http_fairgate_redis_link_t *link);
static ngx_int_t ngx_http_fairgate_redis_rounds(
    ngx_http_fairgate_redis_link_t *link);


/* this worker's links, one a zone, from init_process */
static ngx_http_fairgate_redis_link_t  *ngx_http_fairgate_redis_links;
static ngx_uint_t                       ngx_http_fairgate_redis_nlinks;


ngx_int_t
ngx_http_fairgate_redis_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                       i;
    ngx_http_fairgate_zone_t       **zone;
    ngx_http_fairgate_redis_link_t  *link;
    ngx_http_fairgate_main_conf_t   *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(cycle);

    if (fmcf == NULL || fmcf->zones.nelts == 0) {
        return NGX_OK;
    }

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    /* the quota windows' state file, Redis or not */
    ngx_http_fairgate_qstate_init_process(cycle);

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
        link[i].round_end = ngx_http_fairgate_redis_round_end;

        link[i].tick.handler = ngx_http_fairgate_redis_tick;
        link[i].tick.data = &link[i];
        link[i].tick.log = cycle->log;
        link[i].tick.cancelable = 1;

        link[i].addr = fmcf->redis->address;

        if (fmcf->redis->sentinels) {
            link[i].addr = fmcf->redis->master;
            link[i].found = ngx_http_fairgate_redis_found;
            link[i].sentinel = ngx_http_fairgate_sentinel_create(&link[i],
                                                                cycle->pool);
            if (link[i].sentinel == NULL) {
                return NGX_ERROR;
            }
        }

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

    ngx_http_fairgate_qstate_exit_process(cycle);

    for (i = 0; i < ngx_http_fairgate_redis_nlinks; i++) {
        link = &ngx_http_fairgate_redis_links[i];

        if (link->tick.timer_set) {
            ngx_del_timer(&link->tick);
        }

        ngx_http_fairgate_redis_release(link);

        if (link->owner) {
            ngx_http_fairgate_redis_disown(link);
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

        ngx_http_fairgate_redis_release(link);
        ngx_http_fairgate_redis_disown(link);
        return;
    }

    ngx_add_timer(ev, link->conf->interval);

    if (!ngx_http_fairgate_redis_own(link)) {
        ngx_http_fairgate_redis_release(link);
        return;
    }

    if (link->sentinel) {
        ngx_http_fairgate_sentinel_tick(link);
    }

    if (link->ac == NULL) {
        if ((ngx_msec_int_t) (ngx_current_msec - link->retry_at) < 0) {
            return;
        }

        if (link->sentinel && !link->known) {
            /* the answer connects, through link->found */
            ngx_http_fairgate_sentinel_ask(link);

        } else {
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

    if (ngx_http_fairgate_redis_rounds(link) != NGX_OK) {
        ngx_http_fairgate_redis_fail(link, "a sync round failed to start");
    }
}


/*
 * A round of the per-minute counters, and one of the quota windows' (it
 * may still be in flight: it skips this interval), on the same link.
 */

static ngx_int_t
ngx_http_fairgate_redis_rounds(ngx_http_fairgate_redis_link_t *link)
{
    if (ngx_http_fairgate_sync_start(link) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_fairgate_qsync_start(link);
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


/* another worker is to sync the zone: this one exits */

static void
ngx_http_fairgate_redis_disown(ngx_http_fairgate_redis_link_t *link)
{
    ngx_shmtx_lock(&link->zone->shpool->mutex);

    if (link->zone->sh->redis.owner == ngx_pid) {
        link->zone->sh->redis.owner = 0;
    }

    ngx_shmtx_unlock(&link->zone->shpool->mutex);

    link->owner = 0;
}


static void
ngx_http_fairgate_redis_connect(ngx_http_fairgate_redis_link_t *link)
{
    ngx_connection_t                *c;
    redisAsyncContext               *ac;
    ngx_http_fairgate_redis_conf_t  *rc;

    rc = link->conf;

    if (link->sentinel) {
        ac = redisAsyncConnect((char *) link->host, link->port);

    } else if (rc->port) {
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

    c = ngx_http_fairgate_redis_attach(ac, link->log);
    if (c == NULL) {
        redisAsyncFree(ac);
        ngx_http_fairgate_redis_fail(link, "no free connection");
        return;
    }

    link->ac = ac;
    link->connected = 0;
    link->connecting = ngx_current_msec;

    ac->data = link;

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

    if (link->sentinel) {
        /* the round starts once the server says it is the master */
        (void) redisAsyncCommand(ac, ngx_http_fairgate_redis_role_reply,
                                 NULL, "ROLE");
        return;
    }

    /* resynchronise at once, behind AUTH and SELECT on the same link */

    if (link->round == NULL && ngx_http_fairgate_redis_rounds(link) != NGX_OK)
    {
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


/* ROLE's answer: a master, or the sentinels are asked again */

static void
ngx_http_fairgate_redis_role_reply(redisAsyncContext *ac, void *r,
    void *data)
{
    ngx_http_fairgate_redis_link_t  *link = ac->data;

    redisReply  *reply = r, *role;

    if (reply == NULL || link == NULL || link->ac != ac) {
        return;
    }

    role = (reply->type == REDIS_REPLY_ARRAY && reply->elements > 0)
           ? reply->element[0] : NULL;

    if (role == NULL || role->type != REDIS_REPLY_STRING
        || role->len != 6 || ngx_strncmp(role->str, "master", 6) != 0)
    {
        ngx_http_fairgate_redis_fail(link, "the sentinels' master is not "
                                           "a master (yet)");
        return;
    }

    if (link->round == NULL && ngx_http_fairgate_redis_rounds(link) != NGX_OK)
    {
        ngx_http_fairgate_redis_fail(link, "a sync round failed to start");
    }
}


/*
 * The sentinels named the master (asked, or announcing a failover): the
 * link connects there, leaving the old one; or none answered: a failure.
 */

static void
ngx_http_fairgate_redis_found(ngx_http_fairgate_redis_link_t *link,
    const char *failed, u_char *host, int port, ngx_uint_t announced)
{
    u_char                        *last;
    u_char                         text[NGX_SOCKADDR_STRLEN + 8];
    ngx_str_t                      addr;
    ngx_http_fairgate_redis_sh_t  *rs;

    if (failed) {
        ngx_http_fairgate_redis_fail(link, failed);
        return;
    }

    last = ngx_snprintf(text, sizeof(text),
                        ngx_strchr(host, ':') ? "[%s]:%d" : "%s:%d",
                        host, port);
    addr.data = text;
    addr.len = last - text;

    if (addr.len == link->addr.len
        && ngx_strncmp(addr.data, link->addr.data, addr.len) == 0)
    {
        if (announced && link->ac) {
            return;
        }

    } else if (link->known || link->port) {
        ngx_log_error(NGX_LOG_NOTICE, link->log, 0,
                      "fairgate_redis: master \"%V\" of zone \"%V\" is "
                      "now at %V (it was at %*s)", &link->conf->master,
                      &link->zone->name, &addr, link->addr.len,
                      link->addr.data);
    }

    rs = &link->zone->sh->redis;

    ngx_shmtx_lock(&link->zone->shpool->mutex);

    if (rs->master_len && (rs->master_len != addr.len
                           || ngx_memcmp(rs->master, addr.data, addr.len)))
    {
        rs->failovers++;
    }

    rs->master_len = addr.len;
    ngx_memcpy(rs->master, addr.data, addr.len);

    ngx_shmtx_unlock(&link->zone->shpool->mutex);

    ngx_memcpy(link->host, host, ngx_strlen(host) + 1);
    ngx_memcpy(link->text, text, addr.len);
    link->port = port;
    link->addr.data = link->text;
    link->addr.len = addr.len;
    link->known = 1;

    /* moved: the old master's connection goes, the new one is made now */

    ngx_http_fairgate_redis_close(link);
    link->backoff = NGX_HTTP_FAIRGATE_BACKOFF_MIN;

    ngx_http_fairgate_redis_connect(link);
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

static void
ngx_http_fairgate_redis_fail(ngx_http_fairgate_redis_link_t *link,
    const char *why)
{
    ngx_uint_t                     was;
    ngx_http_fairgate_redis_sh_t  *rs;

    ngx_http_fairgate_redis_close(link);

    /* the sentinels are asked again: the master may have moved */
    link->known = 0;

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
                      &link->addr, &link->zone->name, why);

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


/*
 * A round ended (_sync.c calls back through link->round_end): a failure
 * drops the link; a round that went through lets the zone see the global
 * picture again.
 */

static void
ngx_http_fairgate_redis_round_end(ngx_http_fairgate_redis_link_t *link,
    const char *failed, ngx_uint_t tenants, ngx_msec_t took)
{
    time_t                         down;
    ngx_uint_t                     was;
    ngx_http_fairgate_redis_sh_t  *rs;

    if (failed) {
        ngx_http_fairgate_redis_fail(link, failed);
        return;
    }

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
                      &link->addr, &link->zone->name, ngx_time() - down);

    } else if (was == NGX_HTTP_FAIRGATE_REDIS_CONNECTING) {
        ngx_log_error(NGX_LOG_INFO, link->log, 0,
                      "fairgate_redis: zone \"%V\" syncs with Redis at %V "
                      "every %M ms", &link->zone->name, &link->addr,
                      link->conf->interval);
    }
}


/* the link and its sentinels' connections closed: it syncs no more */

static void
ngx_http_fairgate_redis_release(ngx_http_fairgate_redis_link_t *link)
{
    ngx_http_fairgate_redis_close(link);
    ngx_http_fairgate_sentinel_close(link);
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

