
/*
 * fairgate: the values of a directive's NAME=VALUE parameters, one parser
 * for each unit (a whole number, a time, one of some words, a zone's
 * NAME:SIZE) with its bounds.  Each directive says in its own words what
 * it refused.  At the bottom of the glue: every folder's directives use
 * it.
 */

#ifndef _NGX_HTTP_FAIRGATE_PARAM_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_PARAM_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


/* no upper bound but what the type holds */
#define NGX_HTTP_FAIRGATE_NO_MAX  NGX_MAX_INT_T_VALUE

/* a uint32_t's largest, or ngx_int_t's where that is smaller */
#define NGX_HTTP_FAIRGATE_MAX32                                              \
    (NGX_MAX_INT_T_VALUE < UINT32_MAX ? NGX_MAX_INT_T_VALUE                  \
                                      : (ngx_int_t) UINT32_MAX)


/* "on" 1, "off" 0, for ngx_http_fairgate_param_enum() */
extern ngx_conf_enum_t  ngx_http_fairgate_on_off[];


ngx_int_t ngx_http_fairgate_param_number(u_char *data, size_t len,
    ngx_int_t min, ngx_int_t max);
ngx_msec_t ngx_http_fairgate_param_msec(u_char *data, size_t len,
    ngx_msec_t min, ngx_msec_t max);
ngx_int_t ngx_http_fairgate_param_enum(u_char *data, size_t len,
    ngx_conf_enum_t *values);
ngx_int_t ngx_http_fairgate_param_zone(u_char *data, size_t len,
    ngx_str_t *name, ssize_t *size);


#endif /* _NGX_HTTP_FAIRGATE_PARAM_H_INCLUDED_ */
