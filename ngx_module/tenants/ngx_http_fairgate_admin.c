
/*
 * fairgate: "fairgate_admin ADMIN_KEY_SHA256 ...;", the admin API of the
 * keys kept in Redis (ngx_http_fairgate_keystore.c), JSON in and out:
 *
 *     POST   .../keys        a key made: its secret shown this once
 *     GET    .../keys        the keys, by id, ?limit=N&after=ID
 *     GET    .../keys/ID     one key
 *     PATCH  .../keys/ID     its settings changed
 *     DELETE .../keys/ID     revoked, for good
 *
 * A request carries an admin key ("Authorization: Bearer ...") whose
 * SHA-256 the directive names: else 401.  A key is made of 24 random
 * bytes, "sk-fg-" and their hex; only its SHA-256 is stored, its id is
 * the digest's first 16 hex digits.  Each change is one Lua script in
 * Redis (atomic), which also appends the key's digest to the stream of
 * changes, so that every gateway drops it from its cache.  docs/admin-api.md
 * is the reference.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "ngx_http_fairgate_tenants.h"
#include "ngx_http_fairgate_redis.h"
#include "ngx_http_fairgate_http.h"


#define NGX_HTTP_FAIRGATE_ADMIN_LIST_MAX  100

#define ngx_http_fairgate_admin_redis(r)                                      \
    ((ngx_http_fairgate_main_conf_t *)                                        \
         ngx_http_get_module_main_conf(r, ngx_http_fairgate_module))->redis


/* the scripts; KEYS and ARGV as each call below gives them */

/* KEYS: key, index, events; ARGV: id, digest, field, value, ...: the
 * new key's hash, 0: its id is taken */
static const char  ngx_http_fairgate_admin_create[] =
    "if redis.call('EXISTS', KEYS[1]) == 1 or #redis.call('ZRANGEBYLEX',"
    " KEYS[2], '[' .. ARGV[1] .. ':', '(' .. ARGV[1] .. ';', 'LIMIT', 0,"
    " 1) > 0 then return 0 end "
    "redis.call('HSET', KEYS[1], unpack(ARGV, 3)) "
    "redis.call('ZADD', KEYS[2], 0, ARGV[1] .. ':' .. ARGV[2]) "
    "redis.call('XADD', KEYS[3], 'MAXLEN', '~', 100000, '*', 'd', ARGV[2]) "
    "return redis.call('HGETALL', KEYS[1])";

/* KEYS: index, events; ARGV: id, key prefix, change ("" none, "revoke",
 * "patch"), field, value, ...: {digest, the key's hash after}, nil: no
 * such id */
static const char  ngx_http_fairgate_admin_change[] =
    "local m = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[1] .. ':',"
    " '(' .. ARGV[1] .. ';', 'LIMIT', 0, 1) "
    "if #m == 0 then return false end "
    "local d = string.sub(m[1], 18) "
    "local k = ARGV[2] .. d "
    "if ARGV[3] == 'revoke' and (redis.call('HGET', k, 'revoked') or '0')"
    " ~= '0' then return {d, redis.call('HGETALL', k)} end "
    "if ARGV[3] ~= '' then "
    "if #ARGV > 3 then redis.call('HSET', k, unpack(ARGV, 4)) end "
    "redis.call('XADD', KEYS[2], 'MAXLEN', '~', 100000, '*', 'd', d) end "
    "return {d, redis.call('HGETALL', k)}";

/* KEYS: index; ARGV: after ("" from the start), limit, key prefix */
static const char  ngx_http_fairgate_admin_list[] =
    "local n = tonumber(ARGV[2]) "
    "local from = ARGV[1] == '' and '-' or ('[' .. ARGV[1] .. ';') "
    "local m = redis.call('ZRANGEBYLEX', KEYS[1], from, '+', 'LIMIT', 0,"
    " n + 1) "
    "local out = {} "
    "for i = 1, math.min(#m, n) do"
    " out[i] = redis.call('HGETALL', ARGV[3] .. string.sub(m[i], 18)) end "
    "return {#m > n and 1 or 0, out}";


/* a request's call to Redis: outlives the request if Redis is late */
typedef struct {
    ngx_http_request_t          *request;    /* NULL: nobody waits */
    ngx_pool_cleanup_t          *cln;        /* in its pool, while it waits */
    ngx_event_t                  timer;
    ngx_uint_t                   status;     /* of the answer, if it is */
    ngx_str_t                    key;        /* created: the secret */
    u_char                       id[NGX_HTTP_FAIRGATE_KEY_ID_LEN + 1];
    ngx_uint_t                   list;       /* the answer is a list */
    ngx_uint_t                   change;     /* {digest, hash} */
} ngx_http_fairgate_admin_call_t;


static ngx_int_t ngx_http_fairgate_admin_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_admin_auth(ngx_http_request_t *r,
    ngx_array_t *digests);
static void ngx_http_fairgate_admin_body(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_admin_create_key(ngx_http_request_t *r,
    json_t *body);
static ngx_int_t ngx_http_fairgate_admin_send(ngx_http_request_t *r,
    ngx_uint_t status, ngx_array_t *argv, ngx_str_t *id,
    ngx_http_fairgate_admin_call_t **call);
static void ngx_http_fairgate_admin_reply(redisAsyncContext *ac, void *r,
    void *data);
static json_t *ngx_http_fairgate_admin_changed(redisReply *reply);
static void ngx_http_fairgate_admin_late(ngx_event_t *ev);
static void ngx_http_fairgate_admin_cleanup(void *data);
static ngx_int_t ngx_http_fairgate_admin_json(ngx_http_request_t *r,
    ngx_uint_t status, json_t *o);
static ngx_int_t ngx_http_fairgate_admin_error(ngx_http_request_t *r,
    ngx_uint_t status, const char *param, const char *code,
    const char *message);
static ngx_int_t ngx_http_fairgate_admin_push(ngx_array_t *argv,
    const char *fmt, ngx_str_t *s);


char *
ngx_http_fairgate_admin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    u_char                         *d;
    ngx_str_t                      *value;
    ngx_uint_t                      i;
    ngx_http_core_loc_conf_t       *clcf;
    ngx_http_fairgate_main_conf_t  *fmcf;

    if (flcf->admin) {
        return "is duplicate";
    }

    fmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_fairgate_module);

    if (fmcf->redis == NULL) {
        return "needs \"fairgate_redis\" before it, in http";
    }

    flcf->admin = ngx_array_create(cf->pool, cf->args->nelts - 1, 32);
    if (flcf->admin == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        d = ngx_array_push(flcf->admin);
        if (d == NULL) {
            return NGX_CONF_ERROR;
        }

        if (ngx_http_fairgate_key_unhex(d, value[i].data, value[i].len)
            != NGX_OK)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid admin key hash \"%V\", expected 64 "
                               "hex digits (SHA-256 of the admin key)",
                               &value[i]);
            return NGX_CONF_ERROR;
        }
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_fairgate_admin_handler;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_fairgate_admin_handler(ngx_http_request_t *r)
{
    u_char                         *p, *last;
    ngx_int_t                       rc;
    ngx_str_t                       id, after, limit, s;
    ngx_array_t                    *argv;
    ngx_http_fairgate_redis_conf_t *rcf;
    ngx_http_fairgate_loc_conf_t   *flcf;
    ngx_http_fairgate_admin_call_t *call;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

    if (ngx_http_fairgate_admin_auth(r, flcf->admin) != NGX_OK) {
        return ngx_http_fairgate_admin_error(r, NGX_HTTP_UNAUTHORIZED, NULL,
                                             "invalid_api_key",
                                             "Incorrect admin key provided.");
    }

    /* ".../keys" or ".../keys/ID" */

    p = r->uri.data;
    last = p + r->uri.len;
    ngx_str_null(&id);

    if (r->uri.len >= 5 && ngx_strncmp(last - 5, "/keys", 5) == 0) {
        /* the list */

    } else if (r->uri.len >= 22 && ngx_strncmp(last - 22, "/keys/", 6) == 0) {
        id.data = last - 16;
        id.len = 16;

        for (p = id.data; p < last; p++) {
            if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) {
                return ngx_http_fairgate_admin_error(r, NGX_HTTP_NOT_FOUND,
                           NULL, "not_found", "No such key: its id is 16 "
                           "lowercase hex digits.");
            }
        }

    } else {
        return ngx_http_fairgate_admin_error(r, NGX_HTTP_NOT_FOUND, NULL,
                                             "not_found",
                                             "Unknown admin path: expected "
                                             ".../keys or .../keys/ID.");
    }

    if (r->method & (NGX_HTTP_POST|NGX_HTTP_PATCH)
        && (id.len != 0) == ((r->method & NGX_HTTP_PATCH) != 0))
    {
        rc = ngx_http_read_client_request_body(r,
                                               ngx_http_fairgate_admin_body);

        if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
            return rc;
        }

        return NGX_DONE;
    }

    rcf = ngx_http_fairgate_admin_redis(r);

    argv = ngx_array_create(r->pool, 8, sizeof(ngx_str_t));
    if (argv == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (r->method == NGX_HTTP_GET && id.len == 0) {
        ngx_str_null(&after);
        ngx_str_set(&limit, "20");

        if (ngx_http_arg(r, (u_char *) "after", 5, &after) == NGX_OK
            && after.len != 16)
        {
            return ngx_http_fairgate_admin_error(r, NGX_HTTP_BAD_REQUEST,
                       "after", NULL, "Invalid 'after': expected a key's id.");
        }

        if (ngx_http_arg(r, (u_char *) "limit", 5, &limit) == NGX_OK) {
            rc = ngx_atoi(limit.data, limit.len);

            if (rc < 1 || rc > NGX_HTTP_FAIRGATE_ADMIN_LIST_MAX) {
                return ngx_http_fairgate_admin_error(r, NGX_HTTP_BAD_REQUEST,
                           "limit", NULL, "Invalid 'limit': expected an "
                           "integer from 1 to 100.");
            }
        }

        ngx_str_set(&s, ngx_http_fairgate_admin_list);

        if (ngx_http_fairgate_admin_push(argv, "EVAL", NULL) != NGX_OK
            || ngx_http_fairgate_admin_push(argv, NULL, &s) != NGX_OK
            || ngx_http_fairgate_admin_push(argv, "1", NULL) != NGX_OK
            || ngx_http_fairgate_admin_push(argv, "%Vkeys", &rcf->prefix)
               != NGX_OK
            || ngx_http_fairgate_admin_push(argv, NULL, &after) != NGX_OK
            || ngx_http_fairgate_admin_push(argv, NULL, &limit) != NGX_OK
            || ngx_http_fairgate_admin_push(argv, "%Vkey:", &rcf->prefix)
               != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        rc = ngx_http_fairgate_admin_send(r, NGX_HTTP_OK, argv, NULL, &call);

        if (call) {
            call->list = 1;
        }

        return rc;
    }

    if (id.len == 0 || !(r->method & (NGX_HTTP_GET|NGX_HTTP_DELETE))) {
        return ngx_http_fairgate_admin_error(r, NGX_HTTP_NOT_ALLOWED, NULL,
                                             "method_not_allowed",
                                             "Method not allowed here: "
                                             "GET or POST .../keys; GET, "
                                             "PATCH or DELETE .../keys/ID.");
    }

    ngx_str_set(&s, ngx_http_fairgate_admin_change);

    if (ngx_http_fairgate_admin_push(argv, "EVAL", NULL) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, NULL, &s) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "2", NULL) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "%Vkeys", &rcf->prefix)
           != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "%Vkeys:events", &rcf->prefix)
           != NGX_OK
        || ngx_http_fairgate_admin_push(argv, NULL, &id) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "%Vkey:", &rcf->prefix)
           != NGX_OK
        || ngx_http_fairgate_admin_push(argv,
               r->method == NGX_HTTP_DELETE ? "revoke" : "", NULL)
           != NGX_OK
        || (r->method == NGX_HTTP_DELETE
            && (ngx_http_fairgate_admin_push(argv, "revoked", NULL) != NGX_OK
                || ngx_http_fairgate_admin_push(argv, "%T", NULL) != NGX_OK)))
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_fairgate_admin_send(r, NGX_HTTP_OK, argv, &id, &call);

    if (call) {
        call->change = 1;
    }

    return rc;
}


/* the request's admin key, hashed, among the directive's digests */

static ngx_int_t
ngx_http_fairgate_admin_auth(ngx_http_request_t *r, ngx_array_t *digests)
{
    u_char            md[32], *d;
    ngx_str_t         key;
    ngx_uint_t        i, found;
    ngx_table_elt_t  *h;

    h = r->headers_in.authorization;

    if (h == NULL || h->value.len <= 7
        || ngx_strncasecmp(h->value.data, (u_char *) "Bearer ", 7) != 0)
    {
        return NGX_DECLINED;
    }

    key.data = h->value.data + 7;
    key.len = h->value.len - 7;

    if (ngx_http_fairgate_key_digest(&key, md) != NGX_OK) {
        return NGX_ERROR;
    }

    d = digests->elts;
    found = 0;

    for (i = 0; i < digests->nelts; i++) {
        found |= (CRYPTO_memcmp(d + 32 * i, md, 32) == 0);
    }

    return found ? NGX_OK : NGX_DECLINED;
}


/* POST .../keys or PATCH .../keys/ID: the body read, checked, sent */

static void
ngx_http_fairgate_admin_body(ngx_http_request_t *r)
{
    u_char                           *data, msg[256];
    size_t                            len;
    json_t                           *body;
    ngx_int_t                         rc;
    ngx_str_t                         s, id;
    ngx_array_t                      *argv;
    const char                       *field;
    json_error_t                      err;
    ngx_http_fairgate_redis_conf_t   *rcf;
    ngx_http_fairgate_admin_call_t   *call;

    rcf = ngx_http_fairgate_admin_redis(r);

    if (ngx_http_fairgate_body(r, &data, &len) != NGX_OK) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    body = len ? json_loadb((char *) data, len, JSON_REJECT_DUPLICATES, &err)
               : NULL;

    if (!json_is_object(body)) {
        json_decref(body);
        ngx_http_finalize_request(r, ngx_http_fairgate_admin_error(r,
            NGX_HTTP_BAD_REQUEST, NULL, NULL,
            "We could not parse the JSON body of your request: a JSON "
            "object was expected."));
        return;
    }

    if (r->method == NGX_HTTP_POST) {
        rc = ngx_http_fairgate_admin_create_key(r, body);
        json_decref(body);
        ngx_http_finalize_request(r, rc);
        return;
    }

    argv = ngx_array_create(r->pool, 16, sizeof(ngx_str_t));
    if (argv == NULL) {
        json_decref(body);
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    id.data = r->uri.data + r->uri.len - 16;
    id.len = 16;
    ngx_str_set(&s, ngx_http_fairgate_admin_change);

    rc = NGX_ERROR;

    if (ngx_http_fairgate_admin_push(argv, "EVAL", NULL) == NGX_OK
        && ngx_http_fairgate_admin_push(argv, NULL, &s) == NGX_OK
        && ngx_http_fairgate_admin_push(argv, "2", NULL) == NGX_OK
        && ngx_http_fairgate_admin_push(argv, "%Vkeys", &rcf->prefix)
           == NGX_OK
        && ngx_http_fairgate_admin_push(argv, "%Vkeys:events", &rcf->prefix)
           == NGX_OK
        && ngx_http_fairgate_admin_push(argv, NULL, &id) == NGX_OK
        && ngx_http_fairgate_admin_push(argv, "%Vkey:", &rcf->prefix)
           == NGX_OK
        && ngx_http_fairgate_admin_push(argv, "patch", NULL) == NGX_OK)
    {
        rc = ngx_http_fairgate_admin_parse(r->pool, body, 0, argv, &field,
                                           msg);
    }

    if (rc == NGX_OK) {
        /* hiredis copies the command as it takes it: the body may go */
        rc = ngx_http_fairgate_admin_send(r, NGX_HTTP_OK, argv, &id, &call);

        if (call) {
            call->change = 1;
        }

    } else if (rc == NGX_DECLINED) {
        rc = ngx_http_fairgate_admin_error(r, NGX_HTTP_BAD_REQUEST, field,
                                           NULL, (char *) msg);

    } else {
        rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_decref(body);
    ngx_http_finalize_request(r, rc);
}


/* POST .../keys: a new key, its settings checked, stored by digest */

static ngx_int_t
ngx_http_fairgate_admin_create_key(ngx_http_request_t *r, json_t *body)
{
    u_char                           raw[24], md[32], hex[64], msg[256], *p;
    ngx_int_t                        rc;
    ngx_str_t                        s, key, digest, id;
    ngx_array_t                     *argv;
    const char                      *field;
    ngx_http_fairgate_redis_conf_t  *rcf;
    ngx_http_fairgate_admin_call_t  *call;

    rcf = ngx_http_fairgate_admin_redis(r);

    argv = ngx_array_create(r->pool, 32, sizeof(ngx_str_t));
    p = ngx_pnalloc(r->pool, 6 + 48);

    if (argv == NULL || p == NULL || RAND_bytes(raw, sizeof(raw)) != 1) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    key.data = p;
    key.len = ngx_hex_dump(ngx_cpymem(p, "sk-fg-", 6), raw, sizeof(raw)) - p;

    if (ngx_http_fairgate_key_digest(&key, md) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_hex_dump(hex, md, 32);
    digest.data = hex;
    digest.len = 64;
    id.data = hex;
    id.len = NGX_HTTP_FAIRGATE_KEY_ID_LEN;
    ngx_str_set(&s, ngx_http_fairgate_admin_create);

    if (ngx_http_fairgate_admin_push(argv, "EVAL", NULL) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, NULL, &s) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "3", NULL) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "%Vkey:", &rcf->prefix)
           != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "%Vkeys", &rcf->prefix)
           != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "%Vkeys:events", &rcf->prefix)
           != NGX_OK
        || ngx_http_fairgate_admin_push(argv, NULL, &id) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, NULL, &digest) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "id", NULL) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, NULL, &id) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "created", NULL) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "%T", NULL) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "revoked", NULL) != NGX_OK
        || ngx_http_fairgate_admin_push(argv, "0", NULL) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the first key is the hash's name: the digest appended */

    s = ((ngx_str_t *) argv->elts)[3];
    p = ngx_pnalloc(r->pool, s.len + 64);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ((ngx_str_t *) argv->elts)[3].data = p;
    ((ngx_str_t *) argv->elts)[3].len = ngx_cpymem(ngx_cpymem(p, s.data,
                                                              s.len),
                                                   hex, 64) - p;

    rc = ngx_http_fairgate_admin_parse(r->pool, body, 1, argv, &field, msg);

    if (rc == NGX_DECLINED) {
        return ngx_http_fairgate_admin_error(r, NGX_HTTP_BAD_REQUEST, field,
                                             NULL, (char *) msg);
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_fairgate_admin_send(r, NGX_HTTP_CREATED, argv, &id, &call);

    if (call) {
        call->key = key;
    }

    return rc;
}


/*
 * The command sent on the worker's link; the answer comes to
 * ngx_http_fairgate_admin_reply() within fairgate_redis's timeout.
 * NGX_DONE: sent (the request held until then); else the request's
 * answer.
 */

static ngx_int_t
ngx_http_fairgate_admin_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_array_t *argv, ngx_str_t *id, ngx_http_fairgate_admin_call_t **call)
{
    size_t                          *lens;
    ngx_str_t                       *a;
    ngx_uint_t                       i;
    const char                     **args;
    redisAsyncContext               *ac;
    ngx_pool_cleanup_t              *cln;
    ngx_http_fairgate_redis_conf_t  *rcf;
    ngx_http_fairgate_admin_call_t  *c;

    *call = NULL;

    rcf = ngx_http_fairgate_admin_redis(r);

    ac = ngx_http_fairgate_redis_cmd(rcf);

    if (ac == NULL) {
        return ngx_http_fairgate_admin_error(r,
                   NGX_HTTP_SERVICE_UNAVAILABLE, NULL, "service_unavailable",
                   "The key store (Redis) is not reachable: please try "
                   "again later.");
    }

    args = ngx_palloc(r->pool, argv->nelts * sizeof(char *));
    lens = ngx_palloc(r->pool, argv->nelts * sizeof(size_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);
    c = ngx_calloc(sizeof(ngx_http_fairgate_admin_call_t), r->connection->log);

    if (args == NULL || lens == NULL || cln == NULL || c == NULL) {
        ngx_free(c);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    a = argv->elts;

    for (i = 0; i < argv->nelts; i++) {
        args[i] = (char *) a[i].data;
        lens[i] = a[i].len;
    }

    if (redisAsyncCommandArgv(ac, ngx_http_fairgate_admin_reply, c,
                              (int) argv->nelts, args, lens)
        != REDIS_OK)
    {
        ngx_free(c);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    c->request = r;
    c->status = status;

    if (id) {
        ngx_memcpy(c->id, id->data, NGX_HTTP_FAIRGATE_KEY_ID_LEN);
    }

    c->timer.handler = ngx_http_fairgate_admin_late;
    c->timer.data = c;
    c->timer.log = r->connection->log;

    ngx_add_timer(&c->timer, rcf->timeout);

    cln->handler = ngx_http_fairgate_admin_cleanup;
    cln->data = c;
    c->cln = cln;

    *call = c;
    r->main->count++;

    return NGX_DONE;
}


static void
ngx_http_fairgate_admin_reply(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_fairgate_admin_call_t  *c = data;

    json_t              *o;
    ngx_int_t            rc;
    redisReply          *reply = r;
    ngx_connection_t    *conn;
    ngx_http_request_t  *req;

    req = c->request;

    if (c->timer.timer_set) {
        ngx_del_timer(&c->timer);
    }

    if (req == NULL) {
        ngx_free(c);
        return;
    }

    c->request = NULL;
    c->cln->handler = NULL;
    conn = req->connection;

    if (reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        if (reply) {
            ngx_log_error(NGX_LOG_ERR, conn->log, 0,
                          "fairgate_admin: Redis said: %*s",
                          (size_t) reply->len, reply->str);
        }

        rc = ngx_http_fairgate_admin_error(req, NGX_HTTP_SERVICE_UNAVAILABLE,
                 NULL, "service_unavailable", "The key store (Redis) did not "
                 "answer: please try again later.");

    } else if (reply->type == REDIS_REPLY_NIL) {
        rc = ngx_http_fairgate_admin_error(req, NGX_HTTP_NOT_FOUND, NULL,
                                           "not_found", "No such key.");

    } else if (reply->type != REDIS_REPLY_ARRAY) {
        /* a new key's id taken already: once in 2^64, try again */
        rc = ngx_http_fairgate_admin_error(req, NGX_HTTP_CONFLICT, NULL,
                                           "conflict", "The new key's id is "
                                           "taken: please try again.");

    } else if (c->change) {
        o = ngx_http_fairgate_admin_changed(reply);
        rc = ngx_http_fairgate_admin_json(req, c->status, o);

    } else if (c->list) {
        o = ngx_http_fairgate_admin_list_json(reply);
        rc = ngx_http_fairgate_admin_json(req, NGX_HTTP_OK, o);

    } else {
        o = ngx_http_fairgate_admin_key_json(reply);

        if (o && c->key.len) {
            /* the secret, this once */
            json_object_set_new(o, "key", json_stringn((char *) c->key.data,
                                                       c->key.len));
        }

        rc = ngx_http_fairgate_admin_json(req, c->status, o);
    }

    if (rc == NGX_OK && req->method != NGX_HTTP_GET) {
        /* what changed, for the operators' record */
        ngx_log_error(NGX_LOG_NOTICE, conn->log, 0,
                      "fairgate_admin: key %s %s", c->id,
                      req->method == NGX_HTTP_POST ? "created"
                      : req->method == NGX_HTTP_PATCH ? "changed"
                      : "revoked");
    }

    ngx_free(c);

    ngx_http_finalize_request(req, rc);
    ngx_http_run_posted_requests(conn);
}


/*
 * A key got, changed or revoked: {digest, hash}.  A change leaves this
 * gateway's cache at once (the others' within a poll of the stream).
 */

static json_t *
ngx_http_fairgate_admin_changed(redisReply *reply)
{
    u_char                          digest[32];
    ngx_uint_t                      i;
    redisReply                     *d;
    ngx_http_fairgate_keys_t      **kp;
    ngx_http_fairgate_main_conf_t  *fmcf;

    if (reply->elements != 2 || reply->element[1]->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }

    d = reply->element[0];
    fmcf = ngx_http_fairgate_cycle_conf(ngx_cycle);
    kp = fmcf->keys.elts;

    for (i = 0; d->type == REDIS_REPLY_STRING && d->len == 64
                && i < fmcf->keys.nelts; i++)
    {
        if (kp[i]->shm_zone
            && ngx_http_fairgate_key_unhex(digest, (u_char *) d->str, 64)
               == NGX_OK)
        {
            ngx_http_fairgate_keycache_drop(kp[i]->shm_zone->data, digest);
        }
    }

    return ngx_http_fairgate_admin_key_json(reply->element[1]);
}


/* Redis is late: the request is answered, the link dropped */

static void
ngx_http_fairgate_admin_late(ngx_event_t *ev)
{
    ngx_http_fairgate_admin_call_t  *c = ev->data;

    ngx_int_t            rc;
    ngx_connection_t    *conn;
    ngx_http_request_t  *req;

    req = c->request;
    c->request = NULL;

    if (req) {
        c->cln->handler = NULL;
        conn = req->connection;
        rc = ngx_http_fairgate_admin_error(req, NGX_HTTP_SERVICE_UNAVAILABLE,
                 NULL, "service_unavailable", "The key store (Redis) did not "
                 "answer in time: please try again later.");
        ngx_http_finalize_request(req, rc);
        ngx_http_run_posted_requests(conn);
    }

    /* every callback runs now, this one's too, which frees c */
    ngx_http_fairgate_redis_cmd_drop();
}


static void
ngx_http_fairgate_admin_cleanup(void *data)
{
    ngx_http_fairgate_admin_call_t  *c = data;

    /* the request ends first: c is freed by its reply, which always
     * comes (with no reply when the link is dropped) */

    c->request = NULL;

    if (c->timer.timer_set) {
        ngx_del_timer(&c->timer);
    }
}


/* o, consumed, as the answer; NULL: out of memory */

static ngx_int_t
ngx_http_fairgate_admin_json(ngx_http_request_t *r, ngx_uint_t status,
    json_t *o)
{
    char         *s;
    size_t        len;
    ngx_buf_t    *b;
    ngx_chain_t   out;

    s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);

    if (s == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    len = ngx_strlen(s);
    b = ngx_create_temp_buf(r->pool, len + 1);

    if (b == NULL) {
        free(s);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = ngx_cpymem(b->last, s, len);
    *b->last++ = '\n';
    free(s);

    ngx_str_set(&r->headers_out.content_type, "application/json");

    out.buf = b;
    out.next = NULL;

    return ngx_http_fairgate_send_body(r, status, &out);
}


static ngx_int_t
ngx_http_fairgate_admin_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *param, const char *code, const char *message)
{
    return ngx_http_fairgate_send_error(r, status, "invalid_request_error",
                                        param, code, message, 0);
}


/*
 * An argument of a command: s as it is (fmt NULL), or fmt with s or the
 * time ("%T") or nothing, formatted into the pool.
 */

static ngx_int_t
ngx_http_fairgate_admin_push(ngx_array_t *argv, const char *fmt,
    ngx_str_t *s)
{
    u_char     *p;
    ngx_str_t  *a;

    a = ngx_array_push(argv);
    if (a == NULL) {
        return NGX_ERROR;
    }

    if (fmt == NULL) {
        *a = *s;
        return NGX_OK;
    }

    if (s == NULL && ngx_strcmp(fmt, "%T") != 0) {
        a->data = (u_char *) fmt;
        a->len = ngx_strlen(fmt);
        return NGX_OK;
    }

    p = ngx_pnalloc(argv->pool, (s ? s->len : 0) + NGX_TIME_T_LEN
                                + ngx_strlen(fmt));
    if (p == NULL) {
        return NGX_ERROR;
    }

    a->data = p;
    a->len = (s ? ngx_sprintf(p, fmt, s) : ngx_sprintf(p, fmt, ngx_time()))
             - p;

    return NGX_OK;
}
