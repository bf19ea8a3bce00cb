
/*
 * fairgate: "fairgate_keys FILE;", the API keys file.
 *
 * One key a line, stored as the SHA-256 of the key in hex, never the key,
 * then the user, the app ("-": none), the weight and optional limits and
 * priority (FairServe's factor E, which multiplies the user's charges
 * under policy wsc; 1 by default):
 *
 *     9f86d0...0a08 alice chat 2 rpm=60 tpm=100000 priority=0.5
 *     5e8848...42d8 bob - 1 quota=day:requests=1000 budget=month:50
 *
 * A key's quota= and budget= are the admin API's "quota" and "budget"
 * said as text (core/fg_quota_text.c): the same rules, enforced alike
 * (ctx->key_rules); they are kept aside, by the key's index, for the few
 * keys that have them.
 *
 * The file is read with the configuration (nginx -t, start, reload), in
 * blocks, and every check across its lines is linear, so that a million
 * keys load in a second or two; an error names the file and line.  A
 * request's key is hashed and looked up in an open-addressing table by the
 * digest (openai/fg_keys_table.c); the digests are compared with
 * CRYPTO_memcmp(), whose time does not depend on where they differ.  A
 * worker remembers the keys it found, so that a client's next requests
 * cost a lookup instead of a SHA-256; the cached key is compared with
 * CRYPTO_memcmp() too.  build/fairgate-keyhash makes a key and its line;
 * docs/scale.md has the figures at a million keys.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_tenants.h"
#include "fg_keys.h"
#include "fg_keys_table.h"


#if (FG_KEYS_NAME_LEN != NGX_HTTP_FAIRGATE_NAME_LEN)
#error "fg_keys.h's FG_KEYS_NAME_LEN is not NGX_HTTP_FAIRGATE_NAME_LEN"
#endif


/* a sanity bound: 1 GB is some 12 million keys */
#define NGX_HTTP_FAIRGATE_KEYS_MAX_SIZE  ((off_t) 1024 * 1024 * 1024)

/* the file is read in blocks of this size, whole lines parsed at a time */
#define NGX_HTTP_FAIRGATE_KEYS_BLOCK     (1024 * 1024)


/* what the parser's callback keeps */
typedef struct {
    ngx_conf_t                *cf;
    ngx_http_fairgate_keys_t  *keys;
    ngx_uint_t                *lines;
    ngx_uint_t                 nlines;   /* room in lines */
    ngx_uint_t                 base;     /* lines of the blocks before */
} ngx_http_fairgate_keys_ctx_t;


static ngx_http_fairgate_keys_t *ngx_http_fairgate_keys_load(ngx_conf_t *cf,
    ngx_str_t *name);
static ngx_int_t ngx_http_fairgate_keys_parse(
    ngx_http_fairgate_keys_ctx_t *ctx, ngx_file_t *file, u_char *buf);
static ngx_int_t ngx_http_fairgate_keys_block(
    ngx_http_fairgate_keys_ctx_t *ctx, u_char *buf, size_t len);
static ngx_int_t ngx_http_fairgate_keys_count(ngx_file_t *file, u_char *buf,
    ngx_uint_t *lines);
static int ngx_http_fairgate_keys_entry(void *data,
    const fg_keys_entry_t *e);
static int ngx_http_fairgate_keys_quota(ngx_http_fairgate_keys_ctx_t *ctx,
    const fg_keys_entry_t *e);
static ngx_int_t ngx_http_fairgate_keys_check(ngx_conf_t *cf,
    ngx_http_fairgate_keys_t *keys, ngx_uint_t *lines);
static ngx_int_t ngx_http_fairgate_keys_table(ngx_conf_t *cf,
    ngx_http_fairgate_keys_t *keys, ngx_uint_t *lines);


char *
ngx_http_fairgate_keys(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    ngx_str_t                       *value, file;
    ngx_uint_t                       i;
    ngx_http_fairgate_keys_t       **kp, *keys;
    ngx_http_fairgate_main_conf_t   *fmcf;

    if (flcf->keys != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    if (flcf->user) {
        return "cannot be used with \"fairgate_identity\" in the same block";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0 && cf->args->nelts == 2) {
        flcf->keys = NULL;
        return NGX_CONF_OK;
    }

    if (ngx_strcmp(value[1].data, "redis") == 0) {
        return ngx_http_fairgate_keys_redis(cf, flcf, value,
                                            cf->args->nelts);
    }

    if (cf->args->nelts != 2) {
        return "takes a file, or \"redis\" and its cache";
    }

    file = value[1];

    if (ngx_conf_full_name(cf->cycle, &file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /* locations that name the same file share its table */

    fmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_fairgate_module);

    kp = fmcf->keys.elts;

    for (i = 0; i < fmcf->keys.nelts; i++) {
        if (kp[i]->file.len == file.len
            && ngx_strncmp(kp[i]->file.data, file.data, file.len) == 0)
        {
            flcf->keys = kp[i];
            return NGX_CONF_OK;
        }
    }

    keys = ngx_http_fairgate_keys_load(cf, &file);
    if (keys == NULL) {
        return NGX_CONF_ERROR;
    }

    kp = ngx_array_push(&fmcf->keys);
    if (kp == NULL) {
        return NGX_CONF_ERROR;
    }

    *kp = keys;
    flcf->keys = keys;

    return NGX_CONF_OK;
}


/*
 * The file is read twice in blocks: its lines counted, so that the keys'
 * array is made once at its size (grown in the pool, it would leave each
 * smaller copy behind), then parsed; memory is the keys', not the file's.
 */

static ngx_http_fairgate_keys_t *
ngx_http_fairgate_keys_load(ngx_conf_t *cf, ngx_str_t *name)
{
    u_char                        *buf;
    ngx_uint_t                     n, *lines;
    ngx_file_t                     file;
    ngx_http_fairgate_keys_t      *keys;
    ngx_http_fairgate_keys_ctx_t   ctx;

    ngx_memzero(&file, sizeof(ngx_file_t));
    file.name = *name;
    file.log = cf->log;

    file.fd = ngx_open_file(name->data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (file.fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_open_file_n " \"%V\" failed", name);
        return NULL;
    }

    keys = NULL;
    lines = NULL;

    buf = ngx_alloc(NGX_HTTP_FAIRGATE_KEYS_BLOCK + 1, cf->log);
    if (buf == NULL) {
        goto done;
    }

    if (ngx_http_fairgate_keys_count(&file, buf, &n) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "keys file \"%V\" is unreadable or larger "
                           "than %O bytes", name,
                           NGX_HTTP_FAIRGATE_KEYS_MAX_SIZE);
        goto done;
    }

    keys = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_keys_t));
    lines = ngx_alloc(sizeof(ngx_uint_t) * n, cf->log);

    if (keys == NULL || lines == NULL
        || ngx_array_init(&keys->keys, cf->pool, n,
                          sizeof(ngx_http_fairgate_key_t))
           != NGX_OK)
    {
        keys = NULL;
        goto done;
    }

    keys->file = *name;

    ctx.cf = cf;
    ctx.keys = keys;
    ctx.lines = lines;
    ctx.nlines = n;
    ctx.base = 0;

    if (ngx_http_fairgate_keys_parse(&ctx, &file, buf) != NGX_OK
        || ngx_http_fairgate_keys_table(cf, keys, lines) != NGX_OK
        || ngx_http_fairgate_keys_check(cf, keys, lines) != NGX_OK)
    {
        keys = NULL;
    }

done:

    if (lines) {
        ngx_free(lines);
    }

    if (buf) {
        ngx_free(buf);
    }

    if (ngx_close_file(file.fd) == NGX_FILE_ERROR) {
        ngx_log_error(NGX_LOG_ALERT, cf->log, ngx_errno,
                      ngx_close_file_n " \"%V\" failed", name);
    }

    return keys;
}


/* lines in the file (its LFs, and one more), or NGX_ERROR */

static ngx_int_t
ngx_http_fairgate_keys_count(ngx_file_t *file, u_char *buf, ngx_uint_t *lines)
{
    off_t    offset;
    u_char  *p, *last;
    ssize_t  n;

    *lines = 1;

    for (offset = 0; /* void */ ; offset += n) {
        n = ngx_read_file(file, buf, NGX_HTTP_FAIRGATE_KEYS_BLOCK, offset);

        if (n == NGX_ERROR
            || offset + n > NGX_HTTP_FAIRGATE_KEYS_MAX_SIZE)
        {
            return NGX_ERROR;
        }

        if (n == 0) {
            return NGX_OK;
        }

        last = buf + n;

        /* memchr() reads words at a time, ngx_strlchr() bytes */

        for (p = memchr(buf, LF, n); p; p = memchr(p + 1, LF, last - p - 1))
        {
            (*lines)++;
        }
    }
}


/*
 * The blocks' whole lines parsed, the rest of a block carried to the next;
 * the last line may have no LF.  A line must fit a block: the longest
 * valid one is a few hundred bytes.
 */

static ngx_int_t
ngx_http_fairgate_keys_parse(ngx_http_fairgate_keys_ctx_t *ctx,
    ngx_file_t *file, u_char *buf)
{
    off_t    offset;
    size_t   have, len;
    ssize_t  n;

    have = 0;

    for (offset = 0; /* void */ ; offset += n) {
        n = ngx_read_file(file, buf + have,
                          NGX_HTTP_FAIRGATE_KEYS_BLOCK - have, offset);

        if (n == NGX_ERROR) {
            return NGX_ERROR;
        }

        have += n;

        if (n == 0) {
            return have ? ngx_http_fairgate_keys_block(ctx, buf, have)
                        : NGX_OK;
        }

        for (len = have; len > 0 && buf[len - 1] != LF; len--) {
            /* void */
        }

        if (len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, ctx->cf, 0,
                               "too long a line in keys file %V:%ui",
                               &ctx->keys->file, ctx->base + 1);
            return NGX_ERROR;
        }

        /* the last LF ends the parser's buffer */

        if (ngx_http_fairgate_keys_block(ctx, buf, len - 1) != NGX_OK) {
            return NGX_ERROR;
        }

        ngx_memmove(buf, buf + len, have - len);
        have -= len;
    }
}


/* a block of whole lines parsed, its entries kept */

static ngx_int_t
ngx_http_fairgate_keys_block(ngx_http_fairgate_keys_ctx_t *ctx, u_char *buf,
    size_t len)
{
    u_char           *p, *last;
    ngx_uint_t        lines;
    fg_keys_error_t   err;

    lines = 1;
    last = buf + len;

    for (p = memchr(buf, LF, len); p; p = memchr(p + 1, LF, last - p - 1)) {
        lines++;
    }

    if (fg_keys_parse((char *) buf, len, ngx_http_fairgate_keys_entry, ctx,
                      &err)
        != 0)
    {
        if (err.line) {
            ngx_conf_log_error(NGX_LOG_EMERG, ctx->cf, 0,
                               "%s in keys file %V:%ul%s", err.what,
                               &ctx->keys->file, ctx->base + err.line,
                               err.hint);
        }

        return NGX_ERROR;
    }

    ctx->base += lines;

    return NGX_OK;
}


/* an entry of the file kept: its names copied into the pool */

static int
ngx_http_fairgate_keys_entry(void *data, const fg_keys_entry_t *e)
{
    ngx_http_fairgate_keys_ctx_t  *ctx = data;

    ngx_http_fairgate_key_t  *key;

    /* the file grew since its lines were counted */

    if (ctx->keys->keys.nelts == ctx->nlines) {
        ngx_conf_log_error(NGX_LOG_EMERG, ctx->cf, 0,
                           "keys file \"%V\" changed while it was read",
                           &ctx->keys->file);
        return -1;
    }

    key = ngx_array_push(&ctx->keys->keys);
    if (key == NULL) {
        return -1;
    }

    ngx_memzero(key, sizeof(ngx_http_fairgate_key_t));

    ngx_memcpy(key->digest, e->digest, 32);
    ngx_hex_dump(key->id, key->digest, NGX_HTTP_FAIRGATE_KEY_ID_LEN / 2);
    key->weight = e->weight;
    key->priority = e->priority;
    key->limit.rpm = (ngx_uint_t) e->rpm;
    key->limit.tpm = (ngx_uint_t) e->tpm;

    key->user.len = e->user_len;
    key->user.data = ngx_pnalloc(ctx->cf->pool, e->user_len);
    if (key->user.data == NULL) {
        return -1;
    }

    ngx_memcpy(key->user.data, e->user, e->user_len);

    if (e->app_len) {
        key->app.len = e->app_len;
        key->app.data = ngx_pnalloc(ctx->cf->pool, e->app_len);
        if (key->app.data == NULL) {
            return -1;
        }

        ngx_memcpy(key->app.data, e->app, e->app_len);
    }

    if (e->models_len) {
        key->models.len = e->models_len;
        key->models.data = ngx_pnalloc(ctx->cf->pool, e->models_len);
        if (key->models.data == NULL) {
            return -1;
        }

        ngx_memcpy(key->models.data, e->models, e->models_len);
    }

    ctx->lines[ctx->keys->keys.nelts - 1] = ctx->base + e->line;

    if (e->quota || e->budget) {
        return ngx_http_fairgate_keys_quota(ctx, e);
    }

    return 0;
}


/* the last key's quota= and budget= read, its rules kept aside */

static int
ngx_http_fairgate_keys_quota(ngx_http_fairgate_keys_ctx_t *ctx,
    const fg_keys_entry_t *e)
{
    int                             rc;
    char                            field[FG_QUOTA_FIELD_LEN];
    const char                     *expected, *what;
    fg_quota_set_t                  set;
    ngx_http_fairgate_key_rules_t  *kr;

    ngx_memzero(&set, sizeof(fg_quota_set_t));
    what = "quota";
    rc = 0;

    if (e->quota) {
        rc = fg_quota_text(&set, e->quota, e->quota_len, 0, field,
                           &expected);
    }

    if (rc == 0 && e->budget) {
        what = "budget";
        rc = fg_quota_text(&set, e->budget, e->budget_len, 1, field,
                           &expected);
    }

    if (rc != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, ctx->cf, 0,
                           "invalid %s in keys file %V:%ul, %s: expected %s",
                           what, &ctx->keys->file, ctx->base + e->line,
                           field, expected);
        return -1;
    }

    if (ctx->keys->rules.elts == NULL
        && ngx_array_init(&ctx->keys->rules, ctx->cf->pool, 4,
                          sizeof(ngx_http_fairgate_key_rules_t))
           != NGX_OK)
    {
        return -1;
    }

    kr = ngx_array_push(&ctx->keys->rules);
    if (kr == NULL) {
        return -1;
    }

    kr->index = ctx->keys->keys.nelts - 1;
    kr->nrules = set.n;
    kr->rules = ngx_pnalloc(ctx->cf->pool, set.n * sizeof(fg_quota_rule_t));
    if (kr->rules == NULL) {
        return -1;
    }

    ngx_memcpy(kr->rules, set.rule, set.n * sizeof(fg_quota_rule_t));

    return 0;
}


/*
 * A user's weight and limits belong to the user, whichever of its keys it
 * sends: its keys must agree on them.  Each key is held to its user's
 * first, found by a hash of the name: linear in the keys.
 */

static ngx_int_t
ngx_http_fairgate_keys_check(ngx_conf_t *cf, ngx_http_fairgate_keys_t *keys,
    ngx_uint_t *lines)
{
    size_t                    size;
    uint32_t                 *users, j;
    ngx_uint_t                i, slot;
    ngx_http_fairgate_key_t  *key, *first;

    key = keys->keys.elts;

    if (keys->keys.nelts == 0) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "keys file \"%V\" has no keys: "
                           "every request will get 401", &keys->file);
        return NGX_OK;
    }

    /* each user's first key + 1, open addressing, at most half full */

    size = fg_keys_table_slots(keys->keys.nelts);

    users = ngx_calloc(size * sizeof(uint32_t), cf->log);
    if (users == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < keys->keys.nelts; i++) {
        slot = ngx_murmur_hash2(key[i].user.data, key[i].user.len)
               & (size - 1);

        for (j = users[slot]; j != 0; j = users[slot]) {
            first = &key[j - 1];

            if (first->user.len == key[i].user.len
                && ngx_strncmp(first->user.data, key[i].user.data,
                               key[i].user.len)
                   == 0)
            {
                break;
            }

            slot = (slot + 1) & (size - 1);
        }

        if (j == 0) {
            users[slot] = (uint32_t) (i + 1);
            continue;
        }

        if (key[i].weight != first->weight
            || key[i].priority != first->priority
            || key[i].limit.rpm != first->limit.rpm
            || key[i].limit.tpm != first->limit.tpm)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "user \"%V\" has another weight, "
                               "priority or limits in keys file %V:%ui than in "
                               "line %ui", &key[i].user, &keys->file,
                               lines[i], lines[j - 1]);
            ngx_free(users);
            return NGX_ERROR;
        }
    }

    ngx_free(users);

    return NGX_OK;
}


/* the table by digest, in O(n): a key listed twice is found on the way */

static ngx_int_t
ngx_http_fairgate_keys_table(ngx_conf_t *cf, ngx_http_fairgate_keys_t *keys,
    ngx_uint_t *lines)
{
    size_t     dup, first;
    uint32_t  *slots;

    if (keys->keys.nelts > FG_KEYS_TABLE_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "too many keys in keys file %V", &keys->file);
        return NGX_ERROR;
    }

    slots = ngx_pcalloc(cf->pool, fg_keys_table_slots(keys->keys.nelts)
                                  * sizeof(uint32_t));
    if (slots == NULL) {
        return NGX_ERROR;
    }

    if (fg_keys_table_build(&keys->table, slots, keys->keys.elts,
                            keys->keys.nelts,
                            sizeof(ngx_http_fairgate_key_t), &dup, &first)
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate key in keys file %V:%ui, "
                           "first in line %ui",
                           &keys->file, lines[dup], lines[first]);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A worker makes its cache at its first request, as many entries as the
 * file has keys up to FG_KEYS_CACHE_MAX: a key found there costs no
 * SHA-256 (about a tenth of the gateway's work on a request).
 */

ngx_http_fairgate_key_t *
ngx_http_fairgate_key_find(ngx_http_fairgate_keys_t *keys, ngx_str_t *key)
{
    int64_t                   i;
    ngx_http_fairgate_key_t  *k;

    if (!keys->cache_tried) {
        keys->cache_tried = 1;

        if (fg_keys_cache_init(&keys->cache, keys->keys.nelts) != 0) {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "no memory for the cache of keys file \"%V\": "
                          "each request's key is hashed", &keys->file);
        }
    }

    i = fg_keys_lookup(&keys->table, &keys->cache, key->data, key->len);

    if (i < 0) {
        return NULL;
    }

    k = keys->keys.elts;

    return &k[i];
}


/* the keys with rules are in the file's order: a binary search by index */

void
ngx_http_fairgate_key_rules(ngx_http_fairgate_keys_t *keys,
    ngx_http_fairgate_key_t *k, fg_quota_rule_t **rules, ngx_uint_t *n)
{
    ngx_uint_t                      lo, hi, mid, index;
    ngx_http_fairgate_key_rules_t  *kr;

    *rules = NULL;
    *n = 0;

    kr = keys->rules.elts;
    index = k - (ngx_http_fairgate_key_t *) keys->keys.elts;

    for (lo = 0, hi = keys->rules.nelts; lo < hi; /* void */ ) {
        mid = lo + (hi - lo) / 2;

        if (kr[mid].index == index) {
            *rules = kr[mid].rules;
            *n = kr[mid].nrules;
            return;
        }

        if (kr[mid].index < index) {
            lo = mid + 1;

        } else {
            hi = mid;
        }
    }
}


ngx_int_t
ngx_http_fairgate_key_digest(ngx_str_t *key, u_char *md)
{
    return fg_keys_sha256(key->data, key->len, md) == 0 ? NGX_OK : NGX_ERROR;
}

