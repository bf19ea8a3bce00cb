
/*
 * fairgate: the OpenAI API of local mode, for the content handler of
 * "fairgate_engine_pass" (request/ngx_http_fairgate_content.c):
 *
 *     GET  .../v1/models             the models of the fairgate_engines
 *     POST .../v1/chat/completions   messages -> chat template -> tokens
 *     POST .../v1/completions        prompt -> tokens
 *     POST .../v1/responses          input -> messages, then as a chat
 *     POST .../v1/embeddings         inputs -> tokens (_embed.c)
 *
 * A POST is parsed and validated (fg_openai_request), its prompt
 * tokenized in the worker, and refused with an OpenAI error before the
 * engine sees it when it cannot run: no engine work is spent on a bad
 * request.  With "fairgate zone=" in the location the precontent handler
 * has it parsed first, so that the fair queue sees the real token counts
 * and the request's candidate engines; the content handler then submits
 * it to the engine (_stream.c takes it from there).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_local_int.h"


static ngx_int_t ngx_http_fairgate_api_request(ngx_http_request_t *r,
    ngx_http_fairgate_api_t **apip, fg_oai_error_t *err);
static ngx_int_t ngx_http_fairgate_api_tokens(ngx_http_request_t *r,
    ngx_http_fairgate_api_t *api, fg_oai_error_t *err);
static ngx_int_t ngx_http_fairgate_api_prompt_ids(ngx_http_request_t *r,
    ngx_http_fairgate_api_t *api, fg_oai_error_t *err);
static ngx_int_t ngx_http_fairgate_api_jinja_ids(ngx_http_request_t *r,
    ngx_http_fairgate_api_t *api, fg_oai_error_t *err);
static ngx_int_t ngx_http_fairgate_api_bias(ngx_http_fairgate_api_t *api,
    fg_oai_error_t *err);
static ngx_int_t ngx_http_fairgate_api_check(ngx_http_fairgate_api_t *api,
    uint32_t context, fg_oai_error_t *err);
static void ngx_http_fairgate_api_reserve(ngx_http_fairgate_api_t *api,
    uint32_t context);
static uint32_t ngx_http_fairgate_api_system(fg_oai_request_t *oai,
    uint32_t n_ids);
static const char *ngx_http_fairgate_api_what(fg_oai_request_t *oai);
static void ngx_http_fairgate_api_cleanup(void *data);
static void ngx_http_fairgate_oai_cleanup(void *data);


/* the URI's end names the endpoint, whatever the location's prefix */

ngx_int_t
ngx_http_fairgate_api_kind(ngx_http_request_t *r)
{
    ngx_str_t  *u;

    u = &r->uri;

    if (u->len >= 17
        && ngx_strncmp(u->data + u->len - 17, "/chat/completions", 17) == 0)
    {
        return FG_OAI_CHAT;
    }

    if (u->len >= 12
        && ngx_strncmp(u->data + u->len - 12, "/completions", 12) == 0)
    {
        return FG_OAI_COMPLETION;
    }

    if (u->len >= 10
        && ngx_strncmp(u->data + u->len - 10, "/responses", 10) == 0)
    {
        return FG_OAI_RESPONSES;
    }

    if (u->len >= 11
        && ngx_strncmp(u->data + u->len - 11, "/embeddings", 11) == 0)
    {
        return FG_OAI_EMBEDDING;
    }

    return 0;
}


/*
 * Parses and validates the body, picks the engine, tokenizes the prompt,
 * and hashes its blocks (with its candidate engines, when a zone routes
 * it): *apip, with what the fair queue charges and reserves.
 * NGX_DECLINED: err says why it cannot be served.
 */

ngx_int_t
ngx_http_fairgate_api_parse(ngx_http_request_t *r, ngx_uint_t zoned,
    ngx_http_fairgate_api_t **apip, fg_oai_error_t *err)
{
    uint32_t                  context;
    ngx_int_t                 rc;
    ngx_pool_cleanup_t       *cln;
    const fg_shm_info_t      *info;
    ngx_http_fairgate_api_t  *api;

    rc = ngx_http_fairgate_api_request(r, &api, err);

    if (rc != NGX_OK) {
        return rc;
    }

    /* the context: the running engine's, else the model file's */

    info = api->engine->client ? fg_shm_client_info(api->engine->client)
                               : NULL;
    context = info ? info->shape.context : api->engine->context;

    if (api->oai->kind == FG_OAI_EMBEDDING) {
        rc = ngx_http_fairgate_embed_parse(api, context, err);

        if (rc != NGX_OK) {
            return rc;
        }

    } else {
        rc = ngx_http_fairgate_api_tokens(r, api, err);

        if (rc != NGX_OK) {
            return (err->status == 0) ? NGX_ERROR : NGX_DECLINED;
        }

        if (ngx_http_fairgate_api_check(api, context, err) != NGX_OK) {
            return NGX_DECLINED;
        }
    }

    if (ngx_http_fairgate_route_prepare(api, zoned) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_fairgate_api_reserve(api, context);

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_fairgate_api_cleanup;
    cln->data = api;

    api->parsed = 1;
    *apip = api;

    return NGX_OK;
}


/*
 * The body parsed into a request of local mode, for the engine whose model
 * it names.  NGX_DECLINED: err says why it cannot be served.
 */

static ngx_int_t
ngx_http_fairgate_api_request(ngx_http_request_t *r,
    ngx_http_fairgate_api_t **apip, fg_oai_error_t *err)
{
    u_char                         *data;
    size_t                          len;
    ngx_int_t                       rc, kind;
    ngx_str_t                       name;
    ngx_uint_t                      i;
    ngx_keyval_t                   *alias;
    fg_oai_limits_t                 lim;
    fg_oai_request_t               *oai;
    ngx_pool_cleanup_t             *cln;
    ngx_http_fairgate_api_t        *api;
    ngx_http_fairgate_engine_t     *e;
    ngx_http_fairgate_loc_conf_t   *flcf;
    ngx_http_fairgate_main_conf_t  *fmcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);
    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);

    kind = ngx_http_fairgate_api_kind(r);

    if (kind == 0) {
        fg_oai_error_set(err, NGX_HTTP_NOT_FOUND, "unknown_url", NULL,
                         "Invalid URL (POST %.*s).",
                         (int) ngx_min(r->uri.len, 200), r->uri.data);
        return NGX_DECLINED;
    }

    rc = ngx_http_fairgate_body(r, &data, &len);
    if (rc != NGX_OK) {
        return rc;
    }

    fg_oai_limits_init(&lim);

    if (flcf->engine) {
        lim.n_vocab = fg_tokenizer_n_vocab(flcf->engine->tok);
    }

    oai = fg_oai_request_parse(kind, (char *) data, len, &lim, err);

    if (oai == NULL) {
        return NGX_DECLINED;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        fg_oai_request_free(oai);
        return NGX_ERROR;
    }

    cln->handler = ngx_http_fairgate_oai_cleanup;
    cln->data = oai;

    /*
     * The model: the location's engine's, or any engine's; of a group, the
     * first for now (one tokenizer serves them all): the zone's dispatch,
     * or this worker before the submission (_route.c), picks the engine.
     * A fairgate_model_alias names the engine's model for a public name.
     */

    name.data = (u_char *) oai->model.data;
    name.len = oai->model.len;
    alias = flcf->model_aliases ? flcf->model_aliases->elts : NULL;

    for (i = 0; alias && i < flcf->model_aliases->nelts; i++) {
        if (alias[i].key.len == name.len
            && ngx_strncmp(alias[i].key.data, name.data, name.len) == 0)
        {
            name = alias[i].value;
            break;
        }
    }

    e = ngx_http_fairgate_engine_find(fmcf, (char *) name.data, name.len);

    if (e == NULL || (flcf->engine && e != flcf->engine->group)) {
        fg_oai_error_set(err, NGX_HTTP_NOT_FOUND, "model_not_found",
                         "model", "The model `%.*s` does not exist or you do "
                         "not have access to it.",
                         (int) ngx_min(oai->model.len, 256),
                         oai->model.data);
        return NGX_DECLINED;
    }

    api = ngx_pcalloc(r->pool, sizeof(ngx_http_fairgate_api_t));
    if (api == NULL) {
        return NGX_ERROR;
    }

    api->request = r;
    api->engine = flcf->engine ? flcf->engine : e;
    api->oai = oai;
    api->stream = oai->stream;

    *apip = api;

    return NGX_OK;
}


/* the prompt and the output it asks for fit the context; stop is valid */

static ngx_int_t
ngx_http_fairgate_api_check(ngx_http_fairgate_api_t *api, uint32_t context,
    fg_oai_error_t *err)
{
    const char        *what;
    fg_oai_request_t  *oai;

    oai = api->oai;
    what = ngx_http_fairgate_api_what(oai);

    if (context
        && (api->n_ids >= context
            || (uint64_t) api->n_ids + oai->max_tokens > context))
    {
        fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST,
                         "context_length_exceeded", what,
                         "This model's maximum context length is %u tokens. "
                         "However, you requested %u tokens (%u in the "
                         "%s, %u in the completion). Please reduce the "
                         "length of the %s or completion.",
                         (unsigned) context,
                         (unsigned) (api->n_ids + oai->max_tokens),
                         (unsigned) api->n_ids, what,
                         (unsigned) oai->max_tokens, what);
        return NGX_DECLINED;
    }

    if (fg_oai_stop_init(&api->stop, oai->stop, oai->n_stop) != 0) {
        fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, NULL, "stop",
                         "Invalid 'stop': each string must be 1 to %u bytes.",
                         (unsigned) FG_OAI_STOP_MAX_LEN);
        return NGX_DECLINED;
    }

    /* max_tokens 0 with echo scores the prompt: the engine makes one
     * token (its 0 is no limit), which is no part of the answer */
    api->score = oai->has_max_tokens && oai->max_tokens == 0;
    api->max_tokens = api->score ? 1 : oai->max_tokens;

    return ngx_http_fairgate_api_bias(api, err);
}


/* logit_bias names tokens of the vocabulary of the model it goes to */

static ngx_int_t
ngx_http_fairgate_api_bias(ngx_http_fairgate_api_t *api, fg_oai_error_t *err)
{
    size_t             i;
    uint32_t           vocab;
    fg_oai_request_t  *oai;

    oai = api->oai;
    vocab = fg_tokenizer_n_vocab(api->engine->tok);

    for (i = 0; i < oai->n_bias; i++) {
        if (oai->bias_id[i] < 0 || (uint32_t) oai->bias_id[i] >= vocab) {
            fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, "invalid_value",
                             "logit_bias",
                             "Invalid key in 'logit_bias': token id %d is "
                             "outside the model's vocabulary of %u tokens.",
                             (int) oai->bias_id[i], (unsigned) vocab);
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/*
 * What the fair queue charges and reserves: the real prompt, and the
 * output it may ask for, of every choice; the KV room in whole blocks of
 * the engines' size.
 */

static void
ngx_http_fairgate_api_reserve(ngx_http_fairgate_api_t *api, uint32_t context)
{
    size_t    bs, full;
    uint32_t  need, n;

    bs = api->block_size;

    /* embeddings: no output; the KV blocks of the inputs that run at
     * once, as long as the longest */
    if (api->embed) {
        api->need = 0;
        api->system_tokens = 0;
        api->reserve = (uint32_t) ((api->embed->longest + bs - 1) / bs * bs
                                   * api->embed->window);
        return;
    }

    need = api->max_tokens;

    if (need == 0 && context) {
        need = context - api->n_ids;
    }

    n = ngx_max(api->oai->n, api->oai->best_of);
    n = ngx_max(n, 1);

    /* n choices (best_of candidates): every one's output; the prompt
     * once */
    api->need = need * n;
    api->system_tokens = ngx_http_fairgate_api_system(api->oai, api->n_ids);

    /* the prompt's full blocks are shared by the choices; each has its
     * own copy of the last, partial one, and its output */
    full = api->n_ids / bs * bs;
    api->reserve = (uint32_t) (full + n * ((api->n_ids - full + need + bs - 1)
                                           / bs * bs));
}


/*
 * The system prompts' tokens, for wsc: the prompt's tokens in proportion
 * to the system and developer messages' share of the text (tokenizing them
 * apart would cost a second pass for a weight that is an estimate anyway).
 */

static uint32_t
ngx_http_fairgate_api_system(fg_oai_request_t *oai, uint32_t n_ids)
{
    size_t             i, sys, all;
    fg_oai_message_t  *m;

    sys = 0;
    all = 0;

    for (i = 0; i < oai->n_messages; i++) {
        m = &oai->messages[i];
        all += m->content.len;

        if (m->role == FG_OAI_SYSTEM || m->role == FG_OAI_DEVELOPER) {
            sys += m->content.len;
        }
    }

    if (sys == 0) {
        return 0;
    }

    return (uint32_t) ((double) n_ids * sys / all);
}


/* the prompt's token ids: the chat template, or the completion's prompt */

static ngx_int_t
ngx_http_fairgate_api_tokens(ngx_http_request_t *r,
    ngx_http_fairgate_api_t *api, fg_oai_error_t *err)
{
    int                          flags;
    char                        *text;
    size_t                       len, max, n_segs;
    ssize_t                      n;
    ngx_int_t                    rc;
    fg_tok_seg_t                *segs, one;
    fg_oai_request_t            *oai;
    ngx_http_fairgate_engine_t  *e;

    e = api->engine;
    oai = api->oai;
    err->status = 0;

    if (oai->kind == FG_OAI_COMPLETION && oai->prompt.data == NULL) {
        return ngx_http_fairgate_api_prompt_ids(r, api, err);
    }

    if (oai->kind == FG_OAI_CHAT
        && ngx_http_fairgate_tools_check(api, err) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    if (oai->kind != FG_OAI_COMPLETION && e->tmpl.jinja) {
        rc = ngx_http_fairgate_api_jinja_ids(r, api, err);

        if (rc != NGX_AGAIN) {
            return rc;
        }
    }

    /* a chat: the template's markers are control tokens, the messages'
     * texts are text; a completion's prompt is text */
    if (oai->kind != FG_OAI_COMPLETION) {
        text = fg_chat_template_render(&e->tmpl, oai->messages,
                                       oai->n_messages, &len, &segs,
                                       &n_segs, err);
        if (text == NULL) {
            return err->status == 400 ? NGX_DECLINED : NGX_ERROR;
        }

        flags = fg_chat_template_tok_flags(&e->tmpl);

    } else {
        text = (char *) oai->prompt.data;
        len = oai->prompt.len;
        flags = 0;

        one.text = text;
        one.len = len;
        one.special = 0;
        segs = &one;
        n_segs = 1;
    }

    /* most texts take fewer tokens than bytes; else encode once more */

    max = len + 16;

    for ( ;; ) {
        api->ids = ngx_palloc(r->pool, max * sizeof(int32_t));
        if (api->ids == NULL) {
            n = -1;
            break;
        }

        n = fg_tokenizer_encode_segs(e->tok, segs, n_segs, flags, api->ids,
                                     max);

        if (n < 0 || (size_t) n <= max) {
            break;
        }

        max = n;
    }

    if (oai->kind != FG_OAI_COMPLETION) {
        free(text);
        free(segs);
    }

    if (n < 0) {
        return NGX_ERROR;
    }

    api->n_ids = (uint32_t) n;

    if (api->n_ids == 0) {
        fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, NULL,
                         ngx_http_fairgate_api_what(oai),
                         "The prompt is empty.");
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * A chat by the model's own template: rendered in segments, the
 * template's text with its control tokens, the messages' as text.
 * NGX_AGAIN: the template failed on its own (not refusing the
 * conversation), said once a worker, and the family's format is written
 * instead.
 */

static ngx_int_t
ngx_http_fairgate_api_jinja_ids(ngx_http_request_t *r,
    ngx_http_fairgate_api_t *api, fg_oai_error_t *err)
{
    int                          rc;
    size_t                       max;
    ssize_t                      n;
    fg_jinja_out_t               out;
    ngx_http_fairgate_engine_t  *e;

    e = api->engine;

    /* tools, unless tool_choice "none" keeps them from the model */
    rc = fg_chat_jinja_render(&e->tmpl, api->oai->messages,
                              api->oai->n_messages,
                              api->oai->tool_choice != FG_OAI_TOOLS_NONE
                              ? &api->oai->tools : NULL, &out, err);

    if (rc > 0 && fg_oai_request_uses_tools(api->oai)) {
        err->status = NGX_HTTP_BAD_REQUEST;
        err->type = "invalid_request_error";
        err->code = "unsupported_value";
        ngx_cpystrn((u_char *) err->param, (u_char *) "messages",
                    sizeof(err->param));
        return NGX_DECLINED;
    }

    if (rc > 0) {
        if (!e->tmpl_warned) {
            e->tmpl_warned = 1;
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "fairgate_engine \"%V\": %s; the built-in %s "
                          "format is used for such requests", &e->name,
                          err->message,
                          fg_chat_family_name(e->tmpl.family));
        }

        err->status = 0;
        return NGX_AGAIN;
    }

    if (rc < 0) {
        return err->status == 400 ? NGX_DECLINED : NGX_ERROR;
    }

    /* most texts take fewer tokens than bytes; else encode once more */

    max = out.len + 16;

    for ( ;; ) {
        api->ids = ngx_palloc(r->pool, max * sizeof(int32_t));
        if (api->ids == NULL) {
            n = -1;
            break;
        }

        n = fg_chat_encode(&e->tmpl, e->tok, &out, api->ids, max);

        if (n < 0 || (size_t) n <= max) {
            break;
        }

        max = n;
    }

    fg_jinja_out_free(&out);

    if (n < 0) {
        return NGX_ERROR;
    }

    api->n_ids = (uint32_t) n;

    if (api->n_ids == 0) {
        fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, NULL,
                         ngx_http_fairgate_api_what(api->oai),
                         "The prompt is empty.");
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* a completion's prompt of token ids: as they are, if the vocabulary
 * has them */

static ngx_int_t
ngx_http_fairgate_api_prompt_ids(ngx_http_request_t *r,
    ngx_http_fairgate_api_t *api, fg_oai_error_t *err)
{
    size_t             i;
    uint32_t           vocab;
    fg_oai_request_t  *oai;

    oai = api->oai;
    vocab = fg_tokenizer_n_vocab(api->engine->tok);

    for (i = 0; i < oai->n_prompt_ids; i++) {
        if (oai->prompt_ids[i] < 0 || (uint32_t) oai->prompt_ids[i] >= vocab)
        {
            fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, NULL, "prompt",
                             "Invalid token id %d in 'prompt': the "
                             "vocabulary has %u tokens.",
                             (int) oai->prompt_ids[i], (unsigned) vocab);
            return NGX_DECLINED;
        }
    }

    api->ids = ngx_palloc(r->pool, (oai->n_prompt_ids + 1) * sizeof(int32_t));
    if (api->ids == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(api->ids, oai->prompt_ids, oai->n_prompt_ids * sizeof(int32_t));
    api->n_ids = oai->n_prompt_ids;

    if (api->n_ids == 0) {
        fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, NULL, "prompt",
                         "The prompt is empty.");
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* GET /v1/models: every fairgate_engine's model, as OpenAI lists them */

ngx_int_t
ngx_http_fairgate_api_models(ngx_http_request_t *r)
{
    size_t                          len;
    time_t                          now;
    ngx_buf_t                      *b;
    ngx_uint_t                      i, n;
    ngx_chain_t                     out;
    fg_oai_str_t                   *ids;
    ngx_http_fairgate_engine_t    **ep;
    ngx_http_fairgate_loc_conf_t   *flcf;
    ngx_http_fairgate_main_conf_t  *fmcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);
    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);

    ep = fmcf->engines.elts;

    ids = ngx_palloc(r->pool, (fmcf->engines.nelts + 1) * sizeof(fg_oai_str_t));
    if (ids == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the location's engine, or every engine's model id once */

    n = 0;

    for (i = 0; i < fmcf->engines.nelts; i++) {
        if (flcf->engine ? flcf->engine == ep[i] : ep[i]->group == ep[i]) {
            ids[n].data = (char *) ep[i]->id.data;
            ids[n].len = ep[i]->id.len;
            n++;
        }
    }

    now = ngx_time();
    len = fg_oai_models_json(ids, n, now, NULL, 0);

    b = ngx_create_temp_buf(r->pool, len);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last += fg_oai_models_json(ids, n, now, (char *) b->pos, len);

    ngx_str_set(&r->headers_out.content_type, "application/json");

    out.buf = b;
    out.next = NULL;

    return ngx_http_fairgate_send_body(r, NGX_HTTP_OK, &out);
}


/* the field that holds a request's prompt, named in its errors */

static const char *
ngx_http_fairgate_api_what(fg_oai_request_t *oai)
{
    switch (oai->kind) {

    case FG_OAI_CHAT:
        return "messages";

    case FG_OAI_RESPONSES:
        return "input";

    default:
        return "prompt";
    }
}


/* however the request ends: the engine lets its sequence go at once */

static void
ngx_http_fairgate_api_cleanup(void *data)
{
    ngx_http_fairgate_api_t *api = data;

    /* a client that left while its submission waited */
    if (api->retry.timer_set) {
        ngx_del_timer(&api->retry);
    }

    ngx_http_fairgate_engine_forget(api, 1);
}


static void
ngx_http_fairgate_oai_cleanup(void *data)
{
    fg_oai_request_free(data);
}
