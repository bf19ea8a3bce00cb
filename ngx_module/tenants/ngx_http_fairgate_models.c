
/*
 * fairgate: the models a key may use, and model aliases.
 *
 * A key may be limited to a list of models (models= in the keys file, the
 * "models" field of a key kept in Redis): a request for another model is
 * refused with OpenAI's 404 model_not_found before it goes anywhere.  The
 * list names the models as clients name them, aliases included.
 *
 * "fairgate_model_alias PUBLIC TARGET;" maps the name a client sends to
 * the name an upstream or an engine knows: drop-in mode rewrites the
 * body's "model" for the upstream, and $fairgate_model gives the target
 * (routing by "map $fairgate_model"), while ctx->model and
 * $fairgate_model_requested keep the public name, the one a client's
 * prices, quotas and usage log are kept under.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_tenants.h"
#include "fg_keys.h"


char *
ngx_http_fairgate_model_alias(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    ngx_str_t     *value;
    ngx_uint_t     i;
    ngx_keyval_t  *kv;

    value = cf->args->elts;

    for (i = 1; i < 3; i++) {
        if (value[i].len > NGX_HTTP_FAIRGATE_MODEL_LEN
            || fg_keys_models_valid((char *) value[i].data, value[i].len)
               != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid model name \"%V\": printable "
                               "ASCII, no quote, backslash or comma, at "
                               "most 256 bytes", &value[i]);
            return NGX_CONF_ERROR;
        }
    }

    if (flcf->model_aliases == NULL) {
        flcf->model_aliases = ngx_array_create(cf->pool, 4,
                                               sizeof(ngx_keyval_t));
        if (flcf->model_aliases == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    kv = flcf->model_aliases->elts;

    for (i = 0; i < flcf->model_aliases->nelts; i++) {
        if (kv[i].key.len == value[1].len
            && ngx_strncmp(kv[i].key.data, value[1].data, value[1].len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate model alias \"%V\"", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    kv = ngx_array_push(flcf->model_aliases);
    if (kv == NULL) {
        return NGX_CONF_ERROR;
    }

    kv->key = value[1];
    kv->value = value[2];

    return NGX_CONF_OK;
}


/* a list "a,b,c" holds the model, exactly; an empty list allows any */

ngx_uint_t
ngx_http_fairgate_model_allowed(ngx_str_t *models, ngx_str_t *model)
{
    u_char  *p, *last, *comma;

    if (models->len == 0) {
        return 1;
    }

    p = models->data;
    last = p + models->len;

    while (p < last) {
        comma = ngx_strlchr(p, last, ',');
        if (comma == NULL) {
            comma = last;
        }

        if ((size_t) (comma - p) == model->len
            && ngx_strncmp(p, model->data, model->len) == 0)
        {
            return 1;
        }

        p = comma + 1;
    }

    return 0;
}


ngx_str_t *
ngx_http_fairgate_model_target(ngx_http_fairgate_loc_conf_t *flcf,
    ngx_str_t *model)
{
    ngx_uint_t     i;
    ngx_keyval_t  *kv;

    if (flcf->model_aliases == NULL || model->len == 0) {
        return NULL;
    }

    kv = flcf->model_aliases->elts;

    for (i = 0; i < flcf->model_aliases->nelts; i++) {
        if (kv[i].key.len == model->len
            && ngx_strncmp(kv[i].key.data, model->data, model->len) == 0)
        {
            return &kv[i].value;
        }
    }

    return NULL;
}
