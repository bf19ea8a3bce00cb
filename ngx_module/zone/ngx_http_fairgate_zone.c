
/*
 * fairgate: the shared zone of a fairgate_zone, made or taken over.
 *
 * The zone holds a policy-core scheduler allocated from the zone's slab
 * pool, the tenants (ngx_http_fairgate_tenant.c), the requests waiting and
 * in flight, the workers' slots (ngx_http_fairgate_workers.c) and the
 * upstream's capacity.
 *
 * On "nginx -s reload" nginx hands the zone over to the new cycle when its
 * name, tag and size are unchanged; the scheduler is then reused as it is,
 * with its clients, queues and counters.  When the scheduler's settings
 * (policy, cost, max_tenants, rpm) changed, the new cycle gets a fresh zone
 * instead, exactly as nginx does when a zone's size changes: the workers of
 * the old cycle keep their mapping of the old zone, with its scheduler, until
 * they exit, so requests they hold are never pulled from under them.  The
 * capacity (inflight=, inflight_tokens=) is not the scheduler's: a reload
 * changes it in place, and so does interaction_idle=.  The table of open
 * interactions (interactions=, FairServe's OIT and wsc) is made with the
 * zone: a new size starts a fresh zone.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_zone.h"


static ngx_int_t ngx_http_fairgate_zone_reuse(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_zone_t *ozone);
static ngx_int_t ngx_http_fairgate_zone_create(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_zone_t *zone);
static ngx_http_fairgate_shctx_t *ngx_http_fairgate_zone_alloc(
    ngx_shm_zone_t *shm_zone, ngx_http_fairgate_zone_t *zone);
static ngx_int_t ngx_http_fairgate_zone_oit(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_shctx_t *sh);
static ngx_int_t ngx_http_fairgate_zone_room(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_shctx_t *sh);
static void *ngx_http_fairgate_slab_alloc(void *ctx, size_t size);
static void ngx_http_fairgate_slab_free(void *ctx, void *p);


ngx_int_t
ngx_http_fairgate_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_fairgate_zone_t  *ozone = data;

    ngx_slab_pool_t           *shpool;
    ngx_http_fairgate_zone_t  *zone;

    zone = shm_zone->data;
    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    zone->shpool = shpool;

    if (ozone) {
        return ngx_http_fairgate_zone_reuse(shm_zone, zone, ozone);
    }

    if (shm_zone->shm.exists) {
        zone->sh = shpool->data;
        return NGX_OK;
    }

    if (ngx_http_fairgate_zone_create(shm_zone, zone) != NGX_OK) {
        return NGX_ERROR;
    }

    if (zone->previous) {

        /*
         * Let the master release the previous zone: its workers keep their
         * own mapping of it until they exit.  nginx releases a zone whose
         * size changed by itself; this covers the settings.
         */

        zone->previous->noreuse = 1;
        zone->previous = NULL;

        ngx_log_error(NGX_LOG_NOTICE, shm_zone->shm.log, 0,
                      "fairgate_zone \"%V\" starts afresh on reload: %s",
                      &zone->name, zone->changes);

    } else {
        ngx_log_error(NGX_LOG_INFO, shm_zone->shm.log, 0,
                      "fairgate_zone \"%V\" created: policy %s, "
                      "max_tenants=%uD",
                      &zone->name, fg_sched_policy_name(zone->conf.policy),
                      zone->conf.max_clients);
    }

    return NGX_OK;
}


/* a reload handed the zone over: same name, size and settings */

static ngx_int_t
ngx_http_fairgate_zone_reuse(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_zone_t *ozone)
{
    fg_sched_stats_t  stats;

    zone->sh = ozone->sh;
    zone->reused = 1;

    /*
     * The capacity is the upstream's, not the scheduler's: it changes in
     * place, and the workers of both generations see it at once.
     */

    ngx_shmtx_lock(&zone->shpool->mutex);
    fg_sched_stats(zone->sh->sched, &stats);
    zone->sh->inflight = zone->inflight;
    zone->sh->inflight_tokens = zone->inflight_tokens;
    zone->sh->oit.idle_timeout = zone->interaction_idle / 1000.0;
    ngx_shmtx_unlock(&zone->shpool->mutex);

    /*
     * nginx releases an old zone marked noreuse even when the new cycle
     * took it over.  The previous zone carries the mark if it replaced its
     * own predecessor (it was created with it), or if a reload that failed
     * after this module's init_zone set it; it lives on here.
     */

    if (zone->previous) {
        zone->previous->noreuse = 0;
        zone->previous = NULL;
    }

    ngx_log_error(NGX_LOG_NOTICE, shm_zone->shm.log, 0,
                  "fairgate_zone \"%V\" reused on reload: "
                  "%uD tenants, %uL waiting, %uL running",
                  &zone->name, stats.clients, stats.waiting, stats.running);

    return NGX_OK;
}


/*
 * A new zone: its state, the scheduler, the interactions' table, and room
 * checked for max_tenants tenants; each failure says what is too small.
 */

static ngx_int_t
ngx_http_fairgate_zone_create(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_zone_t *zone)
{
    ngx_slab_pool_t            *shpool;
    ngx_http_fairgate_shctx_t  *sh;

    shpool = zone->shpool;

    ngx_shmtx_lock(&shpool->mutex);

    sh = ngx_http_fairgate_zone_alloc(shm_zone, zone);

    if (sh == NULL) {
        ngx_shmtx_unlock(&shpool->mutex);

        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "fairgate_zone \"%V\" is too small for the scheduler "
                      "of max_tenants=%uD", &zone->name,
                      zone->conf.max_clients);
        return NGX_ERROR;
    }

    /* before the tenants' pages are counted: the table takes some of them */

    if (ngx_http_fairgate_zone_oit(shm_zone, zone, sh) != NGX_OK
        || ngx_http_fairgate_zone_room(shm_zone, zone, sh) != NGX_OK)
    {
        ngx_shmtx_unlock(&shpool->mutex);
        return NGX_ERROR;
    }

    shpool->data = sh;

    ngx_shmtx_unlock(&shpool->mutex);

    zone->sh = sh;

    return NGX_OK;
}


/* the zone's state and its scheduler; NULL: no room.  Under the mutex. */

static ngx_http_fairgate_shctx_t *
ngx_http_fairgate_zone_alloc(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_zone_t *zone)
{
    size_t                      len;
    ngx_uint_t                  i;
    fg_allocator_t              allocator;
    ngx_slab_pool_t            *shpool;
    ngx_http_fairgate_shctx_t  *sh;

    shpool = zone->shpool;

    allocator.alloc = ngx_http_fairgate_slab_alloc;
    allocator.free = ngx_http_fairgate_slab_free;
    allocator.ctx = shpool;

    len = sizeof(" in fairgate_zone \"\"") + zone->name.len;

    shpool->log_ctx = ngx_slab_alloc_locked(shpool, len);
    if (shpool->log_ctx == NULL) {
        return NULL;
    }

    ngx_sprintf(shpool->log_ctx, " in fairgate_zone \"%V\"%Z", &zone->name);

    /*
     * Running out of room is reported in terms of the directive, and
     * later once an interval (ngx_http_fairgate_room.c), not by the slab
     * once a request
     */

    shpool->log_nomem = 0;

    sh = ngx_slab_calloc_locked(shpool, sizeof(ngx_http_fairgate_shctx_t));
    if (sh == NULL) {
        return NULL;
    }

    sh->sched = fg_sched_create(&zone->conf, &allocator);
    if (sh->sched == NULL) {
        return NULL;
    }

    ngx_rbtree_init(&sh->rbtree, &sh->sentinel,
                    ngx_http_fairgate_tenant_insert);
    ngx_queue_init(&sh->lru);

    for (i = 0; i < NGX_HTTP_FAIRGATE_SLOTS; i++) {
        ngx_queue_init(&sh->slots[i].owned);
        ngx_queue_init(&sh->slots[i].ready);
    }

    sh->inflight = zone->inflight;
    sh->inflight_tokens = zone->inflight_tokens;

    return sh;
}


/* the table of open interactions (interactions=), under the mutex */

static ngx_int_t
ngx_http_fairgate_zone_oit(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_shctx_t *sh)
{
    size_t                 size;
    fg_oit_interaction_t  *table;

    table = NULL;

    if (zone->interactions) {
        size = zone->interactions * sizeof(fg_oit_interaction_t);

        table = ngx_slab_alloc_locked(zone->shpool, size);
        if (table == NULL) {
            ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                          "fairgate_zone \"%V\" is too small for "
                          "interactions=%ui (%uz bytes)",
                          &zone->name, zone->interactions, size);
            return NGX_ERROR;
        }
    }

    fg_oit_init(&sh->oit, table, (uint32_t) zone->interactions,
                zone->interaction_idle / 1000.0);

    return NGX_OK;
}


/*
 * Room for max_tenants tenants, and their index (at most half full), under
 * the mutex; a zone too small says how large it must be.
 */

static ngx_int_t
ngx_http_fairgate_zone_room(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_shctx_t *sh)
{
    size_t            need, size;
    ngx_uint_t        pages;
    ngx_slab_pool_t  *shpool;

    shpool = zone->shpool;
    pages = ngx_http_fairgate_tenant_pages(zone->conf.max_clients);

    for (size = 4; size < 2 * (size_t) zone->conf.max_clients; size <<= 1) {
        /* void */
    }

    sh->index_mask = size - 1;
    size *= sizeof(ngx_http_fairgate_tenant_t *);

    sh->index = ngx_slab_calloc_locked(shpool, size);

    if (sh->index != NULL && pages <= shpool->pfree) {
        return NGX_OK;
    }

    /*
     * each page costs its descriptor too; alignment, up to a page; with
     * no room for the index, room for all of it and every tenant's page
     */

    if (sh->index == NULL) {
        need = shm_zone->shm.size + ngx_pagesize + size
               + pages * (ngx_pagesize + sizeof(ngx_slab_page_t));

    } else {
        need = shm_zone->shm.size + ngx_pagesize
               + (pages - shpool->pfree)
                 * (ngx_pagesize + sizeof(ngx_slab_page_t));
    }

    ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                  "fairgate_zone \"%V\" is too small for "
                  "max_tenants=%uD: it needs at least %uzk",
                  &zone->name, zone->conf.max_clients, (need + 1023) / 1024);

    return NGX_ERROR;
}


/*
 * Counts the reload in the zones this cycle took over, once the cycle can
 * no longer fail: a reload that fails after init_zone leaves them as they
 * were.
 */

ngx_int_t
ngx_http_fairgate_zones_commit(ngx_cycle_t *cycle)
{
    ngx_uint_t                      i;
    ngx_http_fairgate_zone_t      **zone;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(cycle);
    if (fmcf == NULL) {
        return NGX_OK;
    }

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        if (!zone[i]->reused) {
            continue;
        }

        ngx_shmtx_lock(&zone[i]->shpool->mutex);
        zone[i]->sh->reloads++;
        ngx_shmtx_unlock(&zone[i]->shpool->mutex);
    }

    return NGX_OK;
}



/* the core's allocator: called only under the zone's mutex */

static void *
ngx_http_fairgate_slab_alloc(void *ctx, size_t size)
{
    return ngx_slab_alloc_locked(ctx, size);
}


static void
ngx_http_fairgate_slab_free(void *ctx, void *p)
{
    ngx_slab_free_locked(ctx, p);
}
