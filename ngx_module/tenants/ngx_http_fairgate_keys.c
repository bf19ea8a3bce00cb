
/*
 * fairgate: "fairgate_keys FILE;", the API keys file.
 *
 * One key a line, stored as the SHA-256 of the key in hex, never the key,
 * then the user, the app ("-": none), the weight and optional limits and
 * priority (FairServe's factor E, which multiplies the user's charges
 * under policy wsc; 1 by default):
 *
 *     9f86d0...0a08 alice chat 2 rpm=60 tpm=100000 priority=0.5
 *
 * The file is read with the configuration (nginx -t, start, reload); an
 * error names the file and line.  A request's key is hashed and looked up
 * in an open-addressing table by the digest's first bytes; the digests are
 * compared with CRYPTO_memcmp(), whose time does not depend on where they
 * differ.  A worker remembers the keys it found, so that a client's next
 * requests cost a lookup instead of a SHA-256 (about a tenth of the
 * gateway's work on a request); the cached key is compared with
 * CRYPTO_memcmp() too.  build/fairgate-keyhash makes a key and its line.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "ngx_http_fairgate_tenants.h"
#include "fg_keys.h"


#if (FG_KEYS_NAME_LEN != NGX_HTTP_FAIRGATE_NAME_LEN)
#error "fg_keys.h's FG_KEYS_NAME_LEN is not NGX_HTTP_FAIRGATE_NAME_LEN"
#endif


#define NGX_HTTP_FAIRGATE_KEYS_MAX_SIZE  (64 * 1024 * 1024)


/* what the parser's callback keeps */
typedef struct {
    ngx_conf_t                *cf;
    ngx_http_fairgate_keys_t  *keys;
    ngx_uint_t                *lines;
} ngx_http_fairgate_keys_ctx_t;


static ngx_http_fairgate_keys_t *ngx_http_fairgate_keys_load(ngx_conf_t *cf,
    ngx_str_t *file);
static int ngx_http_fairgate_keys_entry(void *data,
    const fg_keys_entry_t *e);
static ngx_int_t ngx_http_fairgate_keys_check(ngx_conf_t *cf,
    ngx_http_fairgate_keys_t *keys, ngx_uint_t *lines);
static ngx_int_t ngx_http_fairgate_keys_table(ngx_conf_t *cf,
    ngx_http_fairgate_keys_t *keys);
static ngx_uint_t ngx_http_fairgate_keys_slot(u_char *digest,
    ngx_uint_t mask);


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


static ngx_http_fairgate_keys_t *
ngx_http_fairgate_keys_load(ngx_conf_t *cf, ngx_str_t *file)
{
    u_char                        *buf;
    off_t                          size;
    ssize_t                        n;
    ngx_fd_t                       fd;
    ngx_uint_t                    *lines;
    fg_keys_error_t                err;
    ngx_file_info_t                fi;
    ngx_http_fairgate_keys_t      *keys;
    ngx_http_fairgate_keys_ctx_t   ctx;

    fd = ngx_open_file(file->data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_open_file_n " \"%V\" failed", file);
        return NULL;
    }

    buf = NULL;
    keys = NULL;

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_fd_info_n " \"%V\" failed", file);
        goto done;
    }

    size = ngx_file_size(&fi);

    if (size > NGX_HTTP_FAIRGATE_KEYS_MAX_SIZE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "keys file \"%V\" is too large: %O bytes",
                           file, size);
        goto done;
    }

    buf = ngx_pnalloc(cf->temp_pool, (size_t) size + 1);
    if (buf == NULL) {
        goto done;
    }

    n = ngx_read_fd(fd, buf, (size_t) size);

    if (n != (ssize_t) size) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_read_fd_n " \"%V\" failed", file);
        goto done;
    }

    keys = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_keys_t));
    if (keys == NULL) {
        goto done;
    }

    keys->file = *file;

    if (ngx_array_init(&keys->keys, cf->pool, 16,
                       sizeof(ngx_http_fairgate_key_t))
        != NGX_OK)
    {
        keys = NULL;
        goto done;
    }

    /* the line of each key, for the checks across lines */

    lines = ngx_alloc(sizeof(ngx_uint_t) * ((size_t) size / 66 + 1),
                      cf->log);
    if (lines == NULL) {
        keys = NULL;
        goto done;
    }

    ctx.cf = cf;
    ctx.keys = keys;
    ctx.lines = lines;

    if (fg_keys_parse((char *) buf, (size_t) size,
                      ngx_http_fairgate_keys_entry, &ctx, &err)
        != 0)
    {
        if (err.line) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%s in keys file %V:%ul%s", err.what,
                               &keys->file, err.line, err.hint);
        }

        ngx_free(lines);
        keys = NULL;
        goto done;
    }

    if (ngx_http_fairgate_keys_check(cf, keys, lines) != NGX_OK
        || ngx_http_fairgate_keys_table(cf, keys) != NGX_OK)
    {
        keys = NULL;
    }

    ngx_free(lines);

done:

    if (ngx_close_file(fd) == NGX_FILE_ERROR) {
        ngx_log_error(NGX_LOG_ALERT, cf->log, ngx_errno,
                      ngx_close_file_n " \"%V\" failed", file);
    }

    return keys;
}


/* an entry of the file kept: its names copied into the pool */

static int
ngx_http_fairgate_keys_entry(void *data, const fg_keys_entry_t *e)
{
    ngx_http_fairgate_keys_ctx_t  *ctx = data;

    ngx_http_fairgate_key_t  *key;

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

    ctx->lines[ctx->keys->keys.nelts - 1] = e->line;

    return 0;
}


/*
 * A user's weight and limits belong to the user, whichever of its keys it
 * sends: its keys must agree on them.
 */

static ngx_int_t
ngx_http_fairgate_keys_check(ngx_conf_t *cf, ngx_http_fairgate_keys_t *keys,
    ngx_uint_t *lines)
{
    ngx_uint_t                i, j;
    ngx_http_fairgate_key_t  *key;

    key = keys->keys.elts;

    if (keys->keys.nelts == 0) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "keys file \"%V\" has no keys: "
                           "every request will get 401", &keys->file);
        return NGX_OK;
    }

    /* quadratic, once at configuration; a hash would pay off from ~10^4 */

    for (i = 1; i < keys->keys.nelts; i++) {
        for (j = 0; j < i; j++) {

            if (ngx_memcmp(key[i].digest, key[j].digest, 32) == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "duplicate key in keys file %V:%ui, "
                                   "first in line %ui",
                                   &keys->file, lines[i], lines[j]);
                return NGX_ERROR;
            }

            if (key[i].user.len != key[j].user.len
                || ngx_strncmp(key[i].user.data, key[j].user.data,
                               key[i].user.len)
                   != 0)
            {
                continue;
            }

            if (key[i].weight != key[j].weight
                || key[i].priority != key[j].priority
                || key[i].limit.rpm != key[j].limit.rpm
                || key[i].limit.tpm != key[j].limit.tpm)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "user \"%V\" has another weight, "
                                   "priority or limits in keys file %V:%ui than in "
                                   "line %ui", &key[i].user, &keys->file,
                                   lines[i], lines[j]);
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_keys_table(ngx_conf_t *cf, ngx_http_fairgate_keys_t *keys)
{
    ngx_uint_t                i, size, slot;
    ngx_http_fairgate_key_t  *key;

    /* at most half full: short probe sequences */

    for (size = 4; size < 2 * keys->keys.nelts; size <<= 1) { /* void */ }

    keys->table = ngx_pcalloc(cf->pool,
                              size * sizeof(ngx_http_fairgate_key_t *));
    if (keys->table == NULL) {
        return NGX_ERROR;
    }

    keys->mask = size - 1;
    key = keys->keys.elts;

    for (i = 0; i < keys->keys.nelts; i++) {
        slot = ngx_http_fairgate_keys_slot(key[i].digest, keys->mask);

        while (keys->table[slot]) {
            slot = (slot + 1) & keys->mask;
        }

        keys->table[slot] = &key[i];
    }

    return NGX_OK;
}


static ngx_uint_t
ngx_http_fairgate_keys_slot(u_char *digest, ngx_uint_t mask)
{
    return ((ngx_uint_t) digest[0] << 24 | (ngx_uint_t) digest[1] << 16
            | (ngx_uint_t) digest[2] << 8 | digest[3]) & mask;
}


/*
 * The digest's algorithm and context are fetched once a process: OpenSSL 3
 * looks the algorithm up by name on every EVP_Digest() otherwise, which
 * costs more than the hashing of a key.
 */

static EVP_MD      *ngx_http_fairgate_sha256;
static EVP_MD_CTX  *ngx_http_fairgate_md_ctx;


ngx_http_fairgate_key_t *
ngx_http_fairgate_key_find(ngx_http_fairgate_keys_t *keys, ngx_str_t *key)
{
    u_char                          md[32];
    ngx_uint_t                      h, slot;
    ngx_http_fairgate_key_t        *k;
    ngx_http_fairgate_key_cache_t  *c;

    if (keys->table == NULL) {
        return NULL;
    }

    if (keys->cache == NULL) {
        keys->cache = ngx_calloc(NGX_HTTP_FAIRGATE_KEY_CACHE
                                 * sizeof(ngx_http_fairgate_key_cache_t),
                                 ngx_cycle->log);
    }

    c = NULL;

    if (keys->cache && key->len <= NGX_HTTP_FAIRGATE_KEY_CACHED) {
        h = ngx_murmur_hash2(key->data, key->len)
            & (NGX_HTTP_FAIRGATE_KEY_CACHE - 1);
        c = &keys->cache[h];

        if (c->key && c->len == key->len
            && CRYPTO_memcmp(c->data, key->data, key->len) == 0)
        {
            return c->key;
        }
    }

    if (ngx_http_fairgate_key_digest(key, md) != NGX_OK) {
        return NULL;
    }

    slot = ngx_http_fairgate_keys_slot(md, keys->mask);

    for (k = keys->table[slot]; k; k = keys->table[slot]) {

        if (CRYPTO_memcmp(k->digest, md, 32) == 0) {
            if (c) {
                c->key = k;
                c->len = key->len;
                ngx_memcpy(c->data, key->data, key->len);
            }

            return k;
        }

        slot = (slot + 1) & keys->mask;
    }

    return NULL;
}


ngx_int_t
ngx_http_fairgate_key_digest(ngx_str_t *key, u_char *md)
{
    u_char        out[EVP_MAX_MD_SIZE];
    unsigned int  len;

    if (ngx_http_fairgate_md_ctx == NULL) {
        ngx_http_fairgate_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
        ngx_http_fairgate_md_ctx = EVP_MD_CTX_new();

        if (ngx_http_fairgate_sha256 == NULL
            || ngx_http_fairgate_md_ctx == NULL)
        {
            EVP_MD_free(ngx_http_fairgate_sha256);
            EVP_MD_CTX_free(ngx_http_fairgate_md_ctx);
            ngx_http_fairgate_sha256 = NULL;
            ngx_http_fairgate_md_ctx = NULL;
            return NGX_ERROR;
        }
    }

    if (EVP_DigestInit_ex2(ngx_http_fairgate_md_ctx, ngx_http_fairgate_sha256,
                           NULL) != 1
        || EVP_DigestUpdate(ngx_http_fairgate_md_ctx, key->data, key->len)
           != 1
        || EVP_DigestFinal_ex(ngx_http_fairgate_md_ctx, out, &len) != 1
        || len != 32)
    {
        return NGX_ERROR;
    }

    ngx_memcpy(md, out, 32);

    return NGX_OK;
}

