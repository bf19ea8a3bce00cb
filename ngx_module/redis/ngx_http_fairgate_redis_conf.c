
/*
 * fairgate: "fairgate_redis ADDRESS [password=P] [db=N] [prefix=P]
 * [interval=TIME] [timeout=TIME] [id=NAME];", or with
 * "sentinel=HOST:PORT,... master=NAME [sentinel_password=P]" in place of
 * the address, read into the one ngx_http_fairgate_redis_conf_t of the
 * http block.  Addresses are resolved here, at configuration time, so
 * that a worker never waits on DNS; the parameters are a table of a
 * setter each.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_redis.h"
#include "ngx_http_fairgate_param.h"


#define NGX_HTTP_FAIRGATE_REDIS_INTERVAL  1000
#define NGX_HTTP_FAIRGATE_REDIS_TIMEOUT   1000
#define NGX_HTTP_FAIRGATE_REDIS_SENTINELS 16


/*
 * A parameter's setter: value is what follows "NAME=".  NGX_DECLINED: the
 * parameter is invalid; NGX_ERROR: invalid, and said why.
 */
typedef ngx_int_t ngx_http_fairgate_redis_set_fn(ngx_conf_t *cf,
    ngx_str_t *param, ngx_str_t *value, void *field);


typedef struct {
    ngx_str_t                        name;   /* "NAME=" */
    ngx_http_fairgate_redis_set_fn  *set;
    size_t                           offset; /* in the conf */
} ngx_http_fairgate_redis_param_t;


static ngx_int_t ngx_http_fairgate_redis_address(ngx_conf_t *cf,
    ngx_http_fairgate_redis_conf_t *rc, ngx_str_t *address);
static ngx_int_t ngx_http_fairgate_redis_param(ngx_conf_t *cf,
    ngx_http_fairgate_redis_conf_t *rc, ngx_str_t *param);
static char *ngx_http_fairgate_redis_check(ngx_conf_t *cf,
    ngx_http_fairgate_redis_conf_t *rc);
static ngx_int_t ngx_http_fairgate_redis_sentinel(ngx_conf_t *cf,
    ngx_str_t *text, ngx_http_fairgate_redis_addr_t *a);
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_str;
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_password;
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_db;
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_id;
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_time;
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_sentinels;


static ngx_http_fairgate_redis_param_t  ngx_http_fairgate_redis_params[] = {

    { ngx_string("password="), ngx_http_fairgate_redis_set_password,
      offsetof(ngx_http_fairgate_redis_conf_t, password) },

    { ngx_string("db="), ngx_http_fairgate_redis_set_db,
      offsetof(ngx_http_fairgate_redis_conf_t, db) },

    { ngx_string("prefix="), ngx_http_fairgate_redis_set_str,
      offsetof(ngx_http_fairgate_redis_conf_t, prefix) },

    { ngx_string("id="), ngx_http_fairgate_redis_set_id,
      offsetof(ngx_http_fairgate_redis_conf_t, id) },

    { ngx_string("interval="), ngx_http_fairgate_redis_set_time,
      offsetof(ngx_http_fairgate_redis_conf_t, interval) },

    { ngx_string("timeout="), ngx_http_fairgate_redis_set_time,
      offsetof(ngx_http_fairgate_redis_conf_t, timeout) },

    { ngx_string("sentinel="), ngx_http_fairgate_redis_set_sentinels,
      offsetof(ngx_http_fairgate_redis_conf_t, sentinels) },

    /* the sentinels' name of the master: a word, as id= is */
    { ngx_string("master="), ngx_http_fairgate_redis_set_id,
      offsetof(ngx_http_fairgate_redis_conf_t, master) },

    { ngx_string("sentinel_password="), ngx_http_fairgate_redis_set_password,
      offsetof(ngx_http_fairgate_redis_conf_t, sentinel_password) },

    { ngx_null_string, NULL, 0 }
};


char *
ngx_http_fairgate_redis(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_main_conf_t  *fmcf = conf;

    ngx_int_t                        rv;
    ngx_str_t                       *value;
    ngx_uint_t                       i;
    ngx_http_fairgate_redis_conf_t  *rc;

    if (fmcf->redis) {
        return "is duplicate";
    }

    value = cf->args->elts;

    rc = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_redis_conf_t));
    if (rc == NULL) {
        return NGX_CONF_ERROR;
    }

    rc->db = -1;
    rc->interval = NGX_CONF_UNSET_MSEC;
    rc->timeout = NGX_CONF_UNSET_MSEC;
    ngx_str_set(&rc->prefix, "fairgate:");
    rc->id = cf->cycle->hostname;

    /* an address first, or the sentinels that name it */

    i = 1;

    if (ngx_strchr(value[1].data, '=') == NULL) {
        rc->address = value[1];

        if (ngx_http_fairgate_redis_address(cf, rc, &value[1]) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        i = 2;
    }

    for ( /* void */ ; i < cf->args->nelts; i++) {

        rv = ngx_http_fairgate_redis_param(cf, rc, &value[i]);

        if (rv == NGX_DECLINED) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" in "
                               "\"fairgate_redis\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        if (rv != NGX_OK) {
            return NGX_CONF_ERROR;
        }
    }

    if (rc->interval == NGX_CONF_UNSET_MSEC) {
        rc->interval = NGX_HTTP_FAIRGATE_REDIS_INTERVAL;
    }

    if (rc->timeout == NGX_CONF_UNSET_MSEC) {
        rc->timeout = NGX_HTTP_FAIRGATE_REDIS_TIMEOUT;
    }

    if (ngx_http_fairgate_redis_check(cf, rc) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    fmcf->redis = rc;

    return NGX_CONF_OK;
}


/* an address or sentinels, not both; sentinels with the master's name */

static char *
ngx_http_fairgate_redis_check(ngx_conf_t *cf,
    ngx_http_fairgate_redis_conf_t *rc)
{
    const char  *err;

    err = NULL;

    if (rc->address.len && rc->sentinels) {
        err = "takes an address or \"sentinel=\", not both";

    } else if (rc->address.len == 0 && rc->sentinels == NULL) {
        err = "needs an address or \"sentinel=\"";

    } else if (rc->sentinels && rc->master.len == 0) {
        err = "with \"sentinel=\" needs \"master=\"";

    } else if (rc->sentinels == NULL
               && (rc->master.len || rc->sentinel_password.len))
    {
        err = "takes \"master=\" and \"sentinel_password=\" only "
              "with \"sentinel=\"";
    }

    if (err) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"fairgate_redis\" %s",
                           err);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* host:port, resolved to its first address, or unix:PATH */

static ngx_int_t
ngx_http_fairgate_redis_address(ngx_conf_t *cf,
    ngx_http_fairgate_redis_conf_t *rc, ngx_str_t *address)
{
    ngx_url_t  u;

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url = *address;
    u.default_port = 6379;

    if (ngx_parse_url(cf->pool, &u) != NGX_OK || u.naddrs == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid address \"%V\" in \"fairgate_redis\"%s%s",
                           address, u.err ? ": " : "", u.err ? u.err : "");
        return NGX_ERROR;
    }

    if (u.family == AF_UNIX) {
        rc->port = 0;
        rc->host.len = address->len - 5;
        rc->host.data = ngx_pnalloc(cf->pool, rc->host.len + 1);
        if (rc->host.data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(rc->host.data, address->data + 5, rc->host.len);
        rc->host.data[rc->host.len] = '\0';

        return NGX_OK;
    }

    rc->port = u.port;
    rc->host.data = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN + 1);
    if (rc->host.data == NULL) {
        return NGX_ERROR;
    }

    rc->host.len = ngx_sock_ntop(u.addrs[0].sockaddr, u.addrs[0].socklen,
                                 rc->host.data, NGX_SOCKADDR_STRLEN, 0);
    rc->host.data[rc->host.len] = '\0';

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_redis_param(ngx_conf_t *cf,
    ngx_http_fairgate_redis_conf_t *rc, ngx_str_t *param)
{
    ngx_str_t                         value;
    ngx_http_fairgate_redis_param_t  *p;

    for (p = ngx_http_fairgate_redis_params; p->name.len; p++) {

        if (ngx_strncmp(param->data, p->name.data, p->name.len) != 0) {
            continue;
        }

        value.data = param->data + p->name.len;
        value.len = param->len - p->name.len;

        return p->set(cf, param, &value, (u_char *) rc + p->offset);
    }

    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_fairgate_redis_set_str(ngx_conf_t *cf, ngx_str_t *param,
    ngx_str_t *value, void *field)
{
    *(ngx_str_t *) field = *value;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_redis_set_password(ngx_conf_t *cf, ngx_str_t *param,
    ngx_str_t *value, void *field)
{
    if (value->len == 0) {
        return NGX_DECLINED;
    }

    return ngx_http_fairgate_redis_set_str(cf, param, value, field);
}


static ngx_int_t
ngx_http_fairgate_redis_set_db(ngx_conf_t *cf, ngx_str_t *param,
    ngx_str_t *value, void *field)
{
    ngx_int_t  n;

    n = ngx_http_fairgate_param_number(value->data, value->len, 0, 1000000);

    if (n == NGX_ERROR) {
        return NGX_DECLINED;
    }

    *(ngx_int_t *) field = n;

    return NGX_OK;
}


/* a word of the keys' fields: no spaces, controls or colons */

static ngx_int_t
ngx_http_fairgate_redis_set_id(ngx_conf_t *cf, ngx_str_t *param,
    ngx_str_t *value, void *field)
{
    u_char  *p;

    if (value->len == 0 || value->len > 128) {
        return NGX_DECLINED;
    }

    for (p = value->data; p < value->data + value->len; p++) {
        if (*p <= ' ' || *p == ':' || *p >= 0x7f) {
            return NGX_DECLINED;
        }
    }

    return ngx_http_fairgate_redis_set_str(cf, param, value, field);
}


/* HOST:PORT,HOST:PORT,...: the sentinels, tried in turn */

static ngx_int_t
ngx_http_fairgate_redis_set_sentinels(ngx_conf_t *cf, ngx_str_t *param,
    ngx_str_t *value, void *field)
{
    u_char                          *p, *last, *comma;
    ngx_str_t                        text;
    ngx_array_t                     *a;
    ngx_http_fairgate_redis_addr_t  *sa;

    if (*(ngx_array_t **) field) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate \"sentinel=\" in \"fairgate_redis\"");
        return NGX_ERROR;
    }

    a = ngx_array_create(cf->pool, 3, sizeof(ngx_http_fairgate_redis_addr_t));
    if (a == NULL) {
        return NGX_ERROR;
    }

    p = value->data;
    last = p + value->len;

    do {
        comma = ngx_strlchr(p, last, ',');

        text.data = p;
        text.len = (comma ? comma : last) - p;

        if (a->nelts == NGX_HTTP_FAIRGATE_REDIS_SENTINELS) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "more than %d sentinels in \"fairgate_redis\"",
                               NGX_HTTP_FAIRGATE_REDIS_SENTINELS);
            return NGX_ERROR;
        }

        sa = ngx_array_push(a);
        if (sa == NULL
            || ngx_http_fairgate_redis_sentinel(cf, &text, sa) != NGX_OK)
        {
            return NGX_ERROR;
        }

        p = comma + 1;

    } while (comma);

    *(ngx_array_t **) field = a;

    return NGX_OK;
}


/* host:port (26379 by default), resolved to its first address; no socket */

static ngx_int_t
ngx_http_fairgate_redis_sentinel(ngx_conf_t *cf, ngx_str_t *text,
    ngx_http_fairgate_redis_addr_t *a)
{
    ngx_url_t  u;

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url = *text;
    u.default_port = 26379;

    if (text->len == 0
        || ngx_strncasecmp(text->data, (u_char *) "unix:", 5) == 0
        || ngx_parse_url(cf->pool, &u) != NGX_OK || u.naddrs == 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid sentinel address \"%V\" in "
                           "\"fairgate_redis\"%s%s", text,
                           u.err ? ": " : "", u.err ? u.err : "");
        return NGX_ERROR;
    }

    a->text = *text;
    a->port = u.port;
    a->host = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN + 1);
    if (a->host == NULL) {
        return NGX_ERROR;
    }

    a->host[ngx_sock_ntop(u.addrs[0].sockaddr, u.addrs[0].socklen, a->host,
                          NGX_SOCKADDR_STRLEN, 0)] = '\0';

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_redis_set_time(ngx_conf_t *cf, ngx_str_t *param,
    ngx_str_t *value, void *field)
{
    ngx_msec_t  ms;

    ms = ngx_http_fairgate_param_msec(value->data, value->len, 10, 600000);

    if (ms == (ngx_msec_t) NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid time \"%V\" in \"fairgate_redis\", "
                           "expected 10ms to 10m", param);
        return NGX_ERROR;
    }

    *(ngx_msec_t *) field = ms;

    return NGX_OK;
}
