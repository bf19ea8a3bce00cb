
/*
 * fairgate: a directive's parameter values, parsed by nginx's own parsers
 * (ngx_atoi(), ngx_parse_time(), ngx_parse_size()) and held to their
 * bounds in one place.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_fairgate_param.h"


ngx_conf_enum_t  ngx_http_fairgate_on_off[] = {
    { ngx_string("on"), 1 },
    { ngx_string("off"), 0 },
    { ngx_null_string, 0 }
};


/* a whole number from min to max (min >= 0); NGX_ERROR if not */

ngx_int_t
ngx_http_fairgate_param_number(u_char *data, size_t len, ngx_int_t min,
    ngx_int_t max)
{
    ngx_int_t  n;

    n = ngx_atoi(data, len);

    if (n == NGX_ERROR || n < min || n > max) {
        return NGX_ERROR;
    }

    return n;
}


/* a time ("500ms", "2s", "1m") from min to max ms; NGX_ERROR if not */

ngx_msec_t
ngx_http_fairgate_param_msec(u_char *data, size_t len, ngx_msec_t min,
    ngx_msec_t max)
{
    ngx_str_t   s;
    ngx_msec_t  ms;

    s.data = data;
    s.len = len;

    ms = ngx_parse_time(&s, 0);

    if (ms == (ngx_msec_t) NGX_ERROR || ms < min || ms > max) {
        return (ngx_msec_t) NGX_ERROR;
    }

    return ms;
}


/* one of the words of an ngx_conf_enum_t table: its value; NGX_ERROR if none */

ngx_int_t
ngx_http_fairgate_param_enum(u_char *data, size_t len, ngx_conf_enum_t *values)
{
    ngx_conf_enum_t  *e;

    for (e = values; e->name.len; e++) {
        if (e->name.len == len && ngx_strncmp(e->name.data, data, len) == 0) {
            return (ngx_int_t) e->value;
        }
    }

    return NGX_ERROR;
}


/*
 * A shared zone's NAME:SIZE: NGX_DECLINED if it is not of that form,
 * NGX_ERROR if the size is not one; how small a zone may be is the
 * caller's.
 */

ngx_int_t
ngx_http_fairgate_param_zone(u_char *data, size_t len, ngx_str_t *name,
    ssize_t *size)
{
    u_char     *colon;
    ngx_str_t   s;

    colon = ngx_strlchr(data, data + len, ':');

    if (colon == NULL || colon == data) {
        return NGX_DECLINED;
    }

    name->data = data;
    name->len = colon - data;

    s.data = colon + 1;
    s.len = data + len - s.data;

    *size = ngx_parse_size(&s);

    return (*size == NGX_ERROR) ? NGX_ERROR : NGX_OK;
}
