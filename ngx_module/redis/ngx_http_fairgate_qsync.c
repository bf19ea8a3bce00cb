
/*
 * fairgate: the quota windows' counts (fairgate_quota) shared through
 * Redis, beside the per-minute counters' rounds and on the same link.
 *
 * A tenant's window is a hash (docs/redis.md): a calendar or fixed
 * window's "PREFIX ZONE:q:K:PER:START:NAME", a rolling window's
 * "PREFIX ZONE:q:K:PER:NAME" (all its buckets in it), with a field per
 * gateway and bucket, "ID:START" -> "REQUESTS TOKENS COST TAG": all that
 * gateway counted in that bucket.  Every round the syncing worker sends
 * each window's buckets, a few hundred a script call: the script writes
 * the gateway's fields (snapshots: writing one twice, or again into a
 * Redis that restarted empty, changes nothing), drops the buckets that
 * left the window, and answers with the sum of the other gateways'
 * fields, which becomes the window's "remote".
 *
 * TAG names the zone and tenant record that wrote a field ("STAMP:N").  A
 * field of this gateway with another tag was written by an earlier record
 * of the tenant (evicted and made again, or before nginx restarted): the
 * script merges it and answers it too, so that the zone takes it back.  A
 * new record's first sync adds it (the record counted only what came
 * since); a record read from the state file keeps the larger of each
 * count (both hold the same past).  A field of the same record is
 * overwritten: counts taken back (a request never served) go out too.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <stdlib.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_fairgate_redis.h"


#define NGX_HTTP_FAIRGATE_QSYNC_BATCH  200       /* buckets a call */
#define NGX_HTTP_FAIRGATE_QSYNC_KEEP   86400     /* s after a window */
#define NGX_HTTP_FAIRGATE_QSYNC_FULL   64        /* rounds */


/* a window's buckets, side by side in the round's entries: one key */
typedef struct {
    ngx_uint_t                       first;
    ngx_uint_t                       n;
    fg_quota_count_t                 others;
} ngx_http_fairgate_qgroup_t;


struct ngx_http_fairgate_qround_s {
    ngx_pool_t                      *pool;
    ngx_http_fairgate_redis_link_t  *link;
    ngx_array_t                      entries;
    ngx_array_t                      groups;
    ngx_uint_t                       pending;
    ngx_msec_t                       start;
    unsigned                         failed:1;
    unsigned                         refused:1;
};


typedef struct {
    ngx_http_fairgate_qround_t      *round;
    ngx_uint_t                       first;  /* of the groups */
    ngx_uint_t                       n;
} ngx_http_fairgate_qbatch_t;


static ngx_int_t ngx_http_fairgate_qsync_group(
    ngx_http_fairgate_qround_t *round);
static ngx_int_t ngx_http_fairgate_qsync_send(
    ngx_http_fairgate_qround_t *round, ngx_uint_t first, ngx_uint_t n);
static void ngx_http_fairgate_qsync_key(ngx_http_fairgate_redis_args_t *a,
    ngx_http_fairgate_redis_link_t *link, ngx_http_fairgate_qentry_t *e);
static void ngx_http_fairgate_qsync_window(ngx_http_fairgate_redis_args_t *a,
    ngx_http_fairgate_qround_t *round, ngx_http_fairgate_qgroup_t *g);
static void ngx_http_fairgate_qsync_reply(redisAsyncContext *ac, void *r,
    void *data);
static void ngx_http_fairgate_qsync_parse(ngx_http_fairgate_qround_t *round,
    ngx_http_fairgate_qgroup_t *g, redisReply *el);
static void ngx_http_fairgate_qsync_end(ngx_http_fairgate_qround_t *round);
static void ngx_http_fairgate_qsync_apply(ngx_http_fairgate_qround_t *round);


/*
 * KEYS: the windows; ARGV: this gateway's id, then for each key its tag,
 * expiry (ms), "a" (add an earlier record's counts) or "m" (keep the
 * larger), the oldest bucket still in the window, and its m buckets, then
 * each bucket's start, requests, tokens, cost and "1" if the gateway
 * counted in it.  Answers for each key "REQUESTS TOKENS COST" of the other
 * gateways' fields, then "START REQUESTS TOKENS COST" of each of this
 * gateway's fields that another record wrote.
 */

static const char  ngx_http_fairgate_qsync_script[] =
    "local me, c, out = ARGV[1], 2, {}\n"
    "local function big(x, y)\n"
    "  if tonumber(x) >= tonumber(y) then return x end\n"
    "  return y\n"
    "end\n"
    "local function plus(x, y)\n"
    "  return string.format('%.0f', tonumber(x) + tonumber(y))\n"
    "end\n"
    "for i, key in ipairs(KEYS) do\n"
    "  local tag, ttl, add = ARGV[c], ARGV[c + 1], ARGV[c + 2] == 'a'\n"
    "  local oldest, m = tonumber(ARGV[c + 3]), tonumber(ARGV[c + 4])\n"
    "  local mine, order = {}, {}\n"
    "  c = c + 5\n"
    "  for b = 1, m do\n"
    "    mine[ARGV[c]] = {ARGV[c + 1], ARGV[c + 2], ARGV[c + 3],\n"
    "                     ARGV[c + 4] == '1'}\n"
    "    order[b] = ARGV[c]\n"
    "    c = c + 5\n"
    "  end\n"
    "  local all = redis.call('HGETALL', key)\n"
    "  local o = {0, 0, 0}\n"
    "  local s = ''\n"
    "  for j = 1, #all, 2 do\n"
    "    local id, st = string.match(all[j], '^(.*):(%-?%d+)$')\n"
    "    local r = {string.match(all[j + 1],\n"
    "                            '^(%d+) (%d+) (%d+) ?(%S*)$')}\n"
    "    if id == nil or r[1] == nil then\n"
    "    elseif tonumber(st) < oldest then\n"
    "      redis.call('HDEL', key, all[j])\n"
    "    elseif id ~= me then\n"
    "      for k = 1, 3 do o[k] = o[k] + tonumber(r[k]) end\n"
    "    elseif r[4] ~= tag then\n"
    "      s = s .. ' ' .. st .. ' ' .. r[1] .. ' ' .. r[2] .. ' ' .. r[3]\n"
    "      local b = mine[st]\n"
    "      if b == nil then\n"
    "        b = {'0', '0', '0'}\n"
    "        mine[st] = b\n"
    "        order[#order + 1] = st\n"
    "      end\n"
    "      for k = 1, 3 do\n"
    "        if add then b[k] = plus(b[k], r[k])\n"
    "        else b[k] = big(b[k], r[k]) end\n"
    "      end\n"
    "      b[4] = true\n"
    "    end\n"
    "  end\n"
    "  for _, st in ipairs(order) do\n"
    "    local b = mine[st]\n"
    "    if b[4] then\n"
    "      redis.call('HSET', key, me .. ':' .. st,\n"
    "                 b[1] .. ' ' .. b[2] .. ' ' .. b[3] .. ' ' .. tag)\n"
    "      redis.call('PEXPIRE', key, ttl)\n"
    "    end\n"
    "  end\n"
    "  out[i] = string.format('%.0f %.0f %.0f', o[1], o[2], o[3]) .. s\n"
    "end\n"
    "return out\n";


/*
 * A round of the quota windows, if any and none is in flight: the buckets
 * copied out under the zone's mutex, then sent in batches.  NGX_ERROR: the
 * link should be dropped.
 */

ngx_int_t
ngx_http_fairgate_qsync_start(ngx_http_fairgate_redis_link_t *link)
{
    ngx_int_t                    rc;
    ngx_uint_t                   i, n, total, full, buckets;
    ngx_pool_t                  *pool;
    ngx_http_fairgate_qgroup_t  *g;
    ngx_http_fairgate_qround_t  *round;

    if (link->qround) {
        return NGX_OK;
    }

    pool = ngx_create_pool(16384, link->log);
    if (pool == NULL) {
        return NGX_ERROR;
    }

    round = ngx_pcalloc(pool, sizeof(ngx_http_fairgate_qround_t));
    if (round == NULL
        || ngx_array_init(&round->entries, pool, 64,
                          sizeof(ngx_http_fairgate_qentry_t))
           != NGX_OK)
    {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }

    round->pool = pool;
    round->link = link;
    round->start = ngx_current_msec;

    if (ngx_array_init(&round->groups, pool, 16,
                       sizeof(ngx_http_fairgate_qgroup_t))
        != NGX_OK)
    {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }

    /*
     * All the tenants in the first round of a connection (a Redis that
     * restarted empty gets everything) and every 64th (the others' counts
     * of tenants idle here); else those whose counts may have changed
     */

    ngx_shmtx_lock(&link->zone->shpool->mutex);

    full = (link->qepoch != link->zone->sh->redis.epoch
            || link->qrounds++ % NGX_HTTP_FAIRGATE_QSYNC_FULL == 0);
    link->qepoch = link->zone->sh->redis.epoch;

    rc = ngx_http_fairgate_qcount_copy(link->zone, &round->entries, 1,
                                       full ? 0 : 2 * link->conf->interval
                                                  + 1000);

    ngx_shmtx_unlock(&link->zone->shpool->mutex);

    if (rc == NGX_OK) {
        rc = ngx_http_fairgate_qsync_group(round);
    }

    total = round->groups.nelts;

    if (rc != NGX_OK || total == 0) {
        ngx_destroy_pool(pool);
        return rc;
    }

    link->qround = round;

    g = round->groups.elts;

    for (i = 0; i < total; i += n) {

        /* windows whole, about NGX_HTTP_FAIRGATE_QSYNC_BATCH buckets */

        buckets = 0;

        for (n = 0; i + n < total && buckets < NGX_HTTP_FAIRGATE_QSYNC_BATCH;
             n++)
        {
            buckets += g[i + n].n;
        }

        if (ngx_http_fairgate_qsync_send(round, i, n) != NGX_OK) {
            round->failed = 1;

            if (round->pending == 0) {
                ngx_http_fairgate_qsync_end(round);
            }

            return NGX_ERROR;
        }

        round->pending++;
    }

    return NGX_OK;
}


/* the entries of a window, side by side, make a group: a key */

static ngx_int_t
ngx_http_fairgate_qsync_group(ngx_http_fairgate_qround_t *round)
{
    ngx_uint_t                   i;
    ngx_http_fairgate_qgroup_t  *g;
    ngx_http_fairgate_qentry_t  *e;

    e = round->entries.elts;
    g = NULL;

    for (i = 0; i < round->entries.nelts; i++) {

        if (g && e[i].id == e[g->first].id
            && e[i].incarnation == e[g->first].incarnation
            && ngx_memcmp(&e[i].per, &e[g->first].per,
                          sizeof(fg_quota_per_t))
               == 0)
        {
            g->n++;
            continue;
        }

        g = ngx_array_push(&round->groups);
        if (g == NULL) {
            return NGX_ERROR;
        }

        ngx_memzero(g, sizeof(ngx_http_fairgate_qgroup_t));
        g->first = i;
        g->n = 1;
    }

    return NGX_OK;
}


/* n windows from first, in one script call */

static ngx_int_t
ngx_http_fairgate_qsync_send(ngx_http_fairgate_qround_t *round,
    ngx_uint_t first, ngx_uint_t n)
{
    size_t                           size;
    ngx_uint_t                       i, argc;
    ngx_http_fairgate_qbatch_t      *batch;
    ngx_http_fairgate_qgroup_t      *g;
    ngx_http_fairgate_qentry_t      *e;
    ngx_http_fairgate_redis_args_t        a;
    ngx_http_fairgate_redis_link_t  *link;

    link = round->link;
    g = round->groups.elts;
    e = round->entries.elts;

    argc = 4 + n;
    size = NGX_INT64_LEN;

    for (i = first; i < first + n; i++) {
        argc += 5 + 5 * g[i].n;
        size += link->conf->prefix.len + link->zone->name.len
                + e[g[i].first].name.len + 8 * NGX_INT64_LEN
                + 6 * NGX_INT64_LEN * g[i].n;
    }

    batch = ngx_palloc(round->pool, sizeof(ngx_http_fairgate_qbatch_t));

    if (batch == NULL || link->ac == NULL
        || ngx_http_fairgate_redis_args_init(&a, round->pool, argc, size)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    batch->round = round;
    batch->first = first;
    batch->n = n;

    ngx_http_fairgate_redis_literal(&a, "EVAL");
    ngx_http_fairgate_redis_literal(&a, ngx_http_fairgate_qsync_script);
    ngx_http_fairgate_redis_argf(&a, "%ui", n);

    for (i = first; i < first + n; i++) {
        ngx_http_fairgate_qsync_key(&a, link, &e[g[i].first]);
    }

    ngx_http_fairgate_redis_argf(&a, "%V", &link->conf->id);

    for (i = first; i < first + n; i++) {
        ngx_http_fairgate_qsync_window(&a, round, &g[i]);
    }

    if (a.p >= a.last || a.argc != argc) {
        ngx_log_error(NGX_LOG_ALERT, link->log, 0,
                      "fairgate_redis: quota sync arguments overflow");
        return NGX_ERROR;
    }

    if (redisAsyncCommandArgv(link->ac, ngx_http_fairgate_qsync_reply, batch,
                              (int) a.argc, a.argv, a.argvlen)
        != REDIS_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* a window's arguments: tag, expiry, mode, oldest bucket, its buckets */

static void
ngx_http_fairgate_qsync_window(ngx_http_fairgate_redis_args_t *a,
    ngx_http_fairgate_qround_t *round, ngx_http_fairgate_qgroup_t *g)
{
    int64_t                      oldest;
    ngx_uint_t                   i;
    ngx_http_fairgate_qentry_t  *e;

    e = (ngx_http_fairgate_qentry_t *) round->entries.elts + g->first;

    oldest = e[0].id;

    for (i = 0; i < g->n; i++) {
        oldest = ngx_min(oldest, e[i].c.start);
    }

    ngx_http_fairgate_redis_argf(a, "%uL:%uL",
                                 (uint64_t) round->link->zone->sh->redis.stamp,
                                 e[0].incarnation);
    ngx_http_fairgate_redis_argf(a, "%L", (fg_quota_per_length(&e[0].per)
                                           + NGX_HTTP_FAIRGATE_QSYNC_KEEP)
                                          * 1000);
    ngx_http_fairgate_redis_argf(a, e[0].add ? "a" : "m");
    ngx_http_fairgate_redis_argf(a, "%L", oldest);
    ngx_http_fairgate_redis_argf(a, "%ui", g->n);

    for (i = 0; i < g->n; i++) {
        ngx_http_fairgate_redis_argf(a, "%L", e[i].c.start);
        ngx_http_fairgate_redis_argf(a, "%uL", e[i].c.requests);
        ngx_http_fairgate_redis_argf(a, "%uL", e[i].c.tokens);
        ngx_http_fairgate_redis_argf(a, "%uL", e[i].c.cost);
        ngx_http_fairgate_redis_argf(a, e[i].own ? "1" : "0");
    }
}


/*
 * PREFIX ZONE ":q:" KIND ":" PER [":" START] ":" NAME: a calendar or fixed
 * window's start in it, a rolling window's buckets all in one
 */

static void
ngx_http_fairgate_qsync_key(ngx_http_fairgate_redis_args_t *a,
    ngx_http_fairgate_redis_link_t *link, ngx_http_fairgate_qentry_t *e)
{
    u_char  *p;

    p = ngx_slprintf(a->p, a->last, "%V%V:q:%c:", &link->conf->prefix,
                     &link->zone->name, "uak"[e->kind % 3]);

    /* "r2592000" at the most */
    if ((size_t) (a->last - p) > NGX_INT64_LEN + 1) {
        p = ngx_http_fairgate_qcount_tag(p, &e->per);
    }

    if (!e->per.rolling) {
        p = ngx_slprintf(p, a->last, ":%L", e->id);
    }

    p = ngx_slprintf(p, a->last, ":%V", &e->name);

    ngx_http_fairgate_redis_arg_end(a, p);
}


static void
ngx_http_fairgate_qsync_reply(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_fairgate_qbatch_t  *batch = data;

    ngx_uint_t                   i;
    redisReply                  *reply = r;
    ngx_http_fairgate_qround_t  *round;
    ngx_http_fairgate_qgroup_t  *g;

    round = batch->round;
    g = round->groups.elts;

    if (reply == NULL) {
        round->failed = 1;

    } else if (reply->type != REDIS_REPLY_ARRAY
               || reply->elements != batch->n)
    {
        if (!round->refused) {
            ngx_log_error(NGX_LOG_ERR, round->link->log, 0,
                          "fairgate_redis: the quota sync script failed: %*s",
                          (size_t) ((reply->type == REDIS_REPLY_ERROR)
                                    ? reply->len : 0),
                          reply->str);
        }

        round->failed = 1;
        round->refused = 1;

    } else {
        for (i = 0; i < batch->n; i++) {
            ngx_http_fairgate_qsync_parse(round, &g[batch->first + i],
                                          reply->element[i]);
        }
    }

    if (--round->pending == 0) {
        ngx_http_fairgate_qsync_end(round);
    }
}


/*
 * "REQUESTS TOKENS COST" of the others, then "START REQUESTS TOKENS COST"
 * of each of this gateway's fields another record wrote
 */

static void
ngx_http_fairgate_qsync_parse(ngx_http_fairgate_qround_t *round,
    ngx_http_fairgate_qgroup_t *g, redisReply *el)
{
    char                        *s, *end;
    int64_t                      start;
    uint64_t                     v[3];
    ngx_uint_t                   i, k;
    ngx_http_fairgate_qentry_t  *e;

    if (el->type != REDIS_REPLY_STRING) {
        return;
    }

    e = (ngx_http_fairgate_qentry_t *) round->entries.elts + g->first;
    s = el->str;

    for (i = 0; i < 3; i++) {
        v[i] = strtoull(s, &end, 10);

        if (end == s) {
            return;
        }

        s = end;
    }

    g->others.requests = v[0];
    g->others.tokens = v[1];
    g->others.cost = v[2];

    for ( ;; ) {
        start = strtoll(s, &end, 10);

        if (end == s) {
            return;
        }

        s = end;

        for (k = 0; k < 3; k++) {
            v[k] = strtoull(s, &end, 10);
            s = end;
        }

        for (i = 0; i < g->n; i++) {
            if (e[i].c.start == start) {
                e[i].adopt.requests = v[0];
                e[i].adopt.tokens = v[1];
                e[i].adopt.cost = v[2];
                e[i].adopted = 1;
            }
        }
    }
}


static void
ngx_http_fairgate_qsync_end(ngx_http_fairgate_qround_t *round)
{
    ngx_uint_t                       refused;
    ngx_http_fairgate_redis_link_t  *link;

    link = round->link;
    refused = round->refused;

    if (link->qround == round) {
        link->qround = NULL;
    }

    if (!round->failed) {
        ngx_http_fairgate_qsync_apply(round);
    }

    ngx_destroy_pool(round->pool);

    if (refused && link->ac) {
        link->round_end(link, "the quota sync script failed", 0, 0);
    }
}


/*
 * The answers into the zone: each window's others' sums, and this
 * gateway's own counts from an earlier record taken back.
 */

static void
ngx_http_fairgate_qsync_apply(ngx_http_fairgate_qround_t *round)
{
    ngx_uint_t                   i, k;
    ngx_http_fairgate_zone_t    *zone;
    ngx_http_fairgate_qgroup_t  *g;
    ngx_http_fairgate_qentry_t  *e;

    zone = round->link->zone;
    g = round->groups.elts;
    e = round->entries.elts;

    ngx_shmtx_lock(&zone->shpool->mutex);

    zone->sh->redis.qsyncs++;
    zone->sh->redis.qkeys = round->groups.nelts;
    zone->sh->redis.qround_ms = ngx_current_msec - round->start;

    for (i = 0; i < round->groups.nelts; i++) {

        for (k = g[i].first; k < g[i].first + g[i].n; k++) {
            if (e[k].adopted) {
                (void) ngx_http_fairgate_qcount_merge(zone, &e[k], 0);
            }
        }

        ngx_http_fairgate_qcount_remote(zone, &e[g[i].first], &g[i].others);
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);
}
