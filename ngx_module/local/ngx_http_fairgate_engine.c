
/*
 * fairgate: each worker's client of an engine (fairgate_engine).
 *
 * Each worker makes its own client of the engine segment after the fork
 * (engine/shm/fg_shm_client.h): its wake-up socket is watched by the event
 * loop, and a timer ticks it, which beats the worker's heartbeat, notices
 * a dead or restarted engine and attaches again by itself.  Nothing here
 * waits on the engine.  A request's events go to its api->handler; the
 * zones, which route among the engines, ask them through the handlers
 * installed in each at the worker's start (ngx_http_fairgate_engine_ops).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_local_int.h"


/* the client's tick: heartbeat, the engine's health, attaching */
#define NGX_HTTP_FAIRGATE_TICK        100

/* events read from the completion ring at once */
#define NGX_HTTP_FAIRGATE_EVENTS      64


static void ngx_http_fairgate_engine_tick(ngx_event_t *ev);
static void ngx_http_fairgate_engine_read(ngx_event_t *ev);
static void ngx_http_fairgate_engine_events(ngx_http_fairgate_engine_t *e);
static void ngx_http_fairgate_engine_lost(ngx_http_fairgate_engine_t *e);
static void ngx_http_fairgate_engine_cancel(ngx_http_fairgate_engine_t *e,
    uint64_t id);
static void ngx_http_fairgate_engine_cancels(ngx_http_fairgate_engine_t *e);
static ngx_http_fairgate_api_t *ngx_http_fairgate_engine_lookup(
    ngx_http_fairgate_engine_t *e, uint64_t id);
static ngx_http_fairgate_engine_t *ngx_http_fairgate_engine_get(u_char *name,
    size_t len);


/* what the zones ask of this worker's engines when they route */
static ngx_http_fairgate_engine_ops_t  ngx_http_fairgate_engine_ops = {
    ngx_http_fairgate_engine_get,
    ngx_http_fairgate_engine_up,
    ngx_http_fairgate_engine_prefix
};


ngx_int_t
ngx_http_fairgate_engine_init_process(ngx_cycle_t *cycle)
{
    char                            err[256];
    ngx_uint_t                      i;
    ngx_connection_t               *c;
    ngx_http_fairgate_zone_t      **zone;
    ngx_http_fairgate_engine_t    **ep, *e;
    ngx_http_fairgate_main_conf_t  *fmcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    fmcf = ngx_http_fairgate_cycle_conf(cycle);
    if (fmcf == NULL) {
        return NGX_OK;
    }

    /* the zones' routing asks this worker's engines from now on */

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        zone[i]->engine_ops = &ngx_http_fairgate_engine_ops;
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

    fmcf = ngx_http_fairgate_cycle_conf(cycle);
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
                      info->engine_pid, info->backend, info->shape.context,
                      info->shape.kv_blocks, info->shape.block_size,
                      info->shape.max_batch);
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

    /* while requests are in flight the tick is not cancelable (submit) */
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
                api->handler(api, &ev[i]);
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
        api->handler(api, NULL);
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
    sub.frequency_penalty = oai->frequency_penalty;
    sub.presence_penalty = oai->presence_penalty;
    sub.repetition_penalty = oai->repetition_penalty;
    sub.min_p = oai->min_p;
    sub.bias_id = oai->bias_id;
    sub.bias = oai->bias;
    sub.n_bias = (uint32_t) oai->n_bias;
    sub.top_logprobs = oai->top_logprobs;
    sub.grammar = oai->grammar.data;
    sub.n_grammar = (uint32_t) oai->grammar.len;

    /* best_of: candidates ranked by their tokens' log-probabilities */
    sub.n_choices = ngx_max(oai->n, oai->best_of);
    sub.logprobs = oai->logprobs || oai->best_of > oai->n;
    sub.prompt_lp = oai->logprobs && oai->echo;

    /* the reader's expectations, for the engine's --sched andes; 0: none
     * given, the engine's defaults */
    sub.ttft_target = (float) api->qoe_ttft / 1000;
    sub.tokens_per_s = (float) api->qoe_speed;

    rc = fg_shm_client_submit(e->client, &sub);

    if (rc != FG_SHM_OK) {
        return rc;
    }

    api->node.key = (ngx_rbtree_key_t) sub.req_id;
    ngx_rbtree_insert(&e->rbtree, &api->node);
    e->open++;

    /*
     * a worker quitting gracefully waits only for timers not cancelable:
     * while a request is in flight the tick holds it, or the answers
     * would be cut ("open socket left")
     */
    e->tick.cancelable = 0;
    api->submitted = 1;
    api->submitted_at = ngx_current_msec;

    return FG_SHM_OK;
}


/*
 * Input i of an embeddings request, under the id node.key + i: the
 * request takes n ids at its first submission, and the table holds it
 * once, under the first (ngx_http_fairgate_engine_lookup() finds it from
 * any of them).
 */

ngx_int_t
ngx_http_fairgate_engine_submit_input(ngx_http_fairgate_api_t *api,
    uint32_t i)
{
    int                          rc;
    fg_shm_submit_t              sub;
    ngx_http_fairgate_embed_t   *em;
    ngx_http_fairgate_engine_t  *e;

    e = api->engine;
    em = api->embed;

    if (e->client == NULL || !fg_shm_client_attached(e->client)) {
        return FG_SHM_EDOWN;
    }

    ngx_memzero(&sub, sizeof(fg_shm_submit_t));

    sub.req_id = (api->submitted ? (uint64_t) api->node.key : e->next_id)
                 + i;
    sub.prompt = api->ids + em->off[i];
    sub.n_prompt = em->off[i + 1] - em->off[i];
    sub.embed = FG_SHM_EMBED_MEAN;
    sub.ttft_target = (float) api->qoe_ttft / 1000;
    sub.tokens_per_s = (float) api->qoe_speed;

    rc = fg_shm_client_submit(e->client, &sub);

    if (rc != FG_SHM_OK) {
        return rc;
    }

    em->state[i] = NGX_HTTP_FAIRGATE_EMBED_RUNNING;

    if (api->submitted) {
        return FG_SHM_OK;
    }

    api->node.key = (ngx_rbtree_key_t) e->next_id;
    e->next_id += em->n;
    ngx_rbtree_insert(&e->rbtree, &api->node);
    e->open++;

    e->tick.cancelable = 0;
    api->submitted = 1;
    api->submitted_at = ngx_current_msec;

    return FG_SHM_OK;
}


/*
 * The request leaves the worker's table: nothing more of the engine's
 * reaches it; cancel asks the engine to free its sequence now (each
 * running input's, for embeddings).
 */

void
ngx_http_fairgate_engine_forget(ngx_http_fairgate_api_t *api,
    ngx_uint_t cancel)
{
    uint32_t                     i;
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
    e->open--;

    if (e->rbtree.root == e->rbtree.sentinel) {
        e->tick.cancelable = 1;
    }

    if (!cancel) {
        return;
    }

    if (api->embed == NULL) {
        ngx_http_fairgate_engine_cancel(e, id);
        return;
    }

    for (i = 0; i < api->embed->n; i++) {
        if (api->embed->state[i] == NGX_HTTP_FAIRGATE_EMBED_RUNNING) {
            ngx_http_fairgate_engine_cancel(e, id + i);
        }
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


/* the request of an id: the one under the largest key not above it, if
 * the id is one of its own (an embeddings request has n of them) */

static ngx_http_fairgate_api_t *
ngx_http_fairgate_engine_lookup(ngx_http_fairgate_engine_t *e, uint64_t id)
{
    ngx_rbtree_key_t          key;
    ngx_rbtree_node_t        *node, *sentinel, *floor;
    ngx_http_fairgate_api_t  *api;

    key = (ngx_rbtree_key_t) id;
    node = e->rbtree.root;
    sentinel = e->rbtree.sentinel;
    floor = NULL;

    while (node != sentinel) {

        if (key < node->key) {
            node = node->left;
            continue;
        }

        if (key == node->key) {
            return (ngx_http_fairgate_api_t *) node;
        }

        floor = node;
        node = node->right;
    }

    api = (ngx_http_fairgate_api_t *) floor;

    if (api == NULL || api->embed == NULL
        || key - floor->key >= api->embed->n)
    {
        return NULL;
    }

    return api;
}


/* the fairgate_engine of this name in this worker's configuration */

static ngx_http_fairgate_engine_t *
ngx_http_fairgate_engine_get(u_char *name, size_t len)
{
    ngx_str_t                       s;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(ngx_cycle);
    if (fmcf == NULL) {
        return NULL;
    }

    s.len = len;
    s.data = name;

    return ngx_http_fairgate_engine_named(fmcf, &s, 0);
}


ngx_uint_t
ngx_http_fairgate_engine_up(ngx_http_fairgate_engine_t *e)
{
    return e != NULL && e->client != NULL
           && fg_shm_client_attached(e->client);
}


/* leading blocks of a prompt the engine's prefix cache holds */

uint32_t
ngx_http_fairgate_engine_prefix(ngx_http_fairgate_engine_t *e,
    const uint64_t *hashes, uint32_t n, uint32_t block_size)
{
    if (!ngx_http_fairgate_engine_up(e) || n == 0
        || fg_shm_client_info(e->client)->shape.block_size != block_size)
    {
        return 0;
    }

    return fg_shm_client_prefix_match(e->client, hashes, n);
}


/*
 * A request's end from outside its own events (an engine's event, a
 * timer): finalized once, and the posted requests run, as nginx's own
 * handlers of such events do.
 */

void
ngx_http_fairgate_engine_end(ngx_http_fairgate_api_t *api, ngx_int_t rc)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    r = api->request;
    c = r->connection;

    if (api->done) {
        return;
    }

    api->done = 1;

    r->read_event_handler = ngx_http_block_reading;

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}
