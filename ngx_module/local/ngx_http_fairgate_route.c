
/*
 * fairgate: which engine of a model's group serves a request of local
 * mode.
 *
 * Engines of one model id form a group (several fairgate_engine lines with
 * one id=: one engine per GPU, or several CPU engines).  Behind a fairgate
 * zone the zone decides at dispatch, by its route= (the prefix each
 * engine holds cached, their load; zone/ngx_http_fairgate_engines.c):
 * this file gives it, through the glue that admits the request, the
 * request's candidate engines and the hashes of its prompt's full
 * blocks, keyed as the engines' prefix caches key them
 * (fg_shm_block_hashes()).  Without a zone the worker picks alone: the
 * engine holding the longest prefix, else the one with the fewest of this
 * worker's requests open; an engine that is down is passed over.  A
 * location's pinned engine (fairgate_engine_pass NAME) is never changed.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_local_int.h"


/* positions per KV block when no engine of the group says yet */
#define NGX_HTTP_FAIRGATE_BLOCK_SIZE  16


static ngx_int_t ngx_http_fairgate_route_hashes(ngx_http_fairgate_api_t *api,
    ngx_http_fairgate_engine_t *pinned);
static ngx_int_t ngx_http_fairgate_route_candidates(
    ngx_http_fairgate_api_t *api, ngx_http_fairgate_engine_t *pinned);
static void ngx_http_fairgate_route_candidate(
    ngx_http_fairgate_candidate_t *cand, ngx_http_fairgate_engine_t *e);


#define ngx_http_fairgate_route_member(e, api, pinned)                        \
    ((pinned) ? (e) == (pinned) : (e)->group == (api)->engine->group)


/* the prompt's block hashes; behind a zone, its candidate engines too */

ngx_int_t
ngx_http_fairgate_route_prepare(ngx_http_fairgate_api_t *api,
    ngx_uint_t zoned)
{
    ngx_http_fairgate_loc_conf_t  *flcf;

    flcf = ngx_http_get_module_loc_conf(api->request,
                                        ngx_http_fairgate_module);

    if (ngx_http_fairgate_route_hashes(api, flcf->engine) != NGX_OK) {
        return NGX_ERROR;
    }

    if (!zoned) {
        return NGX_OK;
    }

    return ngx_http_fairgate_route_candidates(api, flcf->engine);
}


/*
 * Hashed with the block size of the group's first attached engine (they
 * run one model with one configuration as a rule; an engine whose block
 * size differs is matched as holding nothing), at most the zone's blocks.
 */

static ngx_int_t
ngx_http_fairgate_route_hashes(ngx_http_fairgate_api_t *api,
    ngx_http_fairgate_engine_t *pinned)
{
    uint32_t                        bs, n;
    ngx_uint_t                      i;
    ngx_http_fairgate_engine_t    **ep;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_get_module_main_conf(api->request,
                                         ngx_http_fairgate_module);

    bs = NGX_HTTP_FAIRGATE_BLOCK_SIZE;
    ep = fmcf->engines.elts;

    for (i = 0; i < fmcf->engines.nelts; i++) {
        if (ngx_http_fairgate_route_member(ep[i], api, pinned)
            && ngx_http_fairgate_engine_up(ep[i]))
        {
            bs = fg_shm_client_info(ep[i]->client)->shape.block_size;
            break;
        }
    }

    api->block_size = bs;

    n = ngx_min(api->n_ids / bs, NGX_HTTP_FAIRGATE_ROUTE_BLOCKS);

    if (n == 0) {
        return NGX_OK;
    }

    api->hashes = ngx_palloc(api->request->pool, n * sizeof(uint64_t));
    if (api->hashes == NULL) {
        return NGX_ERROR;
    }

    api->n_hashes = fg_shm_block_hashes(api->ids, api->n_ids, bs,
                                        api->hashes, n);

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_route_candidates(ngx_http_fairgate_api_t *api,
    ngx_http_fairgate_engine_t *pinned)
{
    ngx_uint_t                      i, n;
    ngx_http_fairgate_engine_t    **ep;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_get_module_main_conf(api->request,
                                         ngx_http_fairgate_module);

    n = pinned ? 1 : api->engine->group->n_group;

    api->candidates = ngx_palloc(api->request->pool,
                                 n * sizeof(ngx_http_fairgate_candidate_t));
    if (api->candidates == NULL) {
        return NGX_ERROR;
    }

    ep = fmcf->engines.elts;

    for (i = 0; i < fmcf->engines.nelts && api->n_candidates < n; i++) {
        if (ngx_http_fairgate_route_member(ep[i], api, pinned)) {
            ngx_http_fairgate_route_candidate(
                &api->candidates[api->n_candidates++], ep[i]);
        }
    }

    return NGX_OK;
}


/* an engine's name, and its capacity as it publishes it when attached */

static void
ngx_http_fairgate_route_candidate(ngx_http_fairgate_candidate_t *cand,
    ngx_http_fairgate_engine_t *e)
{
    const fg_shm_info_t  *info;

    cand->name = e->name;
    cand->seats = 0;
    cand->tokens = 0;

    if (ngx_http_fairgate_engine_up(e)) {
        info = fg_shm_client_info(e->client);

        cand->seats = info->shape.max_batch;
        cand->tokens = (ngx_uint_t) info->shape.kv_blocks
                       * info->shape.block_size;
    }
}


/*
 * Before the submission of a request no zone routed: this worker's pick
 * among the group's engines that are up.
 */

void
ngx_http_fairgate_route_pick(ngx_http_fairgate_api_t *api)
{
    uint32_t                        blocks, best, most;
    ngx_uint_t                      i;
    ngx_http_fairgate_engine_t    **ep, *e, *pick;
    ngx_http_fairgate_main_conf_t  *fmcf;
    ngx_http_fairgate_loc_conf_t   *flcf;

    flcf = ngx_http_get_module_loc_conf(api->request,
                                        ngx_http_fairgate_module);

    if (flcf->engine || api->engine->group->n_group == 1) {
        return;
    }

    fmcf = ngx_http_get_module_main_conf(api->request,
                                         ngx_http_fairgate_module);

    ep = fmcf->engines.elts;
    pick = NULL;
    best = 0;
    most = api->n_ids ? (api->n_ids - 1) / api->block_size : 0;

    for (i = 0; i < fmcf->engines.nelts; i++) {
        e = ep[i];

        if (e->group != api->engine->group
            || !ngx_http_fairgate_engine_up(e))
        {
            continue;
        }

        blocks = ngx_http_fairgate_engine_prefix(e, api->hashes,
                                                 ngx_min(api->n_hashes, most),
                                                 api->block_size);

        if (pick == NULL || blocks > best
            || (blocks == best && e->open < pick->open))
        {
            pick = e;
            best = blocks;
        }
    }

    if (pick) {
        api->engine = pick;
    }
}
