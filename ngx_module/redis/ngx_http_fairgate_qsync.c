
/*
 * fairgate: the quota windows' counts (fairgate_quota) shared through
 * Redis, beside the per-minute counters' rounds and on the same link.
 *
 * A bucket of a tenant's window (a calendar or fixed window, or one of a
 * rolling window's buckets) is a hash, "PREFIX ZONE:q:K:PER:START:NAME"
 * (docs/redis.md), with a field per gateway: "REQUESTS TOKENS COST TAG",
 * everything that gateway counted in that bucket.  Every round the
 * syncing worker sends each bucket of each window, 200 a script call: the
 * script writes the gateway's field (a snapshot: writing it twice, or
 * again into a Redis that restarted empty, changes nothing) and answers
 * with the sum of the other fields, which becomes the window's "remote".
 *
 * TAG names the zone and tenant record that wrote the field ("STAMP:N").
 * A field of this gateway with another tag was written by an earlier
 * record of the tenant (evicted and made again, or before nginx
 * restarted): the script keeps the larger of each count, and answers it
 * too, so that the zone takes it back; a gateway restarted without its
 * state file thus loses nothing that reached Redis, and one restarted
 * with it keeps the larger of the two.  A field of the same record is
 * overwritten: counts taken back (a request never served) go out too.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <stdlib.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_fairgate_redis.h"


#define NGX_HTTP_FAIRGATE_QSYNC_BATCH  200
#define NGX_HTTP_FAIRGATE_QSYNC_ARGS   6         /* a key's */
#define NGX_HTTP_FAIRGATE_QSYNC_KEEP   86400     /* s after a window */
#define NGX_HTTP_FAIRGATE_QSYNC_FULL   64        /* rounds */


struct ngx_http_fairgate_qround_s {
    ngx_pool_t                      *pool;
    ngx_http_fairgate_redis_link_t  *link;
    ngx_array_t                      entries;
    ngx_uint_t                       pending;
    ngx_msec_t                       start;
    unsigned                         failed:1;
    unsigned                         refused:1;
};


typedef struct {
    ngx_http_fairgate_qround_t      *round;
    ngx_uint_t                       first;
    ngx_uint_t                       n;
} ngx_http_fairgate_qbatch_t;


static ngx_int_t ngx_http_fairgate_qsync_send(
    ngx_http_fairgate_qround_t *round, ngx_uint_t first, ngx_uint_t n);
static u_char *ngx_http_fairgate_qsync_key(u_char *p,
    ngx_http_fairgate_redis_link_t *link, ngx_http_fairgate_qentry_t *e);
static void ngx_http_fairgate_qsync_reply(redisAsyncContext *ac, void *r,
    void *data);
static void ngx_http_fairgate_qsync_parse(ngx_http_fairgate_qentry_t *e,
    redisReply *el);
static void ngx_http_fairgate_qsync_end(ngx_http_fairgate_qround_t *round);
static void ngx_http_fairgate_qsync_apply(ngx_http_fairgate_qround_t *round);


/*
 * KEYS: the buckets; ARGV: this gateway's field, then for each key its
 * requests, tokens, cost, tag, "1" if the gateway counted in it, and its
 * expiry (ms).  Answers for each key "REQUESTS TOKENS COST" of the other
 * fields, and the gateway's own field's three counts after them when
 * another record wrote it.
 */

static const char  ngx_http_fairgate_qsync_script[] =
    "local me = ARGV[1]\n"
    "local function big(x, y)\n"
    "  if tonumber(x) >= tonumber(y) then return x end\n"
    "  return y\n"
    "end\n"
    "local out = {}\n"
    "for i, key in ipairs(KEYS) do\n"
    "  local a = 2 + (i - 1) * 6\n"
    "  local rq, tk, cs, tag = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]\n"
    "  local own = string.sub(ARGV[a + 4], 1, 1) == '1'\n"
    "  local add = string.sub(ARGV[a + 4], 2, 2) == 'a'\n"
    "  local all = redis.call('HGETALL', key)\n"
    "  local orq, otk, ocs, adopt = 0, 0, 0, nil\n"
    "  for j = 1, #all, 2 do\n"
    "    local r, k, c, g = string.match(all[j + 1],\n"
    "                                    '^(%d+) (%d+) (%d+) ?(%S*)$')\n"
    "    if r and all[j] ~= me then\n"
    "      orq = orq + tonumber(r)\n"
    "      otk = otk + tonumber(k)\n"
    "      ocs = ocs + tonumber(c)\n"
    "    elseif r and g ~= tag then\n"
    "      adopt = {r, k, c}\n"
    "    end\n"
    "  end\n"
    "  local s = string.format('%.0f %.0f %.0f', orq, otk, ocs)\n"
    "  if adopt then\n"
    "    s = s .. ' ' .. adopt[1] .. ' ' .. adopt[2] .. ' ' .. adopt[3]\n"
    "    if add then\n"
    "      rq = string.format('%.0f', tonumber(rq) + tonumber(adopt[1]))\n"
    "      tk = string.format('%.0f', tonumber(tk) + tonumber(adopt[2]))\n"
    "      cs = string.format('%.0f', tonumber(cs) + tonumber(adopt[3]))\n"
    "    else\n"
    "      rq, tk, cs = big(rq, adopt[1]), big(tk, adopt[2]),\n"
    "                   big(cs, adopt[3])\n"
    "    end\n"
    "    own = true\n"
    "  end\n"
    "  if own then\n"
    "    redis.call('HSET', key, me, rq .. ' ' .. tk .. ' ' .. cs .. ' '\n"
    "                                .. tag)\n"
    "    redis.call('PEXPIRE', key, ARGV[a + 5])\n"
    "  end\n"
    "  out[i] = s\n"
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
    ngx_uint_t                   i, n, total, full;
    ngx_pool_t                  *pool;
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

    total = round->entries.nelts;

    if (rc != NGX_OK || total == 0) {
        ngx_destroy_pool(pool);
        return rc;
    }

    link->qround = round;

    for (i = 0; i < total; i += n) {
        n = ngx_min(total - i, NGX_HTTP_FAIRGATE_QSYNC_BATCH);

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


static ngx_int_t
ngx_http_fairgate_qsync_send(ngx_http_fairgate_qround_t *round,
    ngx_uint_t first, ngx_uint_t n)
{
    u_char                          *p, *buf, *last;
    size_t                           size, *argvlen;
    ngx_uint_t                       i, argc, k;
    const char                     **argv;
    ngx_http_fairgate_qbatch_t      *batch;
    ngx_http_fairgate_qentry_t      *e;
    ngx_http_fairgate_redis_link_t  *link;

    link = round->link;
    e = round->entries.elts;

    size = 0;

    for (i = first; i < first + n; i++) {
        size += link->conf->prefix.len + link->zone->name.len
                + e[i].name.len + 12 * NGX_INT64_LEN + 16;
    }

    argc = 4 + n + n * NGX_HTTP_FAIRGATE_QSYNC_ARGS;

    batch = ngx_palloc(round->pool, sizeof(ngx_http_fairgate_qbatch_t));
    argv = ngx_palloc(round->pool, argc * sizeof(char *));
    argvlen = ngx_palloc(round->pool, argc * sizeof(size_t));
    buf = ngx_pnalloc(round->pool, size);

    if (batch == NULL || argv == NULL || argvlen == NULL || buf == NULL
        || link->ac == NULL)
    {
        return NGX_ERROR;
    }

    batch->round = round;
    batch->first = first;
    batch->n = n;

    argv[0] = "EVAL";
    argvlen[0] = 4;
    argv[1] = ngx_http_fairgate_qsync_script;
    argvlen[1] = sizeof(ngx_http_fairgate_qsync_script) - 1;

    p = buf;
    last = buf + size;

    /* the key count, the keys, this gateway's field, the keys' values */

    for (k = 2; k < argc; k++) {
        argv[k] = (char *) p;

        if (k == 2) {
            p = ngx_slprintf(p, last, "%ui", n);

        } else if (k < 3 + n) {
            p = ngx_http_fairgate_qsync_key(p, link, &e[first + k - 3]);

        } else if (k == 3 + n) {
            argv[k] = (char *) link->conf->id.data;
            argvlen[k] = link->conf->id.len;
            continue;

        } else {
            i = first + (k - 4 - n) / NGX_HTTP_FAIRGATE_QSYNC_ARGS;

            switch ((k - 4 - n) % NGX_HTTP_FAIRGATE_QSYNC_ARGS) {
            case 0:
                p = ngx_slprintf(p, last, "%uL", e[i].c.requests);
                break;
            case 1:
                p = ngx_slprintf(p, last, "%uL", e[i].c.tokens);
                break;
            case 2:
                p = ngx_slprintf(p, last, "%uL", e[i].c.cost);
                break;
            case 3:
                p = ngx_slprintf(p, last, "%uL:%uL",
                                 (uint64_t) link->zone->sh->redis.stamp,
                                 e[i].incarnation);
                break;
            case 4:
                *p++ = e[i].own ? '1' : '0';
                *p++ = e[i].add ? 'a' : 'm';
                break;
            default:
                p = ngx_slprintf(p, last, "%L",
                                 (fg_quota_per_length(&e[i].per)
                                  + NGX_HTTP_FAIRGATE_QSYNC_KEEP) * 1000);
            }
        }

        argvlen[k] = p - (u_char *) argv[k];
    }

    if (p >= last) {
        ngx_log_error(NGX_LOG_ALERT, link->log, 0,
                      "fairgate_redis: quota sync arguments overflow");
        return NGX_ERROR;
    }

    if (redisAsyncCommandArgv(link->ac, ngx_http_fairgate_qsync_reply, batch,
                              (int) argc, argv, argvlen)
        != REDIS_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* PREFIX ZONE ":q:" KIND ":" PER ":" START ":" NAME */

static u_char *
ngx_http_fairgate_qsync_key(u_char *p, ngx_http_fairgate_redis_link_t *link,
    ngx_http_fairgate_qentry_t *e)
{
    static const char  kinds[] = "uak";

    p = ngx_sprintf(p, "%V%V:q:%c:", &link->conf->prefix, &link->zone->name,
                    kinds[e->kind % 3]);
    p = ngx_http_fairgate_qcount_tag(p, &e->per);

    return ngx_sprintf(p, ":%L:%V", e->c.start, &e->name);
}


static void
ngx_http_fairgate_qsync_reply(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_fairgate_qbatch_t  *batch = data;

    ngx_uint_t                   i;
    redisReply                  *reply = r;
    ngx_http_fairgate_qround_t  *round;
    ngx_http_fairgate_qentry_t  *e;

    round = batch->round;
    e = round->entries.elts;

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
            ngx_http_fairgate_qsync_parse(&e[batch->first + i],
                                          reply->element[i]);
        }
    }

    if (--round->pending == 0) {
        ngx_http_fairgate_qsync_end(round);
    }
}


/* "REQUESTS TOKENS COST" of the others [and this gateway's own's] */

static void
ngx_http_fairgate_qsync_parse(ngx_http_fairgate_qentry_t *e, redisReply *el)
{
    char        *s, *end;
    uint64_t     v[6];
    ngx_uint_t   i;

    if (el->type != REDIS_REPLY_STRING) {
        return;
    }

    s = el->str;

    for (i = 0; i < 6; i++) {
        v[i] = strtoull(s, &end, 10);

        if (end == s) {
            break;
        }

        s = end;
    }

    if (i < 3) {
        return;
    }

    e->others.requests = v[0];
    e->others.tokens = v[1];
    e->others.cost = v[2];

    if (i == 6) {
        e->adopt.requests = v[3];
        e->adopt.tokens = v[4];
        e->adopt.cost = v[5];
        e->adopted = 1;
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
 * The answers into the zone: each window's others' sums over its buckets
 * (the entries of a window are side by side), and this gateway's own
 * counts from an earlier record taken back.
 */

static void
ngx_http_fairgate_qsync_apply(ngx_http_fairgate_qround_t *round)
{
    ngx_uint_t                   i, n;
    fg_quota_count_t             sum;
    ngx_http_fairgate_zone_t    *zone;
    ngx_http_fairgate_qentry_t  *e;

    zone = round->link->zone;
    e = round->entries.elts;
    n = round->entries.nelts;

    ngx_memzero(&sum, sizeof(fg_quota_count_t));

    ngx_shmtx_lock(&zone->shpool->mutex);

    zone->sh->redis.qsyncs++;
    zone->sh->redis.qkeys = n;
    zone->sh->redis.qround_ms = ngx_current_msec - round->start;

    for (i = 0; i < n; i++) {
        sum.requests += e[i].others.requests;
        sum.tokens += e[i].others.tokens;
        sum.cost += e[i].others.cost;

        if (e[i].adopted) {
            (void) ngx_http_fairgate_qcount_merge(zone, &e[i], 0);
        }

        if (i + 1 < n && e[i + 1].id == e[i].id
            && e[i + 1].incarnation == e[i].incarnation
            && ngx_memcmp(&e[i + 1].per, &e[i].per, sizeof(fg_quota_per_t))
               == 0)
        {
            continue;
        }

        ngx_http_fairgate_qcount_remote(zone, &e[i], &sum);
        ngx_memzero(&sum, sizeof(fg_quota_count_t));
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);
}
