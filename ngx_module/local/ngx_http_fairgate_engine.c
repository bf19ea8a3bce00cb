
/*
 * fairgate: "fairgate_engine" and "fairgate_engine_pass".
 *
 * At configuration time the model's GGUF file is opened once for its
 * tokenizer, chat template and context length; the workers share them
 * through fork (they are read-only).  The weights stay with the engine.
 *
 * Each worker makes its own client of the engine segment after the fork
 * (engine/shm/fg_shm_client.h): its wake-up socket is watched by the event
 * loop, and a timer ticks it, which beats the worker's heartbeat, notices
 * a dead or restarted engine and attaches again by itself.  Nothing here
 * waits on the engine.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_local.h"
#include "ngx_http_fairgate_tenants.h"


/* the client's tick: heartbeat, the engine's health, attaching */
#define NGX_HTTP_FAIRGATE_TICK        100
#define NGX_HTTP_FAIRGATE_DEAD_AFTER  2000

/* events read from the completion ring at once */
#define NGX_HTTP_FAIRGATE_EVENTS      64


static void ngx_http_fairgate_engine_cleanup(void *data);
static ngx_int_t ngx_http_fairgate_engine_load(ngx_conf_t *cf,
    ngx_http_fairgate_engine_t *e);
static void ngx_http_fairgate_engine_tick(ngx_event_t *ev);
static void ngx_http_fairgate_engine_read(ngx_event_t *ev);
static void ngx_http_fairgate_engine_events(ngx_http_fairgate_engine_t *e);
static void ngx_http_fairgate_engine_lost(ngx_http_fairgate_engine_t *e);
static void ngx_http_fairgate_engine_cancel(ngx_http_fairgate_engine_t *e,
    uint64_t id);
static void ngx_http_fairgate_engine_cancels(ngx_http_fairgate_engine_t *e);
static ngx_http_fairgate_api_t *ngx_http_fairgate_engine_lookup(
    ngx_http_fairgate_engine_t *e, uint64_t id);


char *
ngx_http_fairgate_engine(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_main_conf_t *fmcf = conf;

    u_char                       *p;
    ngx_str_t                    *value, s;
    ngx_uint_t                    i;
    ngx_msec_t                    ms;
    ngx_pool_cleanup_t           *cln;
    ngx_http_fairgate_engine_t   *e, **ep;

    value = cf->args->elts;

    e = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_engine_t));
    if (e == NULL) {
        return NGX_CONF_ERROR;
    }

    e->name = value[1];
    e->dead_after = NGX_HTTP_FAIRGATE_DEAD_AFTER;

    ep = fmcf->engines.elts;

    for (i = 0; i < fmcf->engines.nelts; i++) {
        if (ep[i]->name.len == e->name.len
            && ngx_strncmp(ep[i]->name.data, e->name.data, e->name.len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate fairgate_engine \"%V\"", &e->name);
            return NGX_CONF_ERROR;
        }
    }

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "shm=", 4) == 0) {
            s.data = value[i].data + 4;
            s.len = value[i].len - 4;

            /* shm_open() names start with one slash */

            e->shm.data = ngx_pnalloc(cf->pool, s.len + 2);
            if (e->shm.data == NULL) {
                return NGX_CONF_ERROR;
            }

            p = e->shm.data;

            if (s.len == 0 || s.data[0] != '/') {
                *p++ = '/';
            }

            p = ngx_cpymem(p, s.data, s.len);
            *p = '\0';
            e->shm.len = p - e->shm.data;

            if (s.len == 0 || e->shm.len > 200
                || ngx_strlchr(e->shm.data + 1, p, '/'))
            {
                goto invalid;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "model=", 6) == 0) {
            e->model.data = value[i].data + 6;
            e->model.len = value[i].len - 6;

            if (e->model.len == 0
                || ngx_conf_full_name(cf->cycle, &e->model, 0) != NGX_OK)
            {
                goto invalid;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "id=", 3) == 0) {
            e->id.data = value[i].data + 3;
            e->id.len = value[i].len - 3;

            if (e->id.len == 0 || e->id.len > 256) {
                goto invalid;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "dead_after=", 11) == 0) {
            s.data = value[i].data + 11;
            s.len = value[i].len - 11;

            ms = ngx_parse_time(&s, 0);

            if (ms == (ngx_msec_t) NGX_ERROR || ms < 200) {
                goto invalid;
            }

            e->dead_after = ms;
            continue;
        }

        goto invalid;
    }

    if (e->shm.len == 0 || e->model.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fairgate_engine \"%V\" needs shm= and model=",
                           &e->name);
        return NGX_CONF_ERROR;
    }

    if (e->id.len == 0) {
        /* the file's base name without ".gguf" */

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

        if (e->id.len == 0 || e->id.len > 256) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fairgate_engine \"%V\": no model id in "
                               "\"%V\", set id=", &e->name, &e->model);
            return NGX_CONF_ERROR;
        }
    }

    for (i = 0; i < fmcf->engines.nelts; i++) {
        if (ep[i]->id.len == e->id.len
            && ngx_strncmp(ep[i]->id.data, e->id.data, e->id.len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fairgate_engine \"%V\": model id \"%V\" is "
                               "served by \"%V\" already",
                               &e->name, &e->id, &ep[i]->name);
            return NGX_CONF_ERROR;
        }
    }

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

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\"", &value[i]);

    return NGX_CONF_ERROR;
}


/* the tokenizer is malloc()'d: freed with the cycle that loaded it */

static void
ngx_http_fairgate_engine_cleanup(void *data)
{
    ngx_http_fairgate_engine_t *e = data;

    if (e->tok) {
        fg_tokenizer_free(e->tok);
        e->tok = NULL;
    }
}


static ngx_int_t
ngx_http_fairgate_engine_load(ngx_conf_t *cf, ngx_http_fairgate_engine_t *e)
{
    char            err[256], key[160];
    size_t          n;
    uint32_t        ctxlen;
    fg_gguf_t      *g;
    fg_gguf_str_t   arch;

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

    if (fg_chat_template_from_model(&e->tmpl, g, e->tok, err, sizeof(err))
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fairgate_engine \"%V\": %s", &e->name, err);
        fg_gguf_close(g);
        return NGX_ERROR;
    }

    if (e->tmpl.has_template && !e->tmpl.recognised) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "fairgate_engine \"%V\": the chat template of "
                           "\"%V\" is of no known family, the fallback is "
                           "used", &e->name, &e->model);
    }

    /* the context length, for 400s before the engine is asked */

    ctxlen = 0;

    if (fg_gguf_get_str(g, "general.architecture", &arch, NULL, 0) == 0
        && arch.len < sizeof(key) - 32)
    {
        n = arch.len;
        ngx_memcpy(key, arch.data, n);
        ngx_memcpy(key + n, ".context_length", sizeof(".context_length"));

        if (fg_gguf_get_u32(g, key, &ctxlen, NULL, 0) != 0) {
            ctxlen = 0;
        }
    }

    e->context = ctxlen;
    e->max_piece = fg_tokenizer_max_piece(e->tok);

    fg_gguf_close(g);

    ngx_conf_log_error(NGX_LOG_INFO, cf, 0,
                       "fairgate_engine \"%V\": model \"%V\", vocabulary %uD, "
                       "context %uD, chat template %s", &e->name, &e->id,
                       fg_tokenizer_n_vocab(e->tok), e->context,
                       fg_chat_family_name(e->tmpl.family));

    return NGX_OK;
}


char *
ngx_http_fairgate_engine_pass(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t *flcf = conf;

    ngx_str_t                      *value;
    ngx_uint_t                      i;
    ngx_http_core_loc_conf_t       *clcf;
    ngx_http_fairgate_engine_t    **ep;
    ngx_http_fairgate_main_conf_t  *fmcf;

    if (flcf->engine_pass) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 2) {
        fmcf = ngx_http_conf_get_module_main_conf(cf,
                                                  ngx_http_fairgate_module);
        ep = fmcf->engines.elts;

        for (i = 0; i < fmcf->engines.nelts; i++) {
            if (ep[i]->name.len == value[1].len
                && ngx_strncmp(ep[i]->name.data, value[1].data,
                               value[1].len) == 0)
            {
                flcf->engine = ep[i];
                break;
            }
        }

        if (flcf->engine == NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "unknown fairgate_engine \"%V\" (it must be "
                               "defined in http before)", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    flcf->engine_pass = 1;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_fairgate_api_handler;

    return NGX_CONF_OK;
}


ngx_http_fairgate_engine_t *
ngx_http_fairgate_engine_find(ngx_http_fairgate_main_conf_t *fmcf,
    const char *model, size_t len)
{
    ngx_uint_t                    i;
    ngx_http_fairgate_engine_t  **ep;

    ep = fmcf->engines.elts;

    for (i = 0; i < fmcf->engines.nelts; i++) {
        if (ep[i]->id.len == len
            && ngx_strncmp(ep[i]->id.data, model, len) == 0)
        {
            return ep[i];
        }
    }

    return NULL;
}


ngx_int_t
ngx_http_fairgate_engine_init_process(ngx_cycle_t *cycle)
{
    char                            err[256];
    ngx_uint_t                      i;
    ngx_connection_t               *c;
    ngx_http_fairgate_engine_t    **ep, *e;
    ngx_http_fairgate_main_conf_t  *fmcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    fmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_fairgate_module);
    if (fmcf == NULL) {
        return NGX_OK;
    }

    ep = fmcf->engines.elts;

    for (i = 0; i < fmcf->engines.nelts; i++) {
        e = ep[i];

        e->log = cycle->log;
        e->next_id = ((uint64_t) ngx_random() << 20) + 1;
        ngx_rbtree_init(&e->rbtree, &e->sentinel, ngx_rbtree_insert_value);

        if (ngx_array_init(&e->cancels, cycle->pool, 8, sizeof(uint64_t))
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        e->client = fg_shm_client_create((char *) e->shm.data, e->dead_after,
                                         err, sizeof(err));
        if (e->client == NULL) {
            /* the worker serves 503s for this engine; it does not die */
            ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                          "fairgate_engine \"%V\": %s", &e->name, err);
            continue;
        }

        c = ngx_get_connection(fg_shm_client_fd(e->client), cycle->log);
        if (c == NULL) {
            fg_shm_client_destroy(e->client);
            e->client = NULL;
            continue;
        }

        c->data = e;
        c->read->handler = ngx_http_fairgate_engine_read;
        c->read->log = cycle->log;
        c->write->log = cycle->log;

        if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
            c->fd = (ngx_socket_t) -1;
            ngx_free_connection(c);
            fg_shm_client_destroy(e->client);
            e->client = NULL;
            continue;
        }

        e->conn = c;
        e->down_since = ngx_current_msec;

        e->tick.handler = ngx_http_fairgate_engine_tick;
        e->tick.data = e;
        e->tick.log = cycle->log;
        e->tick.cancelable = 1;

        /* attach at once: the first requests need not wait for a tick */
        ngx_http_fairgate_engine_tick(&e->tick);
    }

    return NGX_OK;
}


void
ngx_http_fairgate_engine_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                      i;
    ngx_http_fairgate_engine_t    **ep, *e;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_fairgate_module);
    if (fmcf == NULL) {
        return;
    }

    ep = fmcf->engines.elts;

    for (i = 0; i < fmcf->engines.nelts; i++) {
        e = ep[i];

        if (e->tick.timer_set) {
            ngx_del_timer(&e->tick);
        }

        if (e->conn) {
            if (e->conn->read->active) {
                ngx_del_event(e->conn->read, NGX_READ_EVENT, 0);
            }

            /* the client closes its own socket */
            e->conn->fd = (ngx_socket_t) -1;
            ngx_free_connection(e->conn);
            e->conn = NULL;
        }

        if (e->client) {
            /* detaching cancels what this worker still had open */
            fg_shm_client_destroy(e->client);
            e->client = NULL;
        }
    }
}


static void
ngx_http_fairgate_engine_tick(ngx_event_t *ev)
{
    ngx_http_fairgate_engine_t *e = ev->data;

    int                   rc;
    char                  err[256];
    const fg_shm_info_t  *info;

    err[0] = '\0';

    rc = fg_shm_client_tick(e->client, err, sizeof(err));

    switch (rc) {

    case FG_SHM_EV_LOST:
        e->lost++;
        e->down_since = ngx_current_msec;

        ngx_log_error(NGX_LOG_WARN, e->log, 0,
                      "fairgate_engine \"%V\": the engine of generation "
                      "%uL is lost", &e->name, e->generation);

        ngx_http_fairgate_engine_lost(e);
        break;

    case FG_SHM_EV_BACK:
        info = fg_shm_client_info(e->client);
        e->generation = info->generation;
        e->warned = 0;

        ngx_log_error(NGX_LOG_NOTICE, e->log, 0,
                      "fairgate_engine \"%V\": attached to \"%V\" "
                      "(engine %s, generation %uL, pid %L, %s backend, "
                      "context %uD, %uD KV blocks of %uD, batch %uD)",
                      &e->name, &e->shm, info->model, info->generation,
                      info->engine_pid, info->backend, info->context,
                      info->kv_blocks, info->block_size, info->max_batch);
        break;

    default:
        /* said once until attached: the engine may just be starting */

        if (err[0] && !e->warned && !fg_shm_client_attached(e->client)) {
            e->warned = 1;
            ngx_log_error(NGX_LOG_WARN, e->log, 0,
                          "fairgate_engine \"%V\" cannot attach to \"%V\" "
                          "yet: %s", &e->name, &e->shm, err);
        }

        break;
    }

    /* cancels the ring's lock or room refused, again */

    if (e->cancels.nelts) {
        ngx_http_fairgate_engine_cancels(e);
    }

    /* a wake-up the edge-triggered socket missed is read here */
    ngx_http_fairgate_engine_events(e);

    if (!ngx_exiting || e->rbtree.root != e->rbtree.sentinel) {
        ngx_add_timer(&e->tick, NGX_HTTP_FAIRGATE_TICK);
    }
}


static void
ngx_http_fairgate_engine_read(ngx_event_t *ev)
{
    ngx_connection_t  *c;

    c = ev->data;

    ngx_http_fairgate_engine_events(c->data);
}


static void
ngx_http_fairgate_engine_events(ngx_http_fairgate_engine_t *e)
{
    size_t                    i, n;
    fg_shm_comp_t             ev[NGX_HTTP_FAIRGATE_EVENTS];
    ngx_http_fairgate_api_t  *api;

    if (e->client == NULL) {
        return;
    }

    do {
        n = fg_shm_client_poll(e->client, ev, NGX_HTTP_FAIRGATE_EVENTS);

        for (i = 0; i < n; i++) {

            /* a request ended here (cancelled) may still have events */

            api = ngx_http_fairgate_engine_lookup(e, ev[i].req_id);

            if (api) {
                ngx_http_fairgate_stream_event(api, &ev[i]);
            }
        }

    } while (n == NGX_HTTP_FAIRGATE_EVENTS);
}


/* every open request of this worker ends with an error */

static void
ngx_http_fairgate_engine_lost(ngx_http_fairgate_engine_t *e)
{
    ngx_rbtree_node_t        *node;
    ngx_http_fairgate_api_t  *api;

    while (e->rbtree.root != e->rbtree.sentinel) {
        node = ngx_rbtree_min(e->rbtree.root, e->rbtree.sentinel);
        api = (ngx_http_fairgate_api_t *) node;

        ngx_http_fairgate_engine_forget(api, 0);
        ngx_http_fairgate_stream_fail(api, NGX_HTTP_BAD_GATEWAY,
                                      "engine_lost",
                                      "The engine serving this model "
                                      "stopped while the request was "
                                      "running; it may be retried.");
    }
}


ngx_int_t
ngx_http_fairgate_engine_submit(ngx_http_fairgate_api_t *api)
{
    int                          rc;
    fg_shm_submit_t              sub;
    fg_oai_request_t            *oai;
    ngx_http_fairgate_engine_t  *e;

    e = api->engine;
    oai = api->oai;

    if (e->client == NULL || !fg_shm_client_attached(e->client)) {
        return FG_SHM_EDOWN;
    }

    ngx_memzero(&sub, sizeof(fg_shm_submit_t));

    sub.req_id = e->next_id++;
    sub.prompt = api->ids;
    sub.n_prompt = api->n_ids;
    sub.max_tokens = api->max_tokens;
    sub.temperature = oai->temperature;
    sub.top_p = oai->top_p;
    sub.top_k = oai->top_k;
    sub.seed = oai->seed;
    sub.has_seed = oai->has_seed;
    sub.ignore_eos = oai->ignore_eos;

    rc = fg_shm_client_submit(e->client, &sub);

    if (rc != FG_SHM_OK) {
        return rc;
    }

    api->node.key = (ngx_rbtree_key_t) sub.req_id;
    ngx_rbtree_insert(&e->rbtree, &api->node);
    api->submitted = 1;
    api->submitted_at = ngx_current_msec;

    return FG_SHM_OK;
}


/*
 * The request leaves the worker's table: nothing more of the engine's
 * reaches it; cancel asks the engine to free its sequence now.
 */

void
ngx_http_fairgate_engine_forget(ngx_http_fairgate_api_t *api,
    ngx_uint_t cancel)
{
    uint64_t                     id;
    ngx_http_fairgate_engine_t  *e;

    if (!api->submitted) {
        return;
    }

    e = api->engine;
    api->submitted = 0;

    /* ngx_rbtree_delete() clears the key */
    id = api->node.key;

    ngx_rbtree_delete(&e->rbtree, &api->node);

    if (cancel) {
        ngx_http_fairgate_engine_cancel(e, id);
    }
}


/*
 * A cancel must reach the engine, or the sequence holds its KV blocks to
 * its end: one the ring's lock or room refuses is retried at each tick.
 */

static void
ngx_http_fairgate_engine_cancel(ngx_http_fairgate_engine_t *e, uint64_t id)
{
    int        rc;
    uint64_t  *p;

    if (e->client == NULL || !fg_shm_client_attached(e->client)) {
        /* a lost engine frees everything; a new one never had it */
        return;
    }

    rc = fg_shm_client_cancel(e->client, id);
    if (rc != FG_SHM_EAGAIN && rc != FG_SHM_EFULL) {
        return;
    }

    p = ngx_array_push(&e->cancels);

    if (p) {
        *p = id;
    }
}


static void
ngx_http_fairgate_engine_cancels(ngx_http_fairgate_engine_t *e)
{
    int          rc;
    uint64_t    *id;
    ngx_uint_t   i, n;

    id = e->cancels.elts;
    n = 0;

    for (i = 0; i < e->cancels.nelts; i++) {

        if (e->client == NULL || !fg_shm_client_attached(e->client)) {
            break;
        }

        rc = fg_shm_client_cancel(e->client, id[i]);

        if (rc == FG_SHM_EAGAIN || rc == FG_SHM_EFULL) {
            id[n++] = id[i];
        }
    }

    e->cancels.nelts = n;
}


static ngx_http_fairgate_api_t *
ngx_http_fairgate_engine_lookup(ngx_http_fairgate_engine_t *e, uint64_t id)
{
    ngx_rbtree_key_t    key;
    ngx_rbtree_node_t  *node, *sentinel;

    key = (ngx_rbtree_key_t) id;
    node = e->rbtree.root;
    sentinel = e->rbtree.sentinel;

    while (node != sentinel) {

        if (key < node->key) {
            node = node->left;
            continue;
        }

        if (key > node->key) {
            node = node->right;
            continue;
        }

        return (ngx_http_fairgate_api_t *) node;
    }

    return NULL;
}
