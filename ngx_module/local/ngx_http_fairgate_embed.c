
/*
 * fairgate: POST /v1/embeddings in local mode.
 *
 * The inputs are tokenized in the worker (text as a completion's prompt
 * is, token arrays as given) into one array of ids, so that the fair
 * queue and the limits charge the request its prompt tokens as they do
 * a chat's (it generates none).  Once admitted, each input is a request
 * of its own to the engine (an embedding, fg_shm_proto.h), under the id
 * node.key + its index: a few run at once (window), each one that ends
 * lets the next in, so that one request of 2048 inputs neither floods
 * the engine's seats nor runs them one by one; the engine batches them
 * with everyone else's.  Each vector comes back in pieces before its
 * input's end; when the last input ends the body is written, the
 * vectors in input order whatever order they ended in.
 *
 * A failure of any input (refused, failed, the engine lost, the client
 * gone) ends the request, and the others are cancelled.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_local_int.h"


/* inputs running at once, at most */
#define NGX_HTTP_FAIRGATE_EMBED_WINDOW  8


static ngx_int_t ngx_http_fairgate_embed_tokens(ngx_http_fairgate_api_t *api,
    uint32_t context, fg_oai_error_t *err);
static ngx_int_t ngx_http_fairgate_embed_ids(ngx_http_fairgate_api_t *api,
    uint32_t i, fg_oai_error_t *err);
static ngx_int_t ngx_http_fairgate_embed_width(ngx_http_fairgate_api_t *api,
    const fg_shm_info_t *info, fg_oai_error_t *err);
static ngx_int_t ngx_http_fairgate_embed_more(ngx_http_fairgate_api_t *api);
static void ngx_http_fairgate_embed_event(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);
static void ngx_http_fairgate_embed_ended(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev, uint32_t i);
static void ngx_http_fairgate_embed_respond(ngx_http_fairgate_api_t *api);
static ngx_chain_t *ngx_http_fairgate_embed_body(
    ngx_http_fairgate_api_t *api);
static void ngx_http_fairgate_embed_fail(ngx_http_fairgate_api_t *api,
    ngx_uint_t status, const char *code, const char *message);


/*
 * The inputs tokenized, each within the context; with the engine
 * attached, its width checked against dimensions.  NGX_DECLINED: err says
 * why it cannot be served.
 */

ngx_int_t
ngx_http_fairgate_embed_parse(ngx_http_fairgate_api_t *api, uint32_t context,
    fg_oai_error_t *err)
{
    uint32_t                    n;
    ngx_pool_t                 *pool;
    const fg_shm_info_t        *info;
    ngx_http_fairgate_embed_t  *em;

    pool = api->request->pool;
    n = (uint32_t) api->oai->n_inputs;

    em = ngx_pcalloc(pool, sizeof(ngx_http_fairgate_embed_t));
    if (em == NULL) {
        return NGX_ERROR;
    }

    em->n = n;
    em->off = ngx_palloc(pool, (n + 1) * sizeof(uint32_t));
    em->state = ngx_pcalloc(pool, n);

    if (em->off == NULL || em->state == NULL) {
        return NGX_ERROR;
    }

    api->embed = em;

    if (ngx_http_fairgate_embed_tokens(api, context, err) != NGX_OK) {
        return err->status ? NGX_DECLINED : NGX_ERROR;
    }

    em->window = ngx_min(n, NGX_HTTP_FAIRGATE_EMBED_WINDOW);

    info = ngx_http_fairgate_engine_up(api->engine)
           ? fg_shm_client_info(api->engine->client) : NULL;

    if (info == NULL) {
        return NGX_OK;
    }

    em->window = ngx_max(1, ngx_min(em->window, info->shape.max_seqs));

    return ngx_http_fairgate_embed_width(api, info, err);
}


/* every input's tokens, one after the other in api->ids */

static ngx_int_t
ngx_http_fairgate_embed_tokens(ngx_http_fairgate_api_t *api,
    uint32_t context, fg_oai_error_t *err)
{
    size_t                      max;
    ssize_t                     got;
    uint32_t                    i, len;
    fg_oai_input_t             *in;
    ngx_http_fairgate_embed_t  *em;

    em = api->embed;
    in = api->oai->inputs;
    err->status = 0;

    /* room enough: 3 * len + 8 ids for a text (fg_tokenizer_encode) */

    max = 0;

    for (i = 0; i < em->n; i++) {
        max += in[i].text.data ? 3 * in[i].text.len + 8 : in[i].n_ids;
    }

    api->ids = ngx_palloc(api->request->pool, (max + 1) * sizeof(int32_t));
    if (api->ids == NULL) {
        return NGX_ERROR;
    }

    api->n_ids = 0;

    for (i = 0; i < em->n; i++) {
        em->off[i] = api->n_ids;

        if (in[i].text.data) {
            got = fg_tokenizer_encode(api->engine->tok, in[i].text.data,
                                      in[i].text.len, 0,
                                      api->ids + api->n_ids,
                                      3 * in[i].text.len + 8);
            if (got < 0) {
                return NGX_ERROR;
            }

            len = (uint32_t) got;

        } else {
            len = (uint32_t) in[i].n_ids;
            ngx_memcpy(api->ids + api->n_ids, in[i].ids,
                       len * sizeof(int32_t));

            if (ngx_http_fairgate_embed_ids(api, i, err) != NGX_OK) {
                return NGX_DECLINED;
            }
        }

        if (len == 0 || (context && len > context)) {
            fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST,
                             len ? "context_length_exceeded" : NULL, "input",
                             "This model's maximum context length is %u "
                             "tokens, however you requested %u tokens in "
                             "input[%u]. Please reduce your input.",
                             (unsigned) context, (unsigned) len,
                             (unsigned) i);
            return NGX_DECLINED;
        }

        api->n_ids += len;
        em->longest = ngx_max(em->longest, len);
    }

    em->off[em->n] = api->n_ids;

    return NGX_OK;
}


/* input i's token ids are the model's (the parse knew the vocabulary
 * only when the location names the engine) */

static ngx_int_t
ngx_http_fairgate_embed_ids(ngx_http_fairgate_api_t *api, uint32_t i,
    fg_oai_error_t *err)
{
    size_t           k;
    uint32_t         vocab;
    fg_oai_input_t  *in;

    in = &api->oai->inputs[i];
    vocab = fg_tokenizer_n_vocab(api->engine->tok);

    for (k = 0; k < in->n_ids; k++) {
        if (in->ids[k] < 0 || (uint32_t) in->ids[k] >= vocab) {
            fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, "invalid_value",
                             "input", "Invalid token id %d in input[%u]: "
                             "the vocabulary has %u tokens.",
                             (int) in->ids[k], (unsigned) i,
                             (unsigned) vocab);
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/* the engine computes embeddings, of the width asked for, if any */

static ngx_int_t
ngx_http_fairgate_embed_width(ngx_http_fairgate_api_t *api,
    const fg_shm_info_t *info, fg_oai_error_t *err)
{
    ngx_http_fairgate_engine_t  *e;

    e = api->engine;

    if (info->embd == 0) {
        fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, "model_not_supported",
                         "model", "The model `%.*s` is served here by an "
                         "engine (%s backend) that computes no embeddings.",
                         (int) ngx_min(e->id.len, 256), e->id.data,
                         info->backend);
        return NGX_DECLINED;
    }

    if (api->oai->dimensions && api->oai->dimensions != info->embd) {
        fg_oai_error_set(err, NGX_HTTP_BAD_REQUEST, "invalid_value",
                         "dimensions", "This model does not support "
                         "'dimensions' other than its width, %u: its "
                         "vectors are not trained to be truncated. Leave "
                         "'dimensions' out or set it to %u.",
                         (unsigned) info->embd, (unsigned) info->embd);
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* admitted: the first inputs submitted; NGX_DONE: open until the last */

ngx_int_t
ngx_http_fairgate_embed_start(ngx_http_fairgate_api_t *api)
{
    ngx_int_t                    rc;
    fg_oai_error_t               err;
    ngx_http_request_t          *r;
    const fg_shm_info_t         *info;
    ngx_http_fairgate_embed_t   *em;

    r = api->request;
    em = api->embed;

    api->handler = ngx_http_fairgate_embed_event;

    info = ngx_http_fairgate_engine_up(api->engine)
           ? fg_shm_client_info(api->engine->client) : NULL;

    /* the engine attached since the parse, or another one: asked again */
    if (info && ngx_http_fairgate_embed_width(api, info, &err) != NGX_OK) {
        api->report(api, NGX_HTTP_FAIRGATE_API_UNSENT, 0);
        return ngx_http_fairgate_send_oai_error(r, &err, 0);
    }

    if (info) {
        em->dim = info->embd;
        em->vecs = ngx_pcalloc(r->pool,
                               (size_t) em->n * em->dim * sizeof(float));
        if (em->vecs == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    rc = info ? ngx_http_fairgate_embed_more(api) : FG_SHM_EDOWN;

    if (em->running == 0) {
        api->report(api, NGX_HTTP_FAIRGATE_API_UNSENT, 0);

        fg_oai_error_set(&err, NGX_HTTP_SERVICE_UNAVAILABLE,
                         rc == FG_SHM_EFULL ? "engine_overloaded"
                                            : "engine_unavailable",
                         NULL, "%s",
                         rc == FG_SHM_EFULL
                         ? "The engine is behind; retry shortly."
                         : "The engine serving this model is not "
                           "available right now; retry shortly.");
        err.type = "server_error";

        return ngx_http_fairgate_send_oai_error(r, &err, 1);
    }

    ngx_log_debug5(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "fairgate submit: engine \"%V\" took embeddings %uL: "
                   "%uD inputs, %uD tokens, %uD at once",
                   &api->engine->name, (uint64_t) api->node.key, em->n,
                   api->n_ids, em->window);

    /* a client that leaves is noticed, and its inputs cancelled */
    r->read_event_handler = ngx_http_test_reading;

    return NGX_DONE;
}


/* inputs submitted while the window has room: FG_SHM_OK, or why not */

static ngx_int_t
ngx_http_fairgate_embed_more(ngx_http_fairgate_api_t *api)
{
    ngx_int_t                   rc;
    ngx_http_fairgate_embed_t  *em;

    em = api->embed;

    while (em->running < em->window && em->next < em->n) {
        rc = ngx_http_fairgate_engine_submit_input(api, em->next);

        if (rc != FG_SHM_OK) {
            return rc;
        }

        em->next++;
        em->running++;
    }

    return FG_SHM_OK;
}


/* an event of the engine for one of the inputs; NULL: the engine lost */

static void
ngx_http_fairgate_embed_event(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev)
{
    uint32_t                    i;
    fg_shm_vec_t                piece;
    ngx_http_fairgate_embed_t  *em;

    if (ev == NULL) {
        ngx_http_fairgate_embed_fail(api, NGX_HTTP_BAD_GATEWAY, "engine_lost",
                                     "The engine serving this model "
                                     "stopped while the request was "
                                     "running; it may be retried.");
        return;
    }

    em = api->embed;
    i = (uint32_t) (ev->req_id - api->node.key);

    if (em->state[i] != NGX_HTTP_FAIRGATE_EMBED_RUNNING) {
        return;
    }

    if (fg_shm_vec_get(ev, &piece)) {
        if (piece.offset + piece.n <= em->dim) {
            ngx_memcpy(em->vecs + (size_t) i * em->dim + piece.offset,
                       piece.v, piece.n * sizeof(float));
        }

        return;
    }

    if (ev->finish != FG_SHM_FINISH_NONE) {
        ngx_http_fairgate_embed_ended(api, ev, i);
    }
}


/* input i's end: the next one in, or the body once all are done */

static void
ngx_http_fairgate_embed_ended(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev, uint32_t i)
{
    ngx_int_t                   rc;
    ngx_http_fairgate_embed_t  *em;

    em = api->embed;

    switch (ev->finish) {

    case FG_SHM_FINISH_STOP:
        break;

    case FG_SHM_FINISH_REFUSED:
        em->state[i] = NGX_HTTP_FAIRGATE_EMBED_DONE;

        if (ev->error == FG_SHM_ERR_FULL) {
            ngx_http_fairgate_embed_fail(api, NGX_HTTP_SERVICE_UNAVAILABLE,
                                         "engine_overloaded",
                                         "The engine holds all the "
                                         "requests it can; retry shortly.");
            return;
        }

        if (ev->error == FG_SHM_ERR_CONTEXT || ev->error == FG_SHM_ERR_KV) {
            ngx_http_fairgate_embed_fail(api, NGX_HTTP_BAD_REQUEST,
                                         "context_length_exceeded",
                                         "An input does not fit the "
                                         "engine's context or KV cache.");
            return;
        }

        ngx_log_error(NGX_LOG_ERR, api->request->connection->log, 0,
                      "fairgate_engine \"%V\" refused an embedding: %s",
                      &api->engine->name, fg_shm_error_name(ev->error));

        ngx_http_fairgate_embed_fail(api, NGX_HTTP_BAD_GATEWAY,
                                     "engine_error",
                                     "The engine refused the request.");
        return;

    default:
        em->state[i] = NGX_HTTP_FAIRGATE_EMBED_DONE;
        ngx_http_fairgate_embed_fail(api, NGX_HTTP_BAD_GATEWAY,
                                     "engine_error",
                                     "The engine failed while computing "
                                     "these embeddings.");
        return;
    }

    em->state[i] = NGX_HTTP_FAIRGATE_EMBED_DONE;
    em->running--;
    em->done++;
    em->tokens += ev->n_prompt;

    if (em->done == em->n) {
        ngx_http_fairgate_engine_forget(api, 0);
        ngx_http_fairgate_embed_respond(api);
        return;
    }

    rc = ngx_http_fairgate_embed_more(api);

    /* a full ring is tried again as the next input ends */
    if (em->running == 0 || (rc != FG_SHM_OK && rc != FG_SHM_EFULL
                             && rc != FG_SHM_EAGAIN))
    {
        ngx_http_fairgate_embed_fail(api, NGX_HTTP_SERVICE_UNAVAILABLE,
                                     "engine_unavailable",
                                     "The engine serving this model did "
                                     "not take the rest of the inputs; "
                                     "retry shortly.");
    }
}


/* the whole body at once: usage reported, then sent */

static void
ngx_http_fairgate_embed_respond(ngx_http_fairgate_api_t *api)
{
    ngx_int_t            rc;
    ngx_chain_t         *cl;
    ngx_http_request_t  *r;

    r = api->request;

    api->usage.prompt_tokens = api->embed->tokens;
    api->usage.completion_tokens = 0;
    api->usage.cached_tokens = 0;

    /* what the tenant is settled with when the request is released */
    api->report(api, NGX_HTTP_FAIRGATE_API_DONE, 0);

    cl = ngx_http_fairgate_embed_body(api);
    if (cl == NULL) {
        ngx_http_fairgate_engine_end(api, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    rc = ngx_http_fairgate_send_body(r, NGX_HTTP_OK, cl);

    ngx_http_fairgate_engine_end(api, rc);
}


/*
 * {"object":"list","data":[items],"model":M,"usage":{...}}: the items in
 * input order, each vector as floats or, asked, base64 of its
 * little-endian float32 bytes, as OpenAI encodes them
 */

static ngx_chain_t *
ngx_http_fairgate_embed_body(ngx_http_fairgate_api_t *api)
{
    size_t                      size, b64_len;
    u_char                     *p;
    uint32_t                    i;
    ngx_str_t                   raw, b64, *model;
    ngx_buf_t                  *b;
    ngx_pool_t                 *pool;
    ngx_chain_t                *cl;
    ngx_http_fairgate_embed_t  *em;

    em = api->embed;
    pool = api->request->pool;
    model = &api->engine->id;

    raw.len = (size_t) em->dim * sizeof(float);
    b64_len = api->oai->base64 ? ngx_base64_encoded_length(raw.len) : 0;

    size = sizeof("{\"object\":\"list\",\"data\":[],\"model\":\"\","
                  "\"usage\":{\"prompt_tokens\":,\"total_tokens\":}}")
           + 2 * NGX_INT32_LEN + model->len
           + ngx_escape_json(NULL, model->data, model->len)
           + em->n * (FG_OAI_EMBED_ITEM_MAX(em->dim, b64_len) + 1);

    b = ngx_create_temp_buf(pool, size);
    b64.data = b64_len ? ngx_palloc(pool, b64_len) : NULL;

    if (b == NULL || (b64_len && b64.data == NULL)) {
        return NULL;
    }

    p = ngx_cpymem(b->last, "{\"object\":\"list\",\"data\":[",
                   sizeof("{\"object\":\"list\",\"data\":[") - 1);

    for (i = 0; i < em->n; i++) {
        if (i) {
            *p++ = ',';
        }

        if (b64_len) {
#if (NGX_HAVE_LITTLE_ENDIAN)
            raw.data = (u_char *) (em->vecs + (size_t) i * em->dim);
#else
#error "base64 embeddings are written for little-endian machines"
#endif
            ngx_encode_base64(&b64, &raw);
        }

        p += fg_oai_embed_item(i, em->vecs + (size_t) i * em->dim, em->dim,
                               (char *) b64.data, b64_len, (char *) p,
                               b->end - p);
    }

    p = ngx_cpymem(p, "],\"model\":\"", sizeof("],\"model\":\"") - 1);
    p = (u_char *) ngx_escape_json(p, model->data, model->len);
    p = ngx_sprintf(p, "\",\"usage\":{\"prompt_tokens\":%uD,"
                    "\"total_tokens\":%uD}}", em->tokens, em->tokens);

    b->last = p;

    cl = ngx_alloc_chain_link(pool);
    if (cl == NULL) {
        return NULL;
    }

    cl->buf = b;
    cl->next = NULL;

    ngx_str_set(&api->request->headers_out.content_type,
                "application/json");

    return cl;
}


/* a failure: the other inputs cancelled, an OpenAI error sent */

static void
ngx_http_fairgate_embed_fail(ngx_http_fairgate_api_t *api,
    ngx_uint_t status, const char *code, const char *message)
{
    ngx_int_t       rc;
    fg_oai_error_t  err;

    ngx_http_fairgate_engine_forget(api, 1);

    api->report(api, NGX_HTTP_FAIRGATE_API_FAILED, 0);

    fg_oai_error_set(&err, (int) status, code, NULL, "%s", message);

    if (status >= NGX_HTTP_INTERNAL_SERVER_ERROR) {
        err.type = "server_error";
    }

    rc = ngx_http_fairgate_send_oai_error(api->request, &err,
                                          status == NGX_HTTP_BAD_REQUEST
                                          ? 0 : 1);

    ngx_http_fairgate_engine_end(api, rc);
}

