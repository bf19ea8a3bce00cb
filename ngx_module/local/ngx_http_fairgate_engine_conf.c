
/*
 * fairgate: "fairgate_engine NAME shm=NAME model=PATH [id=ID]
 * [dead_after=TIME];".
 *
 * At configuration time the model's GGUF file is opened once for its
 * tokenizer, chat template and context length; the workers share them
 * through fork (they are read-only).  The weights stay with the engine.
 * A location with fairgate_engine_pass (request/ngx_http_fairgate_content.c)
 * answers the OpenAI API itself, from the named engine or the one whose
 * model id the request's "model" names.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_llama.h"
#include "ngx_http_fairgate_local.h"
#include "ngx_http_fairgate_param.h"


/* the client's health check: an engine silent this long is dead */
#define NGX_HTTP_FAIRGATE_DEAD_AFTER  2000

/* the longest model id */
#define NGX_HTTP_FAIRGATE_ID_LEN      256


static ngx_int_t ngx_http_fairgate_engine_param(ngx_conf_t *cf,
    ngx_http_fairgate_engine_t *e, ngx_str_t *word);
static ngx_int_t ngx_http_fairgate_engine_shm(ngx_conf_t *cf,
    ngx_http_fairgate_engine_t *e, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_engine_id(ngx_conf_t *cf,
    ngx_http_fairgate_engine_t *e);
static void ngx_http_fairgate_engine_cleanup(void *data);
static ngx_int_t ngx_http_fairgate_engine_load(ngx_conf_t *cf,
    ngx_http_fairgate_engine_t *e);


char *
ngx_http_fairgate_engine(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_main_conf_t *fmcf = conf;

    ngx_str_t                    *value;
    ngx_uint_t                    i;
    ngx_pool_cleanup_t           *cln;
    ngx_http_fairgate_engine_t   *e, *other, **ep;

    value = cf->args->elts;

    e = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_engine_t));
    if (e == NULL) {
        return NGX_CONF_ERROR;
    }

    e->name = value[1];
    e->dead_after = NGX_HTTP_FAIRGATE_DEAD_AFTER;

    if (e->name.len >= NGX_HTTP_FAIRGATE_ENGINE_NAME) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fairgate_engine name \"%V\" is longer than %d "
                           "characters", &e->name,
                           NGX_HTTP_FAIRGATE_ENGINE_NAME - 1);
        return NGX_CONF_ERROR;
    }

    if (ngx_http_fairgate_engine_named(fmcf, &e->name, 0)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate fairgate_engine \"%V\"", &e->name);
        return NGX_CONF_ERROR;
    }

    for (i = 2; i < cf->args->nelts; i++) {
        if (ngx_http_fairgate_engine_param(cf, e, &value[i]) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }
    }

    if (e->shm.len == 0 || e->model.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fairgate_engine \"%V\" needs shm= and model=",
                           &e->name);
        return NGX_CONF_ERROR;
    }

    if (e->id.len == 0 && ngx_http_fairgate_engine_id(cf, e) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /*
     * Engines of one model id form a group the zone routes among (one per
     * GPU, or several CPU engines): they must run the same model file, so
     * that one tokenizer and one prefix hashing serve them all.
     */

    other = ngx_http_fairgate_engine_named(fmcf, &e->id, 1);

    if (other
        && (other->model.len != e->model.len
            || ngx_strncmp(other->model.data, e->model.data, e->model.len)
               != 0))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fairgate_engine \"%V\": model id \"%V\" is "
                           "served by \"%V\" from another file already "
                           "(engines of one id must run one model)",
                           &e->name, &e->id, &other->name);
        return NGX_CONF_ERROR;
    }

    e->group = other ? other : e;
    e->group->n_group++;

    if (ngx_http_fairgate_engine_load(cf, e) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_fairgate_engine_cleanup;
    cln->data = e;

    ep = ngx_array_push(&fmcf->engines);
    if (ep == NULL) {
        return NGX_CONF_ERROR;
    }

    *ep = e;

    return NGX_CONF_OK;
}


/* shm=, model=, id= or dead_after=; NGX_ERROR: an invalid parameter */

static ngx_int_t
ngx_http_fairgate_engine_param(ngx_conf_t *cf, ngx_http_fairgate_engine_t *e,
    ngx_str_t *word)
{
    ngx_str_t   s;
    ngx_msec_t  ms;

    if (ngx_strncmp(word->data, "shm=", 4) == 0) {
        s.data = word->data + 4;
        s.len = word->len - 4;

        return ngx_http_fairgate_engine_shm(cf, e, &s);
    }

    if (ngx_strncmp(word->data, "model=", 6) == 0) {
        e->model.data = word->data + 6;
        e->model.len = word->len - 6;

        if (e->model.len == 0
            || ngx_conf_full_name(cf->cycle, &e->model, 0) != NGX_OK)
        {
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    if (ngx_strncmp(word->data, "id=", 3) == 0) {
        e->id.data = word->data + 3;
        e->id.len = word->len - 3;

        return (e->id.len == 0 || e->id.len > NGX_HTTP_FAIRGATE_ID_LEN)
               ? NGX_ERROR : NGX_OK;
    }

    if (ngx_strncmp(word->data, "dead_after=", 11) == 0) {
        ms = ngx_http_fairgate_param_msec(word->data + 11, word->len - 11,
                                          200, NGX_HTTP_FAIRGATE_NO_MAX);

        if (ms == (ngx_msec_t) NGX_ERROR) {
            return NGX_ERROR;
        }

        e->dead_after = ms;
        return NGX_OK;
    }

    return NGX_ERROR;
}


/* shm_open() names start with one slash and have no other */

static ngx_int_t
ngx_http_fairgate_engine_shm(ngx_conf_t *cf, ngx_http_fairgate_engine_t *e,
    ngx_str_t *s)
{
    u_char  *p;

    e->shm.data = ngx_pnalloc(cf->pool, s->len + 2);
    if (e->shm.data == NULL) {
        return NGX_ERROR;
    }

    p = e->shm.data;

    if (s->len == 0 || s->data[0] != '/') {
        *p++ = '/';
    }

    p = ngx_cpymem(p, s->data, s->len);
    *p = '\0';
    e->shm.len = p - e->shm.data;

    if (s->len == 0 || e->shm.len > 200
        || ngx_strlchr(e->shm.data + 1, p, '/'))
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* without id=: the model file's base name without ".gguf" */

static ngx_int_t
ngx_http_fairgate_engine_id(ngx_conf_t *cf, ngx_http_fairgate_engine_t *e)
{
    u_char     *p;
    ngx_str_t   s;

    s = e->model;

    for (p = s.data + s.len; p > s.data && p[-1] != '/'; p--) {
        /* void */
    }

    e->id.data = p;
    e->id.len = s.data + s.len - p;

    if (e->id.len > 5
        && ngx_strncasecmp(p + e->id.len - 5, (u_char *) ".gguf", 5) == 0)
    {
        e->id.len -= 5;
    }

    if (e->id.len == 0 || e->id.len > NGX_HTTP_FAIRGATE_ID_LEN) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fairgate_engine \"%V\": no model id in \"%V\", "
                           "set id=", &e->name, &e->model);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the engine of this name, or of this model id */

ngx_http_fairgate_engine_t *
ngx_http_fairgate_engine_named(ngx_http_fairgate_main_conf_t *fmcf,
    ngx_str_t *name, ngx_uint_t by_id)
{
    ngx_str_t                    *s;
    ngx_uint_t                    i;
    ngx_http_fairgate_engine_t  **ep;

    ep = fmcf->engines.elts;

    for (i = 0; i < fmcf->engines.nelts; i++) {
        s = by_id ? &ep[i]->id : &ep[i]->name;

        if (s->len == name->len
            && ngx_strncmp(s->data, name->data, name->len) == 0)
        {
            return ep[i];
        }
    }

    return NULL;
}


/* the tokenizer and the parsed chat template are malloc()'d: freed with
 * the cycle that loaded them */

static void
ngx_http_fairgate_engine_cleanup(void *data)
{
    ngx_http_fairgate_engine_t *e = data;

    if (e->tok) {
        fg_tokenizer_free(e->tok);
        e->tok = NULL;
    }

    fg_chat_template_free(&e->tmpl);
}


static ngx_int_t
ngx_http_fairgate_engine_load(ngx_conf_t *cf, ngx_http_fairgate_engine_t *e)
{
    int         rc;
    char        err[256];
    uint32_t    ctxlen;
    fg_gguf_t  *g;

    g = fg_gguf_open((char *) e->model.data, err, sizeof(err));
    if (g == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fairgate_engine \"%V\": %s", &e->name, err);
        return NGX_ERROR;
    }

    e->tok = fg_tokenizer_load(g, err, sizeof(err));
    if (e->tok == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fairgate_engine \"%V\": the tokenizer of \"%V\": "
                           "%s", &e->name, &e->model, err);
        fg_gguf_close(g);
        return NGX_ERROR;
    }

    rc = fg_chat_template_from_model(&e->tmpl, g, e->tok, err, sizeof(err));

    if (rc < 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fairgate_engine \"%V\": %s", &e->name, err);
        fg_gguf_close(g);
        return NGX_ERROR;
    }

    /* a template is rendered itself unless it does not parse: the
     * built-in formats are then what is left */
    if (rc > 0) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "fairgate_engine \"%V\": the chat template of "
                           "\"%V\" does not parse (%s), the built-in %s "
                           "format is used", &e->name, &e->model, err,
                           fg_chat_family_name(e->tmpl.family));
    }

    /* how its answers hold tool calls, from its template */
    fg_chat_tools_init(&e->tools, g, e->tok);

    /* the context length, for 400s before the engine is asked */

    ctxlen = fg_llama_meta_u32(g, "context_length", 0);

    e->context = ctxlen;
    e->max_piece = fg_tokenizer_max_piece(e->tok);

    fg_gguf_close(g);

    ngx_conf_log_error(NGX_LOG_INFO, cf, 0,
                       "fairgate_engine \"%V\": model \"%V\", vocabulary %uD, "
                       "context %uD, chat template %s", &e->name, &e->id,
                       fg_tokenizer_n_vocab(e->tok), e->context,
                       e->tmpl.jinja ? "the model's own"
                                     : fg_chat_family_name(e->tmpl.family));

    return NGX_OK;
}


/* the engine that serves the model a request names */

ngx_http_fairgate_engine_t *
ngx_http_fairgate_engine_find(ngx_http_fairgate_main_conf_t *fmcf,
    const char *model, size_t len)
{
    ngx_str_t  id;

    id.data = (u_char *) model;
    id.len = len;

    return ngx_http_fairgate_engine_named(fmcf, &id, 1);
}
