
/*
 * fairgate: wsc's app profiles,
 *
 *     fairgate_app_profile APP [IN/SYS/OUT ...] [learn=on|off] [oit_rpm=N];
 *
 * FairServe's weighted service counter charges an app's requests by what
 * its interactions are expected to cost at each stage: its expected input,
 * system prompt and output tokens.  They come from this directive, or are
 * learnt from the app's finished requests; oit_rpm= is the app's own OIT
 * limit.  The profile is copied into the app's record in the zone at its
 * first request under policy wsc, and copied again when a reload changed
 * the directive (its words' CRC tells).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_tenants.h"
#include "ngx_http_fairgate_param.h"


static char *ngx_http_fairgate_profile_word(ngx_conf_t *cf,
    ngx_http_fairgate_profile_t *pr, ngx_str_t *value, ngx_uint_t *stages,
    ngx_uint_t *learn);
static ngx_int_t ngx_http_fairgate_profile_stage(u_char *p, double *len);
static uint32_t ngx_http_fairgate_profile_crc(ngx_conf_t *cf);
static char *ngx_http_fairgate_profile_invalid(ngx_conf_t *cf,
    ngx_str_t *value);


/* fairgate_app_profile APP [IN/SYS/OUT ...] [learn=on|off] [oit_rpm=N] */

char *
ngx_http_fairgate_app_profile(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    char                         *rv;
    ngx_str_t                    *value;
    ngx_uint_t                    i, stages, learn;
    ngx_http_fairgate_profile_t  *pr;

    value = cf->args->elts;

    pr = ngx_http_fairgate_app_add(cf, &flcf->profiles,
                                   sizeof(ngx_http_fairgate_profile_t),
                                   &value[1],
                                   "invalid app name \"%V\" in "
                                   "\"fairgate_app_profile\"",
                                   "duplicate \"fairgate_app_profile\" "
                                   "of app \"%V\"");
    if (pr == NULL) {
        return NGX_CONF_ERROR;
    }

    pr->oit_rpm = NGX_CONF_UNSET_UINT;
    pr->crc = ngx_http_fairgate_profile_crc(cf);

    stages = 0;
    learn = NGX_CONF_UNSET_UINT;

    /* fg_app_init() after the words: a stage can only follow IN/SYS/OUT */

    ngx_memzero(&pr->app, sizeof(fg_app_t));

    for (i = 2; i < cf->args->nelts; i++) {
        rv = ngx_http_fairgate_profile_word(cf, pr, &value[i], &stages,
                                            &learn);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    /* without stages it can only learn; with them, learning is asked for */

    pr->app.learn = (learn == NGX_CONF_UNSET_UINT) ? (stages == 0) : learn;

    if (stages == 0 && !pr->app.learn) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fairgate_app_profile\" of app \"%V\" has no "
                           "stages and does not learn", &value[1]);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* the profile as written, so that a reload can tell it changed */

static uint32_t
ngx_http_fairgate_profile_crc(ngx_conf_t *cf)
{
    uint32_t    crc;
    ngx_str_t  *value;
    ngx_uint_t  i;

    value = cf->args->elts;

    ngx_crc32_init(crc);

    for (i = 1; i < cf->args->nelts; i++) {
        ngx_crc32_update(&crc, value[i].data, value[i].len + 1);
    }

    ngx_crc32_final(crc);

    return crc ? crc : 1;
}


/* one word after the app's name: learn=, oit_rpm= or the next stage */

static char *
ngx_http_fairgate_profile_word(ngx_conf_t *cf,
    ngx_http_fairgate_profile_t *pr, ngx_str_t *value, ngx_uint_t *stages,
    ngx_uint_t *learn)
{
    double     len[3];
    ngx_int_t  n;

    if (ngx_strncmp(value->data, "learn=", 6) == 0
        && *learn == NGX_CONF_UNSET_UINT)
    {
        n = ngx_http_fairgate_param_enum(value->data + 6, value->len - 6,
                                         ngx_http_fairgate_on_off);
        if (n == NGX_ERROR) {
            return ngx_http_fairgate_profile_invalid(cf, value);
        }

        *learn = n;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "oit_rpm=", 8) == 0
        && pr->oit_rpm == NGX_CONF_UNSET_UINT)
    {
        n = ngx_http_fairgate_param_number(value->data + 8, value->len - 8,
                                           1, NGX_HTTP_FAIRGATE_MAX32);
        if (n == NGX_ERROR) {
            return ngx_http_fairgate_profile_invalid(cf, value);
        }

        pr->oit_rpm = n;
        return NGX_CONF_OK;
    }

    if (ngx_http_fairgate_profile_stage(value->data, len) != NGX_OK) {
        return ngx_http_fairgate_profile_invalid(cf, value);
    }

    if (*stages == FG_APP_STAGES) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "more than %d stages in "
                           "\"fairgate_app_profile\" of app \"%V\"",
                           FG_APP_STAGES, &pr->name);
        return NGX_CONF_ERROR;
    }

    (void) fg_app_set_stage(&pr->app, (uint32_t) *stages, len[0], len[1],
                            len[2]);
    (*stages)++;

    return NGX_CONF_OK;
}


static char *
ngx_http_fairgate_profile_invalid(ngx_conf_t *cf, ngx_str_t *value)
{
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\" in \"fairgate_app_profile\", "
                       "expected IN/SYS/OUT (a stage's expected input, "
                       "system prompt and output tokens), learn=on|off or "
                       "oit_rpm=N, each of the last two once", value);
    return NGX_CONF_ERROR;
}


/* IN/SYS/OUT: a stage's expected input, system and output tokens */

static ngx_int_t
ngx_http_fairgate_profile_stage(u_char *p, double *len)
{
    u_char      *end;
    ngx_uint_t   k;

    for (k = 0; k < 3; k++) {
        len[k] = strtod((char *) p, (char **) &end);

        if (end == p || !(len[k] >= 0 && len[k] < 1e9)
            || *end != (k < 2 ? '/' : '\0'))
        {
            return NGX_ERROR;
        }

        p = end + 1;
    }

    return NGX_OK;
}





/*
 * The app's profile in the zone, made at its first request of policy wsc
 * and made again when the configuration's profile changed (a reload); an
 * app without fairgate_app_profile learns its lengths from traffic.
 */

fg_app_t *
ngx_http_fairgate_profile_get(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *app, ngx_http_fairgate_profile_t *conf)
{
    uint32_t   crc;
    fg_app_t  *a;

    crc = conf ? conf->crc : 0;
    a = app->u.app.profile;

    if (a != NULL && app->u.app.profile_crc == crc) {
        return a;
    }

    if (a == NULL) {
        a = ngx_slab_alloc_locked(zone->shpool, sizeof(fg_app_t));
        if (a == NULL) {
            /* no room: served with weight 1 */
            return NULL;
        }

        app->u.app.profile = a;
    }

    if (conf) {
        *a = conf->app;
        a->id = app->node.key;

    } else {
        fg_app_init(a, app->node.key, 1);
    }

    app->u.app.profile_crc = crc;

    return a;
}
