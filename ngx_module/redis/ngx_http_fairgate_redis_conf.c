
/*
 * fairgate: "fairgate_redis ADDRESS [password=P] [db=N] [prefix=P]
 * [interval=TIME] [timeout=TIME] [id=NAME];", read into the one
 * ngx_http_fairgate_redis_conf_t of the http block.  The address is
 * resolved here, at configuration time, so that a worker never waits on
 * DNS; the parameters are a table of a setter each.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_redis.h"
#include "ngx_http_fairgate_param.h"


#define NGX_HTTP_FAIRGATE_REDIS_INTERVAL  1000
#define NGX_HTTP_FAIRGATE_REDIS_TIMEOUT   1000


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
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_str;
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_password;
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_db;
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_id;
static ngx_http_fairgate_redis_set_fn  ngx_http_fairgate_redis_set_time;


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

    rc->address = value[1];
    rc->db = -1;
    rc->interval = NGX_CONF_UNSET_MSEC;
    rc->timeout = NGX_CONF_UNSET_MSEC;
    ngx_str_set(&rc->prefix, "fairgate:");
    rc->id = cf->cycle->hostname;

    if (ngx_http_fairgate_redis_address(cf, rc, &value[1]) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    for (i = 2; i < cf->args->nelts; i++) {

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

    fmcf->redis = rc;

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
