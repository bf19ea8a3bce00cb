
/*
 * fairgate: the engines a zone feeds in local mode, D2LPM's workers.
 *
 * A zone keeps a slot for each fairgate_engine its requests may go to, by
 * name: the engine's capacity as it publishes it, what the zone runs on
 * it, what it was sent and found cached.  A request of local mode names
 * the engines that may serve it (its model's group, or the location's one
 * engine) and brings its prompt's block hashes; dispatch asks the policy
 * core for the next request and its engine (fg_sched_dispatch_to()),
 * which asks here whether a request fits an engine (it may serve it, it
 * has room, it is up as this worker sees it), how many of its prompt's
 * tokens the engine holds cached (its index in its segment, read through
 * this worker's client without a lock), and how loaded it is.  The
 * engines themselves are local mode's: the zone asks them through the
 * handlers local mode installs (zone->engine_ops), never by name.
 *
 * The policy core's last engine index is the zone's upstream of drop-in
 * mode: a request that names no engine goes there, under the zone's
 * inflight= limits, which bound every engine's requests too.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_zone_int.h"


static ngx_int_t ngx_http_fairgate_engines_slot(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_candidate_t *cand);
static int ngx_http_fairgate_engines_fits(fg_request_t *req, uint32_t e,
    void *data);
static ngx_uint_t ngx_http_fairgate_engines_any_up(
    ngx_http_fairgate_zone_t *zone, uint64_t engines);
static ngx_uint_t ngx_http_fairgate_engines_up(ngx_http_fairgate_zone_t *zone,
    ngx_uint_t e);
static uint32_t ngx_http_fairgate_engines_match(fg_request_t *req, uint32_t e,
    void *data);
static double ngx_http_fairgate_engines_load(uint32_t e, void *data);
static ngx_http_fairgate_engine_t *ngx_http_fairgate_engines_local(
    ngx_http_fairgate_zone_t *zone, ngx_uint_t e);


/* a request dispatched to one of the zone's engines, not the upstream (an
 * upstream's index is the engines' count then, which may grow after) */
#define ngx_http_fairgate_engines_on(node)                                    \
    ((node)->req.engine < FG_SCHED_MAX_ENGINES                                \
     && ((node)->engines & ((uint64_t) 1 << (node)->req.engine)))


/*
 * A request's engines, as slots of the zone (made on first use), their
 * capacity as its worker last saw it, and its block hashes copied into
 * the zone.  NGX_ERROR: no slot or memory left.
 */

ngx_int_t
ngx_http_fairgate_engines_bind_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_candidate_t *cand,
    ngx_uint_t n, uint64_t *hashes, uint32_t n_hashes, uint32_t block_size)
{
    size_t                        size;
    ngx_int_t                     slot;
    ngx_uint_t                    i;
    ngx_http_fairgate_zengine_t  *ze;
    ngx_http_fairgate_shctx_t    *sh;

    sh = zone->sh;

    for (i = 0; i < n; i++) {
        slot = ngx_http_fairgate_engines_slot(zone, &cand[i]);

        if (slot == NGX_ERROR) {
            return NGX_ERROR;
        }

        node->engines |= (uint64_t) 1 << slot;

        if (cand[i].seats == 0) {
            continue;
        }

        /* the capacity summed over the engines, for OIT and Retry-After */

        ze = &sh->engines[slot];

        sh->local_inflight += cand[i].seats - ze->seats;
        sh->local_tokens += cand[i].tokens - ze->tokens;

        ze->seats = cand[i].seats;
        ze->tokens = cand[i].tokens;
    }

    if (n_hashes == 0) {
        return NGX_OK;
    }

    size = n_hashes * sizeof(uint64_t);

    node->hashes = ngx_http_fairgate_room_alloc(zone, size);
    if (node->hashes == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(node->hashes, hashes, size);
    node->n_hashes = n_hashes;
    node->block_size = block_size;

    return NGX_OK;
}


/* the engine's slot by its name, made if new */

static ngx_int_t
ngx_http_fairgate_engines_slot(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_candidate_t *cand)
{
    ngx_uint_t                    i;
    ngx_http_fairgate_zengine_t  *ze;
    ngx_http_fairgate_shctx_t    *sh;

    sh = zone->sh;

    for (i = 0; i < sh->n_engines; i++) {
        ze = &sh->engines[i];

        if (ze->len == cand->name.len
            && ngx_strncmp(ze->name, cand->name.data, ze->len) == 0)
        {
            return i;
        }
    }

    if (sh->n_engines == NGX_HTTP_FAIRGATE_ENGINES
        || cand->name.len >= NGX_HTTP_FAIRGATE_ENGINE_NAME)
    {
        return NGX_ERROR;
    }

    ze = &sh->engines[sh->n_engines];

    ngx_memzero(ze, sizeof(ngx_http_fairgate_zengine_t));
    ngx_memcpy(ze->name, cand->name.data, cand->name.len);
    ze->len = cand->name.len;

    return sh->n_engines++;
}


void
ngx_http_fairgate_engines_unbind_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node)
{
    if (node->hashes) {
        ngx_slab_free_locked(zone->shpool, node->hashes);
        node->hashes = NULL;
        node->n_hashes = 0;
    }
}


/* the policy core's questions about the zone's engines, for one dispatch */

void
ngx_http_fairgate_engines_init(ngx_http_fairgate_zone_t *zone,
    fg_sched_engines_t *engines)
{
    engines->n_engines = zone->sh->n_engines + 1;
    engines->match = ngx_http_fairgate_engines_match;
    engines->fits = ngx_http_fairgate_engines_fits;
    engines->load = ngx_http_fairgate_engines_load;
    engines->data = zone;
}


/*
 * Room for the request: the zone's own limits always; then the engine's
 * batch seats and KV positions, or, for a request of drop-in mode, the
 * upstream alone.  A request larger than the whole token capacity still
 * goes when nothing else runs there, or it would block the queue for
 * good.
 */

static int
ngx_http_fairgate_engines_fits(fg_request_t *req, uint32_t e, void *data)
{
    ngx_http_fairgate_zone_t *zone = data;

    ngx_http_fairgate_node_t     *node;
    ngx_http_fairgate_zengine_t  *ze;
    ngx_http_fairgate_shctx_t    *sh;

    sh = zone->sh;
    node = ngx_http_fairgate_node(req);

    if (sh->inflight && sh->running >= sh->inflight) {
        return 0;
    }

    if (sh->inflight_tokens && sh->running
        && sh->running_tokens + node->reserved > sh->inflight_tokens)
    {
        return 0;
    }

    if (e == sh->n_engines) {
        return node->engines == 0;
    }

    if (!(node->engines & ((uint64_t) 1 << e))) {
        return 0;
    }

    ze = &sh->engines[e];

    if (ze->seats && ze->running >= ze->seats) {
        return 0;
    }

    if (ze->tokens && ze->running
        && ze->running_tokens + node->reserved > ze->tokens)
    {
        return 0;
    }

    if (ngx_http_fairgate_engines_up(zone, e)) {
        return 1;
    }

    /*
     * An engine this worker finds down would only fail the request: it
     * goes to another of its engines if one is up, and else is let go
     * here, to be answered 503 at once rather than wait in the queue.
     */

    return !ngx_http_fairgate_engines_any_up(zone, node->engines);
}


static ngx_uint_t
ngx_http_fairgate_engines_any_up(ngx_http_fairgate_zone_t *zone,
    uint64_t engines)
{
    ngx_uint_t  e;

    for (e = 0; e < zone->sh->n_engines; e++) {
        if ((engines & ((uint64_t) 1 << e))
            && ngx_http_fairgate_engines_up(zone, e))
        {
            return 1;
        }
    }

    return 0;
}


/* an engine slot's engine is attached, as this worker sees it */

static ngx_uint_t
ngx_http_fairgate_engines_up(ngx_http_fairgate_zone_t *zone, ngx_uint_t e)
{
    ngx_http_fairgate_engine_t  *engine;

    engine = ngx_http_fairgate_engines_local(zone, e);

    return engine != NULL && zone->engine_ops->up(engine);
}


/*
 * The request's prompt tokens the engine holds cached, in whole blocks
 * short of the last prompt token (which the engine always computes).
 */

static uint32_t
ngx_http_fairgate_engines_match(fg_request_t *req, uint32_t e, void *data)
{
    ngx_http_fairgate_zone_t *zone = data;

    uint32_t                     blocks, most;
    ngx_http_fairgate_node_t    *node;
    ngx_http_fairgate_engine_t  *engine;

    node = ngx_http_fairgate_node(req);

    if (e >= zone->sh->n_engines || node->n_hashes == 0
        || req->input_tokens == 0)
    {
        return 0;
    }

    engine = ngx_http_fairgate_engines_local(zone, e);

    if (engine == NULL) {
        return 0;
    }

    most = (req->input_tokens - 1) / node->block_size;

    blocks = zone->engine_ops->prefix(engine, node->hashes,
                                      ngx_min(node->n_hashes, most),
                                      node->block_size);

    return blocks * node->block_size;
}


/* requests running per batch seat (the upstream's: per inflight=) */

static double
ngx_http_fairgate_engines_load(uint32_t e, void *data)
{
    ngx_http_fairgate_zone_t *zone = data;

    ngx_http_fairgate_zengine_t  *ze;
    ngx_http_fairgate_shctx_t    *sh;

    sh = zone->sh;

    if (e == sh->n_engines) {
        return sh->inflight ? (double) sh->running / sh->inflight
                            : (double) sh->running;
    }

    ze = &sh->engines[e];

    return ze->seats ? (double) ze->running / ze->seats
                     : (double) ze->running;
}


/*
 * This worker's fairgate_engine of an engine slot, NULL if it has none
 * (or before local mode has installed its handlers: nothing is kept then)
 */

static ngx_http_fairgate_engine_t *
ngx_http_fairgate_engines_local(ngx_http_fairgate_zone_t *zone, ngx_uint_t e)
{
    ngx_http_fairgate_zengine_t  *ze;

    if (zone->engine_ops == NULL) {
        return NULL;
    }

    if (!(zone->engine_found & ((uint64_t) 1 << e))) {
        ze = &zone->sh->engines[e];

        zone->engine[e] = zone->engine_ops->get(ze->name, ze->len);
        zone->engine_found |= (uint64_t) 1 << e;
    }

    return zone->engine[e];
}


/* a request was dispatched to its engine: it holds a seat there */

void
ngx_http_fairgate_engines_start_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node)
{
    ngx_http_fairgate_zengine_t  *ze;

    if (!ngx_http_fairgate_engines_on(node)) {
        return;
    }

    ze = &zone->sh->engines[node->req.engine];

    ze->running++;
    ze->running_tokens += node->reserved;
    ze->dispatched++;
    ze->prompt_tokens += node->req.input_tokens;
    ze->matched_tokens += node->req.cached_tokens;
}


void
ngx_http_fairgate_engines_end_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node)
{
    ngx_http_fairgate_zengine_t  *ze;

    if (!ngx_http_fairgate_engines_on(node)) {
        return;
    }

    ze = &zone->sh->engines[node->req.engine];

    ze->running--;
    ze->running_tokens -= node->reserved;
}


/*
 * The engine a dispatched request goes to, in the owner's process: read
 * without the mutex, as the dispatch set it before handing the request
 * over, and a slot's name never changes.
 */

ngx_http_fairgate_engine_t *
ngx_http_fairgate_engines_chosen(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node)
{
    if (!ngx_http_fairgate_engines_on(node)) {
        return NULL;
    }

    return ngx_http_fairgate_engines_local(zone, node->req.engine);
}


/* the engine said how much of the prompt it found cached */

void
ngx_http_fairgate_engines_cached_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node, uint32_t cached)
{
    ngx_http_fairgate_shctx_t  *sh;

    sh = zone->sh;

    if (node->cached_set || node->req.state != FG_REQ_RUNNING) {
        return;
    }

    node->cached_set = 1;

    fg_sched_cached(sh->sched, &node->req, cached);

    sh->cached_tokens += cached;

    if (ngx_http_fairgate_engines_on(node)) {
        sh->engines[node->req.engine].cached_tokens += cached;
    }
}
