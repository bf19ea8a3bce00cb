
/*
 * fairgate: "fairgate_keys redis [cache=SIZE];", API keys kept in Redis
 * (fairgate_redis's) as the source of truth, created, changed and revoked
 * live through the admin API (ngx_http_fairgate_admin.c).
 *
 * A key is kept under its SHA-256 only, a hash a key:
 *
 *     PREFIX "key:" SHA256-HEX   user app weight priority rpm tpm models
 *                                quota budget id created revoked
 *
 * A request's key is looked up in the shared cache (_keycache.c), else in
 * Redis on the worker's command link (HGETALL), the request waiting for
 * the answer without holding the worker, at most fairgate_redis's
 * timeout; Redis not reachable or late, the request gets 503 while the
 * keys the cache holds go on working.  Every change of a key (created,
 * changed, revoked) is appended to a stream, PREFIX "keys:events", field
 * "d" its digest; one worker of each gateway reads it every 200 ms and
 * drops the keys it names from the cache, so that a revoked key is
 * refused by every gateway within a poll and a round trip.  A poll that
 * fails leaves the cache as it is (Redis down: the keys known keep
 * working); the first that works after it starts the cache afresh from
 * the stream's end, as changes may have been missed meanwhile.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_fairgate_tenants.h"
#include "ngx_http_fairgate_redis.h"
#include "fg_keys.h"


#define NGX_HTTP_FAIRGATE_KEYS_CACHE    (32 * 1024 * 1024)
#define NGX_HTTP_FAIRGATE_KEYS_POLL     200


/* a lookup in flight: outlives the request if Redis answers after it */
typedef struct {
    ngx_http_fairgate_key_lookup_t  *lk;     /* NULL: nobody waits */
    ngx_http_fairgate_keys_t        *keys;
    ngx_uint_t                       changes;    /* the cache's, at send */
    ngx_event_t                      timer;
} ngx_http_fairgate_keystore_pending_t;


static void ngx_http_fairgate_keystore_reply(redisAsyncContext *ac,
    void *r, void *data);
static void ngx_http_fairgate_keystore_late(ngx_event_t *ev);
static void ngx_http_fairgate_keystore_refused(redisReply *reply);
static void ngx_http_fairgate_keystore_cleanup(void *data);
static void ngx_http_fairgate_keystore_tick(ngx_event_t *ev);
static void ngx_http_fairgate_keystore_polled(redisAsyncContext *ac,
    void *r, void *data);
static void ngx_http_fairgate_keystore_changes(ngx_http_fairgate_keys_t *keys,
    redisReply *reply);
static ngx_int_t ngx_http_fairgate_keystore_rules(ngx_pool_t *pool,
    ngx_http_fairgate_key_lookup_t *lk);


/* the follower of the stream: one worker's, one keys store */
static ngx_http_fairgate_keys_t  *ngx_http_fairgate_keystore_keys;
static ngx_event_t                ngx_http_fairgate_keystore_ev;
static ngx_msec_t                 ngx_http_fairgate_keystore_sent;
static ngx_uint_t                 ngx_http_fairgate_keystore_polling;
static ngx_uint_t                 ngx_http_fairgate_keystore_lost;


char *
ngx_http_fairgate_keys_redis(ngx_conf_t *cf,
    ngx_http_fairgate_loc_conf_t *flcf, ngx_str_t *value, ngx_uint_t n)
{
    size_t                          size;
    ngx_str_t                       s;
    ngx_uint_t                      i;
    ngx_http_fairgate_keys_t      **kp, *keys;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_fairgate_module);

    if (fmcf->redis == NULL) {
        return "needs \"fairgate_redis\" before it, in http";
    }

    size = 0;

    if (n == 3) {
        if (value[2].len <= 6 || ngx_strncmp(value[2].data, "cache=", 6) != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[2]);
            return NGX_CONF_ERROR;
        }

        s.data = value[2].data + 6;
        s.len = value[2].len - 6;
        size = (size_t) ngx_parse_size(&s);

        if (size == (size_t) NGX_ERROR || size < 64 * 1024) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid cache size \"%V\", 64k at least",
                               &value[2]);
            return NGX_CONF_ERROR;
        }
    }

    /* the locations share one store, sized by the one that says */

    kp = fmcf->keys.elts;

    for (i = 0; i < fmcf->keys.nelts; i++) {
        if (kp[i]->shm_zone) {
            if (size && size != kp[i]->shm_zone->shm.size) {
                return "is given another cache size before";
            }

            flcf->keys = kp[i];
            return NGX_CONF_OK;
        }
    }

    keys = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_keys_t));
    kp = ngx_array_push(&fmcf->keys);

    if (keys == NULL || kp == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_str_set(&keys->file, "redis");
    keys->redis = fmcf->redis;

    if (ngx_http_fairgate_keycache_add(cf, keys,
                                       size ? size
                                            : NGX_HTTP_FAIRGATE_KEYS_CACHE)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    *kp = keys;
    flcf->keys = keys;

    return NGX_CONF_OK;
}


ngx_int_t
ngx_http_fairgate_keystore_find(ngx_http_request_t *r,
    ngx_http_fairgate_keys_t *keys, u_char *digest,
    ngx_http_fairgate_key_lookup_t *lk)
{
    u_char                                 hex[64];
    ngx_int_t                              rc;
    ngx_uint_t                             changes;
    redisAsyncContext                     *ac;
    ngx_pool_cleanup_t                    *cln;
    ngx_http_fairgate_redis_conf_t        *rc_conf;
    ngx_http_fairgate_keystore_pending_t  *p;

    rc = ngx_http_fairgate_keycache_get(keys->shm_zone->data, digest,
                                        r->pool, lk, &changes);

    if (rc == NGX_OK || rc == NGX_ERROR) {
        return rc;
    }

    if (rc == NGX_ABORT) {
        return NGX_DECLINED;
    }

    rc_conf = keys->redis;

    ac = ngx_http_fairgate_redis_cmd(rc_conf);
    if (ac == NULL) {
        return NGX_BUSY;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    p = ngx_calloc(sizeof(ngx_http_fairgate_keystore_pending_t),
                   r->connection->log);

    if (cln == NULL || p == NULL) {
        ngx_free(p);
        return NGX_ERROR;
    }

    ngx_hex_dump(hex, digest, 32);
    ngx_memcpy(lk->key.digest, digest, 32);

    if (redisAsyncCommand(ac, ngx_http_fairgate_keystore_reply, p,
                          "HGETALL %b%s%b", rc_conf->prefix.data,
                          rc_conf->prefix.len, "key:", hex, (size_t) 64)
        != REDIS_OK)
    {
        ngx_free(p);
        return NGX_BUSY;
    }

    p->lk = lk;
    p->keys = keys;
    p->changes = changes;
    p->timer.handler = ngx_http_fairgate_keystore_late;
    p->timer.data = p;
    p->timer.log = r->connection->log;

    ngx_add_timer(&p->timer, rc_conf->timeout);

    lk->request = r;
    lk->pending = p;

    cln->handler = ngx_http_fairgate_keystore_cleanup;
    cln->data = lk;

    return NGX_AGAIN;
}


static void
ngx_http_fairgate_keystore_reply(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_fairgate_keystore_pending_t  *p = data;

    ngx_uint_t                       revoked, changes;
    redisReply                      *reply = r;
    ngx_http_fairgate_keys_t        *keys;
    ngx_http_fairgate_key_lookup_t  *lk;

    lk = p->lk;
    keys = p->keys;
    changes = p->changes;

    if (p->timer.timer_set) {
        ngx_del_timer(&p->timer);
    }

    ngx_free(p);

    if (lk == NULL) {
        return;
    }

    lk->pending = NULL;
    lk->rc = NGX_BUSY;
    revoked = 0;

    ngx_http_fairgate_keystore_refused(reply);

    if (reply && reply->type == REDIS_REPLY_ARRAY) {

        if (reply->elements == 0) {
            lk->rc = NGX_DECLINED;

        } else if (ngx_http_fairgate_keystore_record(lk->request->pool, reply,
                                                     &lk->key, &revoked)
                   == NGX_OK
                   && ngx_http_fairgate_keystore_rules(lk->request->pool, lk)
                      == NGX_OK)
        {
            lk->rc = revoked ? NGX_DECLINED : NGX_OK;
            ngx_http_fairgate_keycache_put(keys->shm_zone->data, lk,
                                           revoked, changes);
        }
    }

    ngx_post_event(&lk->done, &ngx_posted_events);
}


/*
 * Redis answered with an error (a wrong password or db, a key of another
 * type): said in the error log, at most once a second, as every request
 * with a key not held gets 503 meanwhile.
 */

static void
ngx_http_fairgate_keystore_refused(redisReply *reply)
{
    static time_t  logged;

    if (reply == NULL || reply->type != REDIS_REPLY_ERROR
        || logged == ngx_time())
    {
        return;
    }

    logged = ngx_time();

    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                  "fairgate_keys: Redis refused a key's lookup: %*s",
                  (size_t) ngx_min(reply->len, 256), reply->str);
}


/* Redis is late: the request is told at once, the link is dropped */

static void
ngx_http_fairgate_keystore_late(ngx_event_t *ev)
{
    ngx_http_fairgate_keystore_pending_t  *p = ev->data;

    ngx_http_fairgate_key_lookup_t  *lk;

    lk = p->lk;
    p->lk = NULL;

    if (lk) {
        lk->pending = NULL;
        lk->rc = NGX_BUSY;
        ngx_post_event(&lk->done, &ngx_posted_events);
    }

    /* every callback runs now, this one's too, which frees p */
    ngx_http_fairgate_redis_cmd_drop();
}


/* the request ends: nothing is to be told to it any more */

static void
ngx_http_fairgate_keystore_cleanup(void *data)
{
    ngx_http_fairgate_key_lookup_t  *lk = data;

    ngx_http_fairgate_keystore_pending_t  *p;

    p = lk->pending;

    if (p) {
        p->lk = NULL;
        lk->pending = NULL;
    }

    if (lk->done.posted) {
        ngx_delete_posted_event(&lk->done);
    }
}


/*
 * A key's hash as HGETALL gives it, field and value in turn, into key
 * (its names in the pool); a field that does not read is an error.
 */

ngx_int_t
ngx_http_fairgate_keystore_record(ngx_pool_t *pool, void *r,
    ngx_http_fairgate_key_t *key, ngx_uint_t *revoked)
{
    size_t       i, len;
    u_char      *v;
    double       d;
    ngx_int_t    n;
    ngx_str_t   *s;
    redisReply  *reply = r, *f, *val;

    key->weight = 1.0;
    key->priority = 1.0;
    *revoked = 0;

    for (i = 0; i + 1 < reply->elements; i += 2) {
        f = reply->element[i];
        val = reply->element[i + 1];

        if (f->type != REDIS_REPLY_STRING || val->type != REDIS_REPLY_STRING) {
            return NGX_ERROR;
        }

        v = (u_char *) val->str;
        len = val->len;

#define ngx_http_fairgate_field_is(name)                                      \
        (f->len == sizeof(name) - 1 && ngx_strncmp(f->str, name, f->len) == 0)

        s = ngx_http_fairgate_field_is("user") ? &key->user
            : ngx_http_fairgate_field_is("app") ? &key->app
            : ngx_http_fairgate_field_is("models") ? &key->models
            : ngx_http_fairgate_field_is("quota") ? &key->quota
            : ngx_http_fairgate_field_is("budget") ? &key->budget : NULL;

        if (s) {
            if (len > (s == &key->user || s == &key->app
                       ? NGX_HTTP_FAIRGATE_NAME_LEN : 0xffff))
            {
                return NGX_ERROR;
            }

            s->data = ngx_pnalloc(pool, len + 1);
            if (s->data == NULL) {
                return NGX_ERROR;
            }

            s->len = len;
            ngx_memcpy(s->data, v, len);
            continue;
        }

        if (ngx_http_fairgate_field_is("weight")
            || ngx_http_fairgate_field_is("priority"))
        {
            d = (double) ngx_atofp(v, len, 3) / 1000.0;

            if (d <= 0) {
                return NGX_ERROR;
            }

            *(f->str[0] == 'w' ? &key->weight : &key->priority) = d;
            continue;
        }

        if (ngx_http_fairgate_field_is("rpm")
            || ngx_http_fairgate_field_is("tpm"))
        {
            n = ngx_atoi(v, len);

            if (n < 0) {
                return NGX_ERROR;
            }

            *(f->str[0] == 'r' ? &key->limit.rpm : &key->limit.tpm) =
                (ngx_uint_t) n;
            continue;
        }

        if (ngx_http_fairgate_field_is("revoked")) {
            *revoked = !(len == 0 || (len == 1 && v[0] == '0'));
        }

#undef ngx_http_fairgate_field_is
    }

    if (key->user.len == 0) {
        return NGX_ERROR;
    }

    ngx_hex_dump(key->id, key->digest, NGX_HTTP_FAIRGATE_KEY_ID_LEN / 2);

    return NGX_OK;
}


/*
 * The key's quota and budget read once, as it enters the cache, which
 * keeps them read; the admin API let in only what reads.
 */

static ngx_int_t
ngx_http_fairgate_keystore_rules(ngx_pool_t *pool,
    ngx_http_fairgate_key_lookup_t *lk)
{
    char                      field[FG_QUOTA_FIELD_LEN];
    const char               *expected;
    fg_quota_set_t            set;
    ngx_http_fairgate_key_t  *key;

    key = &lk->key;
    set.n = 0;

    if ((key->quota.len
         && fg_quota_json(&set, (char *) key->quota.data, key->quota.len, 0,
                          field, &expected)
            != 0)
        || (key->budget.len
            && fg_quota_json(&set, (char *) key->budget.data,
                             key->budget.len, 1, field, &expected)
               != 0))
    {
        return NGX_ERROR;
    }

    lk->nrules = set.n;
    lk->rules = NULL;

    if (set.n == 0) {
        return NGX_OK;
    }

    lk->rules = ngx_palloc(pool, set.n * sizeof(fg_quota_rule_t));
    if (lk->rules == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(lk->rules, set.rule, set.n * sizeof(fg_quota_rule_t));

    return NGX_OK;
}


/* the worker that follows the stream: worker 0, each generation's */

ngx_int_t
ngx_http_fairgate_keystore_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                      i;
    ngx_http_fairgate_keys_t      **kp;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(cycle);

    if (fmcf == NULL
        || (ngx_process != NGX_PROCESS_WORKER
            && ngx_process != NGX_PROCESS_SINGLE)
        || ngx_worker != 0)
    {
        return NGX_OK;
    }

    kp = fmcf->keys.elts;

    for (i = 0; i < fmcf->keys.nelts; i++) {
        if (kp[i]->shm_zone) {
            ngx_http_fairgate_keystore_keys = kp[i];
            break;
        }
    }

    if (ngx_http_fairgate_keystore_keys == NULL) {
        return NGX_OK;
    }

    ngx_http_fairgate_keystore_ev.handler = ngx_http_fairgate_keystore_tick;
    ngx_http_fairgate_keystore_ev.log = cycle->log;
    ngx_http_fairgate_keystore_ev.cancelable = 1;

    /* where the stream stands is read again: a new generation's start */
    ngx_http_fairgate_keystore_lost = 1;

    ngx_add_timer(&ngx_http_fairgate_keystore_ev, 1);

    return NGX_OK;
}


void
ngx_http_fairgate_keystore_exit_process(ngx_cycle_t *cycle)
{
    if (ngx_http_fairgate_keystore_ev.timer_set) {
        ngx_del_timer(&ngx_http_fairgate_keystore_ev);
    }

    ngx_http_fairgate_keystore_keys = NULL;

    ngx_http_fairgate_redis_cmd_exit();
}


/*
 * A poll: the changes after the position (XREAD), or, the position not
 * known or a poll lost, the stream's end (XREVRANGE), from which the
 * cache starts afresh.
 */

static void
ngx_http_fairgate_keystore_tick(ngx_event_t *ev)
{
    u_char                           pos[NGX_HTTP_FAIRGATE_KEYCACHE_POS_LEN];
    size_t                           n;
    redisAsyncContext               *ac;
    ngx_http_fairgate_keys_t        *keys;
    ngx_http_fairgate_redis_conf_t  *rc;

    keys = ngx_http_fairgate_keystore_keys;

    if (keys == NULL || ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    ngx_add_timer(ev, NGX_HTTP_FAIRGATE_KEYS_POLL);

    rc = keys->redis;

    if (ngx_http_fairgate_keystore_polling) {
        if (ngx_current_msec - ngx_http_fairgate_keystore_sent > rc->timeout) {
            ngx_http_fairgate_redis_cmd_drop();
        }

        return;
    }

    ac = ngx_http_fairgate_redis_cmd(rc);
    if (ac == NULL) {
        ngx_http_fairgate_keystore_lost = 1;
        return;
    }

    n = ngx_http_fairgate_keystore_lost
        ? 0 : ngx_http_fairgate_keycache_position(keys->shm_zone->data, pos);

    if ((n == 0
         ? redisAsyncCommand(ac, ngx_http_fairgate_keystore_polled, NULL,
                             "XREVRANGE %b%s + - COUNT 1",
                             rc->prefix.data, rc->prefix.len, "keys:events")
         : redisAsyncCommand(ac, ngx_http_fairgate_keystore_polled, keys,
                             "XREAD COUNT 1000 STREAMS %b%s %b",
                             rc->prefix.data, rc->prefix.len, "keys:events",
                             pos, n))
        == REDIS_OK)
    {
        ngx_http_fairgate_keystore_polling = 1;
        ngx_http_fairgate_keystore_sent = ngx_current_msec;
    }
}


/* data: NULL, the stream's end came (XREVRANGE); else the changes */

static void
ngx_http_fairgate_keystore_polled(redisAsyncContext *ac, void *r, void *data)
{
    ngx_str_t                  pos;
    redisReply                *reply = r, *entry;
    ngx_http_fairgate_keys_t  *keys;

    ngx_http_fairgate_keystore_polling = 0;
    keys = ngx_http_fairgate_keystore_keys;

    if (keys == NULL) {
        return;
    }

    ngx_http_fairgate_keystore_refused(reply);

    if (reply == NULL
        || (reply->type != REDIS_REPLY_ARRAY && reply->type != REDIS_REPLY_NIL))
    {
        ngx_http_fairgate_keystore_lost = 1;
        return;
    }

    if (data) {
        ngx_http_fairgate_keystore_changes(keys, reply);
        return;
    }

    ngx_str_set(&pos, "0-0");

    if (reply->type == REDIS_REPLY_ARRAY && reply->elements) {
        entry = reply->element[0];

        if (entry->type == REDIS_REPLY_ARRAY && entry->elements
            && entry->element[0]->type == REDIS_REPLY_STRING)
        {
            pos.data = (u_char *) entry->element[0]->str;
            pos.len = entry->element[0]->len;
        }
    }

    ngx_http_fairgate_keycache_reset(keys->shm_zone->data, &pos);
    ngx_http_fairgate_keystore_lost = 0;
}


/* XREAD's answer: [[stream, [[id, [field, value, ...]], ...]]] */

static void
ngx_http_fairgate_keystore_changes(ngx_http_fairgate_keys_t *keys,
    redisReply *reply)
{
    u_char       digest[32];
    size_t       i, j;
    ngx_str_t    pos;
    redisReply  *entries, *e, *fields;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0
        || reply->element[0]->type != REDIS_REPLY_ARRAY
        || reply->element[0]->elements != 2)
    {
        return;
    }

    entries = reply->element[0]->element[1];
    pos.len = 0;

    for (i = 0; entries->type == REDIS_REPLY_ARRAY && i < entries->elements;
         i++)
    {
        e = entries->element[i];

        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2
            || e->element[0]->type != REDIS_REPLY_STRING)
        {
            continue;
        }

        pos.data = (u_char *) e->element[0]->str;
        pos.len = e->element[0]->len;
        fields = e->element[1];

        for (j = 0; fields->type == REDIS_REPLY_ARRAY
                    && j + 1 < fields->elements; j += 2)
        {
            if (fields->element[j + 1]->type == REDIS_REPLY_STRING
                && ngx_http_fairgate_key_unhex(digest,
                       (u_char *) fields->element[j + 1]->str,
                       fields->element[j + 1]->len)
                   == NGX_OK)
            {
                ngx_http_fairgate_keycache_drop(keys->shm_zone->data,
                                                digest);
            }
        }
    }

    ngx_http_fairgate_keycache_advance(keys->shm_zone->data, &pos);
}
