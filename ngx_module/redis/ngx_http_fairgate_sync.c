
/*
 * fairgate: sync rounds, the zone's counters shared with other gateways.
 *
 * A tenant has one hash in Redis, "PREFIX ZONE:u:NAME" (":a:" for an app),
 * with a field per gateway and tenant record ("ID:PID:STAMP:N"): the time
 * of its last write (Redis's clock), the requests and tokens in the
 * tenant's 60-second windows on that gateway, and the service it gave the
 * tenant there, cumulative.  Every interval the syncing worker of a zone
 * (ngx_http_fairgate_redis_link.c) sends every tenant of the zone, a few
 * hundred a script call, pipelined (EVAL, the script below): the script
 * writes the gateway's field and answers with the sum of the other fields,
 * which goes back into the tenant (ngx_http_fairgate_global_t):
 *
 *   - the rate limits add the other gateways' window sums to their own,
 *     so a limit holds across gateways;
 *   - the scheduler's counter grows by the service the other gateways gave
 *     the tenant since the last round, so a tenant sending through N
 *     gateways gets one fair share, not N (and the lift, taken from these
 *     counters, sees the global picture too).
 *
 * Fields are snapshots, not increments: writing one twice, or again into
 * a Redis that lost everything, changes nothing, so a lost reply or a
 * restarted Redis needs no repair, just the next round.  A field silent
 * for a minute leaves the window sums (its gateway stopped counting); one
 * silent for an hour is folded into "_dead", which keeps its service.
 * The service seen is kept as the most ever seen, so that a Redis that
 * restarted empty and fills again adds nothing twice.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <stdlib.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_fairgate_redis.h"


/* tenants a script call, and the script's windows */
#define NGX_HTTP_FAIRGATE_SYNC_BATCH   200
#define NGX_HTTP_FAIRGATE_SYNC_WINDOW  "60000"
#define NGX_HTTP_FAIRGATE_SYNC_FOLD    "3600000"
#define NGX_HTTP_FAIRGATE_SYNC_TTL     "7200000"
#define NGX_HTTP_FAIRGATE_SYNC_REFRESH 64        /* rounds */


typedef struct {
    ngx_str_t                    name;
    ngx_uint_t                   kind;
    uint64_t                     incarnation;
    uint64_t                     requests;
    uint64_t                     tokens;
    double                       service;
} ngx_http_fairgate_sync_entry_t;


struct ngx_http_fairgate_round_s {
    ngx_pool_t                      *pool;
    ngx_http_fairgate_redis_link_t  *link;
    ngx_http_fairgate_sync_entry_t  *entries;
    ngx_uint_t                       n;
    ngx_uint_t                       pending;    /* calls unanswered */
    ngx_msec_t                       start;
    uint64_t                         epoch;
    unsigned                         refresh:1;  /* push expiries back */
    unsigned                         failed:1;
    unsigned                         refused:1;  /* an error reply */
};


typedef struct {
    ngx_http_fairgate_round_t       *round;
    ngx_uint_t                       first;
    ngx_uint_t                       n;
} ngx_http_fairgate_batch_t;


static ngx_int_t ngx_http_fairgate_sync_copy(
    ngx_http_fairgate_round_t *round);
static ngx_int_t ngx_http_fairgate_sync_send(ngx_http_fairgate_round_t *round,
    ngx_uint_t first, ngx_uint_t n);
static void ngx_http_fairgate_sync_reply(redisAsyncContext *ac, void *r,
    void *data);
static void ngx_http_fairgate_sync_apply(ngx_http_fairgate_batch_t *batch,
    redisReply *reply);
static void ngx_http_fairgate_sync_end(ngx_http_fairgate_round_t *round);


/*
 * KEYS: the tenants' hashes; ARGV: window, fold and expiry in ms, then
 * for each key its field, requests, tokens and service, then "1" if the
 * keys' expiry is to be pushed back (a new field's always is); answers for
 * each key "requests tokens service" of the other fields.
 */

static const char  ngx_http_fairgate_sync_script[] =
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "local win, fold = tonumber(ARGV[1]), tonumber(ARGV[2])\n"
    "local refresh = ARGV[4 + 4 * #KEYS] == '1'\n"
    "local out = {}\n"
    "for i, key in ipairs(KEYS) do\n"
    "  local a = 4 + (i - 1) * 4\n"
    "  local me = ARGV[a]\n"
    "  local new = redis.call('HSET', key, me, now .. ' ' .. ARGV[a + 1]\n"
    "                         .. ' ' .. ARGV[a + 2] .. ' ' .. ARGV[a + 3])\n"
    "  if new == 1 or refresh then\n"
    "    redis.call('PEXPIRE', key, ARGV[3])\n"
    "  end\n"
    "  local all = redis.call('HGETALL', key)\n"
    "  local rq, tk, sv = 0, 0, 0\n"
    "  for j = 1, #all, 2 do\n"
    "    local f, v = all[j], all[j + 1]\n"
    "    if f == '_dead' then\n"
    "      sv = sv + tonumber(v)\n"
    "    elseif f ~= me then\n"
    "      local ts, r, k, s = string.match(v,\n"
    "                            '^(%d+) (%d+) (%d+) (%S+)$')\n"
    "      if ts then\n"
    "        ts = tonumber(ts)\n"
    "        if now - ts < win then\n"
    "          rq = rq + tonumber(r)\n"
    "          tk = tk + tonumber(k)\n"
    "        end\n"
    "        sv = sv + (tonumber(s) or 0)\n"
    "        if now - ts > fold then\n"
    "          redis.call('HINCRBYFLOAT', key, '_dead', tonumber(s) or 0)\n"
    "          redis.call('HDEL', key, f)\n"
    "        end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  out[i] = rq .. ' ' .. tk .. ' ' .. sv\n"
    "end\n"
    "return out\n";


/*
 * Starts a round: the zone's tenants are copied out under its mutex, then
 * sent in batches.  NGX_ERROR: the link should be dropped.
 */

ngx_int_t
ngx_http_fairgate_sync_start(ngx_http_fairgate_redis_link_t *link)
{
    ngx_uint_t                  i, n;
    ngx_pool_t                 *pool;
    ngx_http_fairgate_round_t  *round;

    pool = ngx_create_pool(16384, link->log);
    if (pool == NULL) {
        return NGX_ERROR;
    }

    round = ngx_pcalloc(pool, sizeof(ngx_http_fairgate_round_t));
    if (round == NULL) {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }

    round->pool = pool;
    round->link = link;
    round->start = ngx_current_msec;
    round->refresh = (link->rounds++ % NGX_HTTP_FAIRGATE_SYNC_REFRESH == 0);

    if (ngx_http_fairgate_sync_copy(round) != NGX_OK) {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }

    link->round = round;

    /* one call even with no tenant: it tells whether Redis answers */

    i = 0;

    do {
        n = ngx_min(round->n - i, NGX_HTTP_FAIRGATE_SYNC_BATCH);

        if (ngx_http_fairgate_sync_send(round, i, n) != NGX_OK) {
            round->failed = 1;

            if (round->pending == 0) {
                ngx_http_fairgate_sync_end(round);
            }

            return NGX_ERROR;
        }

        round->pending++;
        i += n;

    } while (i < round->n);

    return NGX_OK;
}


/* the zone's tenants as they are now, most recently used first */

static ngx_int_t
ngx_http_fairgate_sync_copy(ngx_http_fairgate_round_t *round)
{
    double                           now;
    ngx_uint_t                       n, max;
    ngx_queue_t                     *q;
    ngx_http_fairgate_zone_t        *zone;
    ngx_http_fairgate_shctx_t       *sh;
    ngx_http_fairgate_tenant_t      *t;
    ngx_http_fairgate_sync_entry_t  *e;

    zone = round->link->zone;
    sh = zone->sh;
    now = ngx_http_fairgate_now();
    n = 0;

    ngx_shmtx_lock(&zone->shpool->mutex);

    max = sh->users + sh->apps;
    round->epoch = sh->redis.epoch;

    round->entries = ngx_palloc(round->pool, (max + 1)
                                * sizeof(ngx_http_fairgate_sync_entry_t));

    for (q = ngx_queue_head(&sh->lru);
         round->entries && q != ngx_queue_sentinel(&sh->lru) && n < max;
         q = ngx_queue_next(q))
    {
        t = ngx_queue_data(q, ngx_http_fairgate_tenant_t, lru);

        /* keys (fairgate_quota's) have no rate windows to share */
        if (t->kind == NGX_HTTP_FAIRGATE_KEY) {
            continue;
        }

        e = &round->entries[n];

        e->name.data = ngx_pnalloc(round->pool, t->len);
        if (e->name.data == NULL) {
            round->entries = NULL;
            break;
        }

        ngx_memcpy(e->name.data, t->name, t->len);
        e->name.len = t->len;
        e->kind = t->kind;

        /* a tenant record's own field in Redis, for as long as it lives */

        if (t->global.incarnation == 0) {
            t->global.incarnation = ++sh->redis.incarnations;
        }

        e->incarnation = t->global.incarnation;
        e->requests = fg_window_sum(ngx_http_fairgate_tenant_requests(t),
                                    now);
        e->tokens = fg_window_sum(&t->tokens, now);

        if (t->kind == NGX_HTTP_FAIRGATE_USER) {
            e->service = t->u.client.service > 0 ? t->u.client.service : 0;

        } else {
            e->service = 0;
        }

        n++;
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    round->n = n;

    return (round->entries == NULL) ? NGX_ERROR : NGX_OK;
}


/*
 * A batch of tenants, n from first, in one script call; each argument is
 * formatted into one buffer sized for the batch.
 */

static ngx_int_t
ngx_http_fairgate_sync_send(ngx_http_fairgate_round_t *round,
    ngx_uint_t first, ngx_uint_t n)
{
    size_t                           size;
    ngx_uint_t                       i;
    ngx_http_fairgate_batch_t       *batch;
    ngx_http_fairgate_redis_args_t    a;
    ngx_http_fairgate_redis_link_t  *link;
    ngx_http_fairgate_sync_entry_t  *e;

    link = round->link;

    if (link->ac == NULL) {
        return NGX_ERROR;
    }

    batch = ngx_palloc(round->pool, sizeof(ngx_http_fairgate_batch_t));
    if (batch == NULL) {
        return NGX_ERROR;
    }

    batch->round = round;
    batch->first = first;
    batch->n = n;

    /* the keys and the numbers, as text */

    size = NGX_INT64_LEN + n * (link->conf->prefix.len + link->zone->name.len
                                + 4 + link->field.len + 4 * NGX_INT64_LEN
                                + 16);

    for (i = 0; i < n; i++) {
        size += round->entries[first + i].name.len;
    }

    if (ngx_http_fairgate_redis_args_init(&a, round->pool,
                                         3 + n + 3 + 4 * n + 1, size)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_fairgate_redis_arg(&a, "EVAL", 4);
    ngx_http_fairgate_redis_arg(&a, ngx_http_fairgate_sync_script,
                               sizeof(ngx_http_fairgate_sync_script) - 1);
    ngx_http_fairgate_redis_argf(&a, "%ui", n);

    for (i = 0; i < n; i++) {
        e = &round->entries[first + i];

        ngx_http_fairgate_redis_argf(&a, "%V%V:%c:%V", &link->conf->prefix,
                                    &link->zone->name,
                                    (e->kind == NGX_HTTP_FAIRGATE_USER)
                                    ? 'u' : 'a',
                                    &e->name);
    }

    ngx_http_fairgate_redis_literal(&a, NGX_HTTP_FAIRGATE_SYNC_WINDOW);
    ngx_http_fairgate_redis_literal(&a, NGX_HTTP_FAIRGATE_SYNC_FOLD);
    ngx_http_fairgate_redis_literal(&a, NGX_HTTP_FAIRGATE_SYNC_TTL);

    for (i = 0; i < n; i++) {
        e = &round->entries[first + i];

        ngx_http_fairgate_redis_argf(&a, "%V%uL", &link->field,
                                    e->incarnation);
        ngx_http_fairgate_redis_argf(&a, "%uL", e->requests);
        ngx_http_fairgate_redis_argf(&a, "%uL", e->tokens);
        ngx_http_fairgate_redis_argf(&a, "%.3f", e->service);
    }

    /* the expiry is pushed back now and then: it is hours */
    ngx_http_fairgate_redis_arg(&a, (round->refresh) ? "1" : "0", 1);

    if (a.p == a.last) {
        ngx_log_error(NGX_LOG_ALERT, link->log, 0,
                      "fairgate_redis: sync arguments overflow");
        return NGX_ERROR;
    }

    /* hiredis copies the command into its buffer: the pool may go */

    if (redisAsyncCommandArgv(link->ac, ngx_http_fairgate_sync_reply, batch,
                              (int) a.argc, a.argv, a.argvlen)
        != REDIS_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void
ngx_http_fairgate_sync_reply(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_fairgate_batch_t  *batch = data;

    redisReply                 *reply;
    ngx_http_fairgate_round_t  *round;

    reply = r;
    round = batch->round;

    if (reply == NULL) {
        /* the link went: the round cannot complete */
        round->failed = 1;

    } else if (reply->type != REDIS_REPLY_ARRAY
               || reply->elements != batch->n)
    {
        if (!round->refused) {
            ngx_log_error(NGX_LOG_ERR, round->link->log, 0,
                          "fairgate_redis: the sync script failed: %*s",
                          (size_t) ((reply->type == REDIS_REPLY_ERROR)
                                    ? reply->len : 0),
                          reply->str);
        }

        round->failed = 1;
        round->refused = 1;

    } else if (!round->failed) {
        ngx_http_fairgate_sync_apply(batch, reply);
    }

    if (--round->pending == 0) {
        ngx_http_fairgate_sync_end(round);
    }
}


/* the other gateways' figures into the tenants, if still the same ones */

static void
ngx_http_fairgate_sync_apply(ngx_http_fairgate_batch_t *batch,
    redisReply *reply)
{
    char                            *s, *end;
    double                           rq, tk, sv;
    ngx_uint_t                       i;
    redisReply                      *el;
    ngx_http_fairgate_zone_t        *zone;
    ngx_http_fairgate_round_t       *round;
    ngx_http_fairgate_tenant_t      *t;
    ngx_http_fairgate_global_t      *g;
    ngx_http_fairgate_sync_entry_t  *e;

    round = batch->round;
    zone = round->link->zone;

    ngx_shmtx_lock(&zone->shpool->mutex);

    for (i = 0; i < batch->n; i++) {
        el = reply->element[i];

        if (el->type != REDIS_REPLY_STRING) {
            continue;
        }

        s = el->str;
        rq = strtod(s, &end);
        s = end;
        tk = strtod(s, &end);
        s = end;
        sv = strtod(s, &end);

        if (end == s || !(rq >= 0) || !(tk >= 0) || !(sv >= 0)) {
            continue;
        }

        e = &round->entries[batch->first + i];

        t = ngx_http_fairgate_tenant_find(zone, e->kind, e->name.data,
                                          e->name.len);

        /* freed, and maybe made anew, since the round started */
        if (t == NULL || t->global.incarnation != e->incarnation) {
            continue;
        }

        g = &t->global;
        g->requests = (uint64_t) rq;
        g->tokens = (uint64_t) tk;
        g->epoch = round->epoch;

        if (t->kind != NGX_HTTP_FAIRGATE_USER) {
            continue;
        }

        if (!g->seen) {
            /* what came before this record is the lift's business */
            g->service = sv;
            g->seen = 1;

        } else if (sv > g->service) {
            fg_client_add_remote(zone->sh->sched, &t->u.client,
                                 sv - g->service);
            g->service = sv;
        }
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);
}


static void
ngx_http_fairgate_sync_end(ngx_http_fairgate_round_t *round)
{
    ngx_uint_t                       n, failed, refused;
    ngx_msec_t                       took;
    ngx_http_fairgate_redis_link_t  *link;

    link = round->link;
    n = round->n;
    failed = round->failed;
    refused = round->refused;
    took = ngx_current_msec - round->start;

    if (link->round == round) {
        link->round = NULL;
    }

    ngx_destroy_pool(round->pool);

    if (!failed) {
        link->round_end(link, NULL, n, took);

    } else if (refused && link->ac) {
        link->round_end(link, "the sync script failed", 0, 0);
    }
}


/* a round in flight for longer than the timeout: Redis is slow */

ngx_uint_t
ngx_http_fairgate_sync_late(ngx_http_fairgate_redis_link_t *link)
{
    return link->round
           && ngx_current_msec - link->round->start >= link->conf->timeout;
}


