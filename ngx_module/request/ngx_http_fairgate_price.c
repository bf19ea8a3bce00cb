
/*
 * fairgate: prices, and what a request costs at them.
 *
 *     fairgate_price MODEL input=X [cached=Y] output=Z;
 *     fairgate_prices FILE;
 *
 * A price is per million tokens, in the operator's currency unit (kept in
 * billionths of it: core/fg_price.c); cached= prices the input tokens the
 * upstream or the engine found in its prompt cache (the input price when
 * not given); "*" prices the models no other line names.  The file holds
 * the same, one model a line, "#" comments.  A level's prices are one
 * table, a hash by model name; a level without any has its parent's.
 *
 * A request's cost (ctx->cost) is computed from its tokens as they flow:
 * each output token counted updates it (ngx_http_fairgate_charge), and
 * the usage the upstream or the engine reports at the end settles it.
 * The tokens are those the tenant's counters are settled with (the
 * reported usage, checked; else the estimate and the tokens counted), so
 * that costs add up to what the counters say.  It is sent in a response
 * header, x-fairgate-cost, when it is known as the headers go (local
 * mode, not streamed), else in a trailer of that name (HTTP/1.1 chunked,
 * HTTP/2).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_price.h"
#include "ngx_http_fairgate_request_int.h"


/* the most words on a line of a prices file */
#define NGX_HTTP_FAIRGATE_PRICE_WORDS  8


struct ngx_http_fairgate_prices_s {
    ngx_hash_keys_arrays_t      *keys;      /* while read; NULL once built */
    ngx_hash_t                   hash;      /* fg_price_t * by model */
    fg_price_t                  *any;       /* "*"; NULL: none */
    unsigned                     hashed:1;  /* hash has keys */
};


static ngx_http_fairgate_prices_t *ngx_http_fairgate_prices_get(
    ngx_conf_t *cf, ngx_http_fairgate_loc_conf_t *flcf);
static const char *ngx_http_fairgate_price_add(ngx_conf_t *cf,
    ngx_http_fairgate_prices_t *prices, ngx_str_t *w, ngx_uint_t n,
    ngx_str_t *bad);
static const char *ngx_http_fairgate_price_param(ngx_str_t *w,
    fg_price_t *price, ngx_uint_t *seen);
static char *ngx_http_fairgate_prices_read(ngx_conf_t *cf,
    ngx_http_fairgate_prices_t *prices, ngx_str_t *file, u_char *p,
    u_char *last);
static const fg_price_t *ngx_http_fairgate_price_find(
    ngx_http_request_t *r, ngx_str_t *model);
static ngx_int_t ngx_http_fairgate_cost_str(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);


static ngx_str_t  ngx_http_fairgate_cost_name = ngx_string("x-fairgate-cost");


/* fairgate_price MODEL input=X [cached=Y] output=Z; */

char *
ngx_http_fairgate_price(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_str_t                   *value, bad;
    const char                  *err;
    ngx_http_fairgate_prices_t  *prices;

    prices = ngx_http_fairgate_prices_get(cf, conf);
    if (prices == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    err = ngx_http_fairgate_price_add(cf, prices, &value[1],
                                      cf->args->nelts - 1, &bad);
    if (err == NULL) {
        return NGX_CONF_OK;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s \"%V\" in \"%V\"", err,
                       &bad, &cmd->name);

    return NGX_CONF_ERROR;
}


/* fairgate_prices FILE; */

char *
ngx_http_fairgate_prices(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char                        *rv;
    u_char                      *buf;
    off_t                        size;
    ssize_t                      n;
    ngx_fd_t                     fd;
    ngx_str_t                   *value, file;
    ngx_file_info_t              fi;
    ngx_http_fairgate_prices_t  *prices;

    prices = ngx_http_fairgate_prices_get(cf, conf);
    if (prices == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;
    file = value[1];

    if (ngx_conf_full_name(cf->cycle, &file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    fd = ngx_open_file(file.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_open_file_n " \"%V\" failed", &file);
        return NGX_CONF_ERROR;
    }

    rv = NGX_CONF_ERROR;

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_fd_info_n " \"%V\" failed", &file);
        goto done;
    }

    size = ngx_file_size(&fi);

    buf = ngx_pnalloc(cf->temp_pool, (size_t) size + 1);
    if (buf == NULL) {
        goto done;
    }

    n = ngx_read_fd(fd, buf, (size_t) size);

    if (n != (ssize_t) size) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_read_fd_n " \"%V\" failed", &file);
        goto done;
    }

    rv = ngx_http_fairgate_prices_read(cf, prices, &file, buf, buf + size);

done:

    if (ngx_close_file(fd) == NGX_FILE_ERROR) {
        ngx_log_error(NGX_LOG_ALERT, cf->log, ngx_errno,
                      ngx_close_file_n " \"%V\" failed", &file);
    }

    return rv;
}


/*
 * The lines of a prices file: words split at blanks, "#" to the line's
 * end a comment; a line that does not parse is named by its file and
 * line (and nginx adds the directive's).
 */

static char *
ngx_http_fairgate_prices_read(ngx_conf_t *cf,
    ngx_http_fairgate_prices_t *prices, ngx_str_t *file, u_char *p,
    u_char *last)
{
    u_char       *eol;
    ngx_str_t     w[NGX_HTTP_FAIRGATE_PRICE_WORDS + 1], bad;
    ngx_uint_t    n, line;
    const char   *err;

    for (line = 1; p < last; line++, p = eol + 1) {
        eol = ngx_strlchr(p, last, LF);

        if (eol == NULL) {
            eol = last;
        }

        n = 0;

        while (p < eol && n <= NGX_HTTP_FAIRGATE_PRICE_WORDS) {
            while (p < eol && (*p == ' ' || *p == '\t' || *p == CR)) {
                p++;
            }

            if (p == eol || *p == '#') {
                break;
            }

            w[n].data = p;

            while (p < eol && *p != ' ' && *p != '\t' && *p != CR) {
                p++;
            }

            w[n].len = p - w[n].data;
            n++;
        }

        if (n == 0) {
            continue;
        }

        ngx_str_null(&bad);

        if (n < 3 || n > 4) {
            err = "a price is a model and 2 or 3 prices, not";
            bad = w[0];

        } else {
            /* the model's name outlives the file's buffer */
            w[0].data = ngx_pstrdup(cf->pool, &w[0]);
            if (w[0].data == NULL) {
                return NGX_CONF_ERROR;
            }

            err = ngx_http_fairgate_price_add(cf, prices, w, n, &bad);
        }

        if (err) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%s \"%V\" in prices file %V:%ui", err, &bad,
                               file, line);
            return NGX_CONF_ERROR;
        }

        if (eol == last) {
            break;
        }
    }

    return NGX_CONF_OK;
}


/* the table of the level, made at its first price */

static ngx_http_fairgate_prices_t *
ngx_http_fairgate_prices_get(ngx_conf_t *cf,
    ngx_http_fairgate_loc_conf_t *flcf)
{
    ngx_http_fairgate_prices_t  *prices;

    if (flcf->prices) {
        return flcf->prices;
    }

    prices = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_prices_t));
    if (prices == NULL) {
        return NULL;
    }

    prices->keys = ngx_pcalloc(cf->temp_pool,
                               sizeof(ngx_hash_keys_arrays_t));
    if (prices->keys == NULL) {
        return NULL;
    }

    prices->keys->pool = cf->pool;
    prices->keys->temp_pool = cf->temp_pool;

    if (ngx_hash_keys_array_init(prices->keys, NGX_HASH_SMALL) != NGX_OK) {
        return NULL;
    }

    flcf->prices = prices;

    return prices;
}


/*
 * A model's price from its words: the model, then input=, cached=,
 * output=.  NULL, or what is wrong and with which word (*bad).
 */

static const char *
ngx_http_fairgate_price_add(ngx_conf_t *cf,
    ngx_http_fairgate_prices_t *prices, ngx_str_t *w, ngx_uint_t n,
    ngx_str_t *bad)
{
    ngx_int_t     rc;
    ngx_uint_t    i, seen;
    const char   *err;
    fg_price_t   *price;

    *bad = w[0];

    if (w[0].len > NGX_HTTP_FAIRGATE_MODEL_LEN) {
        return "too long a model name (256 bytes at most):";
    }

    price = ngx_pcalloc(cf->pool, sizeof(fg_price_t));
    if (price == NULL) {
        return "no memory for the price of";
    }

    seen = 0;

    for (i = 1; i < n; i++) {
        err = ngx_http_fairgate_price_param(&w[i], price, &seen);

        if (err) {
            *bad = w[i];
            return err;
        }
    }

    if ((seen & 1) == 0) {
        return "no \"input=\" price for";
    }

    if ((seen & 4) == 0) {
        return "no \"output=\" price for";
    }

    if ((seen & 2) == 0) {
        price->cached = price->input;
    }

    if (w[0].len == 1 && w[0].data[0] == '*') {
        if (prices->any) {
            return "a second price for";
        }

        prices->any = price;
        return NULL;
    }

    /* nginx's hashes keep their names in lower case: so are the models */
    rc = ngx_hash_add_key(prices->keys, &w[0], price, 0);

    if (rc == NGX_BUSY) {
        return "a second price for";
    }

    if (rc != NGX_OK) {
        return "no memory for the price of";
    }

    prices->hashed = 1;

    return NULL;
}


/* input=, cached= or output=: a price, each once (seen: 1, 2, 4) */

static const char *
ngx_http_fairgate_price_param(ngx_str_t *w, fg_price_t *price,
    ngx_uint_t *seen)
{
    size_t       skip;
    uint64_t    *field;
    ngx_uint_t   bit;

    if (w->len > 6 && ngx_strncmp(w->data, "input=", 6) == 0) {
        field = &price->input;
        skip = 6;
        bit = 1;

    } else if (w->len > 7 && ngx_strncmp(w->data, "cached=", 7) == 0) {
        field = &price->cached;
        skip = 7;
        bit = 2;

    } else if (w->len > 7 && ngx_strncmp(w->data, "output=", 7) == 0) {
        field = &price->output;
        skip = 7;
        bit = 4;

    } else {
        return "invalid parameter (input=, cached= or output=)";
    }

    if (*seen & bit) {
        return "duplicate parameter";
    }

    *seen |= bit;

    if (fg_price_parse(w->data + skip, w->len - skip, field) != 0) {
        return "invalid price (a number of units a million tokens, "
               "at most 1000000, at most 9 decimals)";
    }

    return NULL;
}


/*
 * A level without prices has its parent's; a table is hashed once, when
 * the first level that uses it is merged.
 */

char *
ngx_http_fairgate_prices_merge(ngx_conf_t *cf,
    ngx_http_fairgate_loc_conf_t *prev, ngx_http_fairgate_loc_conf_t *conf)
{
    ngx_hash_init_t              hash;
    ngx_http_fairgate_prices_t  *prices;

    if (conf->prices == NULL) {
        conf->prices = prev->prices;
    }

    prices = conf->prices;

    if (prices == NULL || prices->keys == NULL) {
        return NGX_CONF_OK;
    }

    if (prices->hashed) {
        hash.hash = &prices->hash;
        hash.key = ngx_hash_key;
        hash.max_size = 65536;
        hash.bucket_size = ngx_align(NGX_HTTP_FAIRGATE_MODEL_LEN
                                     + 4 * sizeof(void *),
                                     ngx_cacheline_size);
        hash.name = "fairgate_prices_hash";
        hash.pool = cf->pool;
        hash.temp_pool = NULL;

        if (ngx_hash_init(&hash, prices->keys->keys.elts,
                          prices->keys->keys.nelts)
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }
    }

    prices->keys = NULL;

    return NGX_CONF_OK;
}


/*
 * The tokens a request is settled with, the tenant's counters
 * (ngx_http_fairgate_release) as its cost: the reported usage, else the
 * estimate of its input and the output counted; of the input, those a
 * cache held (cached may be NULL).
 */

void
ngx_http_fairgate_tokens(ngx_http_fairgate_ctx_t *ctx, uint32_t *in,
    uint32_t *cached, uint32_t *out)
{
    *in = ctx->usage ? ctx->usage_in : ctx->tokens_in;
    *out = ctx->usage ? ctx->usage_out : ctx->tokens_out;

    if (cached) {
        *cached = ctx->cached_set ? ngx_min(ctx->cached, *in) : 0;
    }
}


/*
 * Whether the request was served, and its tokens counted: admitted by a
 * zone, or local mode's without one.  Only such a request costs anything.
 */

ngx_uint_t
ngx_http_fairgate_billed(ngx_http_fairgate_ctx_t *ctx)
{
    return ctx->phase == NGX_HTTP_FAIRGATE_ADMITTED
           || (ctx->local && ctx->api
               && ctx->phase == NGX_HTTP_FAIRGATE_PASSED);
}


/* a model's price, its name's case aside; else "*"'s; NULL: none */

static const fg_price_t *
ngx_http_fairgate_price_find(ngx_http_request_t *r, ngx_str_t *model)
{
    u_char                         low[NGX_HTTP_FAIRGATE_MODEL_LEN];
    ngx_uint_t                     key;
    const fg_price_t              *price;
    ngx_http_fairgate_prices_t    *prices;
    ngx_http_fairgate_loc_conf_t  *flcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);
    prices = flcf->prices;

    if (prices == NULL) {
        return NULL;
    }

    price = NULL;

    if (prices->hashed && model->len <= NGX_HTTP_FAIRGATE_MODEL_LEN) {
        key = ngx_hash_strlow(low, model->data, model->len);
        price = ngx_hash_find(&prices->hash, key, low, model->len);
    }

    return price ? price : prices->any;
}


/*
 * ctx->cost from the request's tokens so far: the reported usage, else
 * the estimate of its input and the output counted.  NGX_DECLINED: no
 * price applies to its model.
 */

ngx_int_t
ngx_http_fairgate_price_update(ngx_http_fairgate_ctx_t *ctx)
{
    uint32_t  in, out, cached;

    if (!ctx->price_found) {
        ctx->price_found = 1;
        ctx->price = ngx_http_fairgate_price_find(ctx->request, &ctx->model);
    }

    if (ctx->price == NULL) {
        return NGX_DECLINED;
    }

    if (!ngx_http_fairgate_billed(ctx)) {
        ctx->cost = 0;
        return NGX_OK;
    }

    ngx_http_fairgate_tokens(ctx, &in, &cached, &out);

    ctx->cost = fg_price_cost(ctx->price, in, cached, out);

    return NGX_OK;
}


/* output tokens counted: the first one's time, and the cost so far */

void
ngx_http_fairgate_price_tokens(ngx_http_fairgate_ctx_t *ctx, uint32_t n)
{
    ngx_time_t  *tp;

    if (n && ctx->first_token == 0) {
        tp = ngx_timeofday();
        ctx->first_token = (uint64_t) tp->sec * 1000 + tp->msec;
    }

    (void) ngx_http_fairgate_price_update(ctx);
}


/* ctx->cost as a decimal, in the request's pool */

static ngx_int_t
ngx_http_fairgate_cost_str(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    s->data = ngx_pnalloc(r->pool, FG_PRICE_LEN);
    if (s->data == NULL) {
        return NGX_ERROR;
    }

    s->len = fg_price_format((char *) s->data, ctx->cost);

    return NGX_OK;
}


/*
 * The response's headers: the cost in a header when it is known now
 * (local mode reports a whole response's usage before its body), else a
 * trailer is asked for, which makes nginx chunk an HTTP/1.1 response.
 */

ngx_int_t
ngx_http_fairgate_price_header(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    ngx_str_t  s;

    if (ngx_http_fairgate_price_update(ctx) != NGX_OK
        || !ngx_http_fairgate_billed(ctx))
    {
        return NGX_OK;
    }

    /* a whole answer's first token comes with its headers */
    if (!ctx->stream) {
        ngx_http_fairgate_price_tokens(ctx, 1);
    }

    if (ctx->local && ctx->usage) {
        if (ngx_http_fairgate_cost_str(r, ctx, &s) != NGX_OK) {
            return NGX_ERROR;
        }

        return ngx_http_fairgate_add_header(r,
                                      (char *) ngx_http_fairgate_cost_name.data,
                                      s.data, s.len);
    }

    if (r->http_version >= NGX_HTTP_VERSION_11) {
        r->expect_trailers = 1;
        ctx->cost_trailer = 1;
    }

    return NGX_OK;
}


/*
 * The response's last buffer: the cost in its trailer, settled (the
 * filter checked the upstream's usage first; local mode's engine said)
 */

ngx_int_t
ngx_http_fairgate_price_trailer(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_chain_t *in)
{
    ngx_str_t         s;
    ngx_chain_t      *cl;
    ngx_table_elt_t  *h;

    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_buf) {
            break;
        }
    }

    if (cl == NULL) {
        return NGX_OK;
    }

    ctx->cost_trailer = 0;

    if (ngx_http_fairgate_price_update(ctx) != NGX_OK) {
        return NGX_OK;
    }

    if (ngx_http_fairgate_cost_str(r, ctx, &s) != NGX_OK) {
        return NGX_ERROR;
    }

    h = ngx_list_push(&r->headers_out.trailers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key = ngx_http_fairgate_cost_name;
    h->lowcase_key = ngx_http_fairgate_cost_name.data;
    h->value = s;

    return NGX_OK;
}
