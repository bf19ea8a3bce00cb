
/*
 * fairgate: a request's quality-of-experience expectations (Andes).
 *
 *     fairgate_qoe [ttft=TIME] [speed=N] | off;
 *
 *     X-Fairgate-TTFT: SECONDS              the time to the first token
 *     X-Fairgate-Reading-Speed: TOKENS/S    the reader's speed
 *
 * A stream's QoE (../shared/ALGORITHMS.md "Andes") is measured against
 * two expectations: when its first token is due, and how fast its reader
 * reads.  The location gives defaults, a request's headers override them
 * one by one; a header that is not a positive number in range is refused
 * with a 400 naming it, since a guess would mislead the engine's scheduler
 * and the pacer (ngx_http_fairgate_pace.c) alike.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request_int.h"


/* the bounds of either: a TTFT of an hour, 10000 tokens a second */
#define NGX_HTTP_FAIRGATE_QOE_MAX_TTFT   3600000
#define NGX_HTTP_FAIRGATE_QOE_MAX_SPEED  10000


#define ngx_http_fairgate_qoe_bad(r, ctx, param, message)                    \
    ngx_http_fairgate_refuse_header(r, ctx, param, "invalid_qoe", message)


/* fairgate_qoe [ttft=TIME] [speed=N] | off */

char *
ngx_http_fairgate_qoe(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    ngx_int_t    n;
    ngx_str_t   *value, s;
    ngx_uint_t   i;

    if (flcf->qoe != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    flcf->qoe = 0;
    flcf->qoe_ttft = 0;
    flcf->qoe_speed = 0;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        return cf->args->nelts > 2 ? "takes no parameters after \"off\""
                                   : NGX_CONF_OK;
    }

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "ttft=", 5) == 0) {
            s.data = value[i].data + 5;
            s.len = value[i].len - 5;

            n = ngx_parse_time(&s, 0);

            if (n <= 0 || n > NGX_HTTP_FAIRGATE_QOE_MAX_TTFT) {
                goto invalid;
            }

            flcf->qoe_ttft = (ngx_msec_t) n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "speed=", 6) == 0) {
            n = ngx_atofp(value[i].data + 6, value[i].len - 6, 3);

            if (n <= 0 || n > NGX_HTTP_FAIRGATE_QOE_MAX_SPEED * 1000) {
                goto invalid;
            }

            flcf->qoe_speed = n / 1000.0;
            continue;
        }

        goto invalid;
    }

    flcf->qoe = 1;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\" in \"fairgate_qoe\", "
                       "expected ttft=TIME (above 0, at most 1h), "
                       "speed=N (tokens a second, above 0, at most 10000, "
                       "up to 3 decimals) or \"off\"", &value[i]);
    return NGX_CONF_ERROR;
}


/*
 * The location's expectations, then the request's headers over them:
 * before the body, so that a bad header is refused at once (400, phase
 * REFUSED).
 */

ngx_int_t
ngx_http_fairgate_qoe_read(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    ngx_int_t                      n;
    ngx_table_elt_t               *ttft, *speed;
    ngx_http_fairgate_loc_conf_t  *flcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

    ctx->qoe_ttft = flcf->qoe_ttft;
    ctx->qoe_speed = flcf->qoe_speed;

    /* the param names the header that came twice */
    if (ngx_http_fairgate_header_once(r, "X-Fairgate-TTFT", &ttft)
        != NGX_OK)
    {
        return ngx_http_fairgate_qoe_bad(r, ctx, "X-Fairgate-TTFT",
                   "Each X-Fairgate-TTFT and X-Fairgate-Reading-Speed "
                   "header may be sent once.");
    }

    if (ngx_http_fairgate_header_once(r, "X-Fairgate-Reading-Speed", &speed)
        != NGX_OK)
    {
        return ngx_http_fairgate_qoe_bad(r, ctx, "X-Fairgate-Reading-Speed",
                   "Each X-Fairgate-TTFT and X-Fairgate-Reading-Speed "
                   "header may be sent once.");
    }

    if (ttft) {
        /* seconds with up to 3 decimals: milliseconds */
        n = ngx_atofp(ttft->value.data, ttft->value.len, 3);

        if (n <= 0 || n > NGX_HTTP_FAIRGATE_QOE_MAX_TTFT) {
            return ngx_http_fairgate_qoe_bad(r, ctx, "X-Fairgate-TTFT",
                       "X-Fairgate-TTFT must be a number of seconds above "
                       "0, at most 3600, with up to 3 decimals.");
        }

        ctx->qoe_ttft = (ngx_msec_t) n;
    }

    if (speed) {
        n = ngx_atofp(speed->value.data, speed->value.len, 3);

        if (n <= 0 || n > NGX_HTTP_FAIRGATE_QOE_MAX_SPEED * 1000) {
            return ngx_http_fairgate_qoe_bad(r, ctx,
                       "X-Fairgate-Reading-Speed",
                       "X-Fairgate-Reading-Speed must be a number of tokens "
                       "a second above 0, at most 10000, with up to 3 "
                       "decimals.");
        }

        ctx->qoe_speed = n / 1000.0;
    }

    return NGX_OK;
}
