
/*
 * fairgate: the shared zone, "fairgate_zone zone=NAME:SIZE ...".
 *
 * The zone holds a policy-core scheduler allocated from the zone's slab pool,
 * the tenants (ngx_http_fairgate_tenant.c), the requests waiting and in
 * flight, the workers' slots (ngx_http_fairgate_queue.c) and the upstream's
 * capacity.
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

#include "ngx_http_fairgate.h"


#define NGX_HTTP_FAIRGATE_ZONE_SET         0x01
#define NGX_HTTP_FAIRGATE_POLICY_SET       0x02
#define NGX_HTTP_FAIRGATE_COST_SET         0x04
#define NGX_HTTP_FAIRGATE_MAX_TENANTS_SET  0x08
#define NGX_HTTP_FAIRGATE_RPM_SET          0x10
#define NGX_HTTP_FAIRGATE_INFLIGHT_SET     0x20
#define NGX_HTTP_FAIRGATE_TOKENS_SET       0x40
#define NGX_HTTP_FAIRGATE_WSC_SET          0x80
#define NGX_HTTP_FAIRGATE_INTERACTIONS_SET 0x100
#define NGX_HTTP_FAIRGATE_IDLE_SET         0x200

/* open interactions a zone tracks, and how long one may idle */
#define NGX_HTTP_FAIRGATE_INTERACTIONS     1024
#define NGX_HTTP_FAIRGATE_INTERACTION_IDLE 60000


static ngx_int_t ngx_http_fairgate_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_shm_zone_t *ngx_http_fairgate_previous_zone(ngx_conf_t *cf,
    ngx_str_t *name);
static u_char *ngx_http_fairgate_changes(ngx_conf_t *cf,
    ngx_http_fairgate_zone_t *prev, ngx_http_fairgate_zone_t *zone);
static ngx_int_t ngx_http_fairgate_zone_wsc(fg_sched_conf_t *conf,
    ngx_str_t *value);
static void *ngx_http_fairgate_slab_alloc(void *ctx, size_t size);
static void ngx_http_fairgate_slab_free(void *ctx, void *p);


char *
ngx_http_fairgate_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_main_conf_t  *fmcf = conf;

    u_char                     *p;
    ssize_t                     size;
    ngx_int_t                   n;
    ngx_str_t                  *value, name, s;
    ngx_uint_t                  i, set, bit;
    fg_policy_e                 policy;
    ngx_shm_zone_t             *shm_zone, *prev;
    ngx_http_fairgate_zone_t   *zone, **zonep;

    value = cf->args->elts;

    zone = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_zone_t));
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }

    fg_sched_conf_init(&zone->conf, NGX_HTTP_FAIRGATE_MAX_TENANTS);
    ngx_str_set(&zone->cost, "linear");

    zone->interactions = NGX_HTTP_FAIRGATE_INTERACTIONS;
    zone->interaction_idle = NGX_HTTP_FAIRGATE_INTERACTION_IDLE;

    ngx_str_null(&name);
    size = 0;
    set = 0;

    /* the words of a directive are NUL-terminated: the core parses them */

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {
            bit = NGX_HTTP_FAIRGATE_ZONE_SET;

            name.data = value[i].data + 5;

            p = (u_char *) ngx_strchr(name.data, ':');

            if (p == NULL || p == name.data) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone \"%V\" in \"fairgate_zone\"",
                                   &value[i]);
                return NGX_CONF_ERROR;
            }

            name.len = p - name.data;

            s.data = p + 1;
            s.len = value[i].data + value[i].len - s.data;

            size = ngx_parse_size(&s);

            if (size == NGX_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone size \"%V\" "
                                   "in \"fairgate_zone\"", &s);
                return NGX_CONF_ERROR;
            }

            if (size < (ssize_t) (8 * ngx_pagesize)) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "zone \"%V\" is too small "
                                   "in \"fairgate_zone\"", &name);
                return NGX_CONF_ERROR;
            }

        } else if (ngx_strncmp(value[i].data, "policy=", 7) == 0) {
            bit = NGX_HTTP_FAIRGATE_POLICY_SET;

            if (fg_sched_policy_parse(&policy, (char *) value[i].data + 7)
                != FG_OK)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid policy \"%s\" "
                                   "in \"fairgate_zone\"",
                                   value[i].data + 7);
                return NGX_CONF_ERROR;
            }

            zone->conf.policy = policy;

        } else if (ngx_strncmp(value[i].data, "cost=", 5) == 0) {
            bit = NGX_HTTP_FAIRGATE_COST_SET;

            if (fg_cost_parse(&zone->conf.cost, (char *) value[i].data + 5)
                != 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid cost \"%s\" in \"fairgate_zone\"",
                                   value[i].data + 5);
                return NGX_CONF_ERROR;
            }

            zone->cost.data = value[i].data + 5;
            zone->cost.len = value[i].len - 5;

        } else if (ngx_strncmp(value[i].data, "max_tenants=", 12) == 0) {
            bit = NGX_HTTP_FAIRGATE_MAX_TENANTS_SET;

            n = ngx_atoi(value[i].data + 12, value[i].len - 12);

            if (n <= 0 || (uint64_t) n > UINT32_MAX) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid max_tenants \"%s\" "
                                   "in \"fairgate_zone\"",
                                   value[i].data + 12);
                return NGX_CONF_ERROR;
            }

            zone->conf.max_clients = (uint32_t) n;

        } else if (ngx_strncmp(value[i].data, "rpm=", 4) == 0) {
            bit = NGX_HTTP_FAIRGATE_RPM_SET;

            n = ngx_atoi(value[i].data + 4, value[i].len - 4);

            if (n <= 0 || (uint64_t) n > UINT32_MAX) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid rpm \"%s\" in \"fairgate_zone\"",
                                   value[i].data + 4);
                return NGX_CONF_ERROR;
            }

            zone->conf.rpm_limit = (uint32_t) n;

        } else if (ngx_strncmp(value[i].data, "inflight=", 9) == 0) {
            bit = NGX_HTTP_FAIRGATE_INFLIGHT_SET;

            n = ngx_atoi(value[i].data + 9, value[i].len - 9);

            if (n == NGX_ERROR || (uint64_t) n > UINT32_MAX) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid inflight \"%s\" "
                                   "in \"fairgate_zone\"",
                                   value[i].data + 9);
                return NGX_CONF_ERROR;
            }

            zone->inflight = n;

        } else if (ngx_strncmp(value[i].data, "inflight_tokens=", 16) == 0) {
            bit = NGX_HTTP_FAIRGATE_TOKENS_SET;

            n = ngx_atoi(value[i].data + 16, value[i].len - 16);

            if (n == NGX_ERROR || (uint64_t) n > UINT32_MAX) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid inflight_tokens \"%s\" "
                                   "in \"fairgate_zone\"",
                                   value[i].data + 16);
                return NGX_CONF_ERROR;
            }

            zone->inflight_tokens = n;

        } else if (ngx_strncmp(value[i].data, "wsc=", 4) == 0) {
            bit = NGX_HTTP_FAIRGATE_WSC_SET;

            if (ngx_http_fairgate_zone_wsc(&zone->conf, &value[i])
                != NGX_OK)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid wsc \"%s\" in \"fairgate_zone\", "
                                   "expected ALPHA:BETA:GAMMA, the token "
                                   "weights of input, system prompt and "
                                   "output (GAMMA above 0)",
                                   value[i].data + 4);
                return NGX_CONF_ERROR;
            }

        } else if (ngx_strncmp(value[i].data, "interactions=", 13) == 0) {
            bit = NGX_HTTP_FAIRGATE_INTERACTIONS_SET;

            n = ngx_atoi(value[i].data + 13, value[i].len - 13);

            if (n == NGX_ERROR || n > 16 * 1024 * 1024) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid interactions \"%s\" "
                                   "in \"fairgate_zone\", expected 0 to "
                                   "16777216", value[i].data + 13);
                return NGX_CONF_ERROR;
            }

            zone->interactions = n;

        } else if (ngx_strncmp(value[i].data, "interaction_idle=", 17) == 0)
        {
            bit = NGX_HTTP_FAIRGATE_IDLE_SET;

            s.data = value[i].data + 17;
            s.len = value[i].len - 17;

            zone->interaction_idle = ngx_parse_time(&s, 0);

            if (zone->interaction_idle == (ngx_msec_t) NGX_ERROR
                || zone->interaction_idle == 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid interaction_idle \"%V\" "
                                   "in \"fairgate_zone\"", &s);
                return NGX_CONF_ERROR;
            }

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" in \"fairgate_zone\"",
                               &value[i]);
            return NGX_CONF_ERROR;
        }

        if (set & bit) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate parameter \"%V\" "
                               "in \"fairgate_zone\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        set |= bit;
    }

    if (!(set & NGX_HTTP_FAIRGATE_ZONE_SET)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "missing \"zone=NAME:SIZE\" in \"fairgate_zone\"");
        return NGX_CONF_ERROR;
    }

    if (zone->conf.policy == FG_POLICY_RPM
        && !(set & NGX_HTTP_FAIRGATE_RPM_SET))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "policy \"rpm\" needs \"rpm=N\" "
                           "in \"fairgate_zone\"");
        return NGX_CONF_ERROR;
    }

    if (zone->conf.policy != FG_POLICY_RPM
        && (set & NGX_HTTP_FAIRGATE_RPM_SET))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"rpm=\" needs policy \"rpm\", not \"%s\", "
                           "in \"fairgate_zone\"",
                           fg_sched_policy_name(zone->conf.policy));
        return NGX_CONF_ERROR;
    }

    if (zone->conf.policy != FG_POLICY_WSC
        && (set & NGX_HTTP_FAIRGATE_WSC_SET))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"wsc=\" needs policy \"wsc\", not \"%s\", "
                           "in \"fairgate_zone\"",
                           fg_sched_policy_name(zone->conf.policy));
        return NGX_CONF_ERROR;
    }

    zonep = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        if (zonep[i]->name.len == name.len
            && ngx_strncmp(zonep[i]->name.data, name.data, name.len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate zone \"%V\" in \"fairgate_zone\"",
                               &name);
            return NGX_CONF_ERROR;
        }
    }

    shm_zone = ngx_shared_memory_add(cf, &name, size,
                                     &ngx_http_fairgate_module);
    if (shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    zone->name = name;
    zone->shm_zone = shm_zone;

    shm_zone->init = ngx_http_fairgate_init_zone;
    shm_zone->data = zone;

    prev = ngx_http_fairgate_previous_zone(cf, &name);

    if (prev) {
        zone->previous = prev;
        zone->changes = ngx_http_fairgate_changes(cf, prev->data, zone);

        if (zone->changes == NULL) {
            return NGX_CONF_ERROR;
        }

        if (zone->changes[0] != '\0') {
            /* see the comment at the top of this file */
            shm_zone->noreuse = 1;
        }
    }

    zonep = ngx_array_push(&fmcf->zones);
    if (zonep == NULL) {
        return NGX_CONF_ERROR;
    }

    *zonep = zone;

    return NGX_CONF_OK;
}


/* the zone of this name in the cycle being replaced by a reload, if any */

static ngx_shm_zone_t *
ngx_http_fairgate_previous_zone(ngx_conf_t *cf, ngx_str_t *name)
{
    ngx_uint_t        i;
    ngx_cycle_t      *old;
    ngx_list_part_t  *part;
    ngx_shm_zone_t   *shm_zone;

    old = cf->cycle->old_cycle;

    if (old == NULL || ngx_is_init_cycle(old)) {
        return NULL;
    }

    part = &old->shared_memory.part;
    shm_zone = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }

            part = part->next;
            shm_zone = part->elts;
            i = 0;
        }

        if (shm_zone[i].tag == &ngx_http_fairgate_module
            && shm_zone[i].data != NULL
            && shm_zone[i].shm.name.len == name->len
            && ngx_strncmp(shm_zone[i].shm.name.data, name->data, name->len)
               == 0)
        {
            return &shm_zone[i];
        }
    }
}


/* what differs from the previous cycle's zone; "" if nothing */

static u_char *
ngx_http_fairgate_changes(ngx_conf_t *cf, ngx_http_fairgate_zone_t *prev,
    ngx_http_fairgate_zone_t *zone)
{
    u_char           *p, *last, *text;
    fg_cost_t        *oc, *nc;
    fg_sched_conf_t  *o, *n;

    text = ngx_pnalloc(cf->pool, 512);
    if (text == NULL) {
        return NULL;
    }

    p = text;
    last = text + 511;

    o = &prev->conf;
    n = &zone->conf;
    oc = &o->cost;
    nc = &n->cost;

    if (prev->shm_zone->shm.size != zone->shm_zone->shm.size) {
        p = ngx_slprintf(p, last, ", size %uz -> %uz",
                         prev->shm_zone->shm.size, zone->shm_zone->shm.size);
    }

    if (o->policy != n->policy) {
        p = ngx_slprintf(p, last, ", policy %s -> %s",
                         fg_sched_policy_name(o->policy),
                         fg_sched_policy_name(n->policy));
    }

    if (oc->in != nc->in || oc->out != nc->out || oc->in_out != nc->in_out
        || oc->out2 != nc->out2 || oc->base != nc->base)
    {
        p = ngx_slprintf(p, last, ", cost %V -> %V", &prev->cost, &zone->cost);
    }

    if (o->max_clients != n->max_clients) {
        p = ngx_slprintf(p, last, ", max_tenants %uD -> %uD",
                         o->max_clients, n->max_clients);
    }

    if (o->rpm_limit != n->rpm_limit || o->rpm_window != n->rpm_window) {
        p = ngx_slprintf(p, last, ", rpm %uD -> %uD",
                         o->rpm_limit, n->rpm_limit);
    }

    if (o->wsc_alpha != n->wsc_alpha || o->wsc_beta != n->wsc_beta
        || o->wsc_gamma != n->wsc_gamma)
    {
        p = ngx_slprintf(p, last, ", wsc weights changed");
    }

    if (prev->interactions != zone->interactions) {
        p = ngx_slprintf(p, last, ", interactions %ui -> %ui",
                         prev->interactions, zone->interactions);
    }

    *p = '\0';

    /* skip the leading ", " */

    return (p == text) ? text : text + 2;
}


static ngx_int_t
ngx_http_fairgate_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_fairgate_zone_t  *ozone = data;

    size_t                      len, need;
    ngx_uint_t                  i, pages;
    fg_allocator_t              allocator;
    fg_oit_interaction_t       *table;
    fg_sched_stats_t            stats;
    ngx_slab_pool_t            *shpool;
    ngx_http_fairgate_zone_t   *zone;
    ngx_http_fairgate_shctx_t  *sh;

    zone = shm_zone->data;
    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    zone->shpool = shpool;

    if (ozone) {

        /* a reload handed the zone over: same name, size and settings */

        zone->sh = ozone->sh;
        zone->reused = 1;

        /*
         * The capacity is the upstream's, not the scheduler's: it changes
         * in place, and the workers of both generations see it at once.
         */

        ngx_shmtx_lock(&shpool->mutex);
        fg_sched_stats(zone->sh->sched, &stats);
        zone->sh->inflight = zone->inflight;
        zone->sh->inflight_tokens = zone->inflight_tokens;
        zone->sh->oit.idle_timeout = zone->interaction_idle / 1000.0;
        ngx_shmtx_unlock(&shpool->mutex);

        /*
         * nginx releases an old zone marked noreuse even when the new cycle
         * took it over.  The previous zone carries the mark if it replaced
         * its own predecessor (it was created with it), or if a reload that
         * failed after this module's init_zone set it; it lives on here.
         */

        if (zone->previous) {
            zone->previous->noreuse = 0;
            zone->previous = NULL;
        }

        ngx_log_error(NGX_LOG_NOTICE, shm_zone->shm.log, 0,
                      "fairgate_zone \"%V\" reused on reload: "
                      "%uD tenants, %uL waiting, %uL running",
                      &zone->name, stats.clients, stats.waiting,
                      stats.running);

        return NGX_OK;
    }

    if (shm_zone->shm.exists) {
        zone->sh = shpool->data;
        return NGX_OK;
    }

    allocator.alloc = ngx_http_fairgate_slab_alloc;
    allocator.free = ngx_http_fairgate_slab_free;
    allocator.ctx = shpool;

    len = sizeof(" in fairgate_zone \"\"") + zone->name.len;

    ngx_shmtx_lock(&shpool->mutex);

    shpool->log_ctx = ngx_slab_alloc_locked(shpool, len);
    if (shpool->log_ctx == NULL) {
        goto too_small;
    }

    ngx_sprintf(shpool->log_ctx, " in fairgate_zone \"%V\"%Z", &zone->name);

    /* running out of room is reported below, in terms of the directive */

    shpool->log_nomem = 0;

    sh = ngx_slab_calloc_locked(shpool, sizeof(ngx_http_fairgate_shctx_t));
    if (sh == NULL) {
        goto too_small;
    }

    sh->sched = fg_sched_create(&zone->conf, &allocator);
    if (sh->sched == NULL) {
        goto too_small;
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

    /* before the tenants' pages are counted: the table takes some of them */

    if (zone->interactions) {
        table = ngx_slab_alloc_locked(shpool, zone->interactions
                                              * sizeof(fg_oit_interaction_t));
        if (table == NULL) {
            ngx_shmtx_unlock(&shpool->mutex);

            ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                          "fairgate_zone \"%V\" is too small for "
                          "interactions=%ui (%uz bytes)",
                          &zone->name, zone->interactions,
                          zone->interactions * sizeof(fg_oit_interaction_t));
            return NGX_ERROR;
        }

    } else {
        table = NULL;
    }

    fg_oit_init(&sh->oit, table, (uint32_t) zone->interactions,
                zone->interaction_idle / 1000.0);

    pages = ngx_http_fairgate_tenant_pages(zone->conf.max_clients);

    if (pages > shpool->pfree) {

        /* each page costs its descriptor too; alignment, up to a page */

        need = shm_zone->shm.size + ngx_pagesize
               + (pages - shpool->pfree)
                 * (ngx_pagesize + sizeof(ngx_slab_page_t));
        ngx_shmtx_unlock(&shpool->mutex);

        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "fairgate_zone \"%V\" is too small for "
                      "max_tenants=%uD: it needs at least %uzk",
                      &zone->name, zone->conf.max_clients,
                      (need + 1023) / 1024);
        return NGX_ERROR;
    }

    shpool->log_nomem = 1;
    shpool->data = sh;

    ngx_shmtx_unlock(&shpool->mutex);

    zone->sh = sh;

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

too_small:

    ngx_shmtx_unlock(&shpool->mutex);

    ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                  "fairgate_zone \"%V\" is too small for the scheduler "
                  "of max_tenants=%uD", &zone->name, zone->conf.max_clients);

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

    fmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_fairgate_module);
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


/* wsc=ALPHA:BETA:GAMMA */

static ngx_int_t
ngx_http_fairgate_zone_wsc(fg_sched_conf_t *conf, ngx_str_t *value)
{
    char    *p, *end;
    double   w[3];
    size_t   i;

    p = (char *) value->data + 4;

    for (i = 0; i < 3; i++) {
        w[i] = strtod(p, &end);

        if (end == p || !(w[i] >= 0 && w[i] < 1e9)) {
            return NGX_ERROR;
        }

        if (*end != (i < 2 ? ':' : '\0')) {
            return NGX_ERROR;
        }

        p = end + 1;
    }

    if (w[2] == 0) {
        return NGX_ERROR;
    }

    conf->wsc_alpha = w[0];
    conf->wsc_beta = w[1];
    conf->wsc_gamma = w[2];

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


/* a zone named by fairgate_status or fairgate: checked once http is read */

ngx_int_t
ngx_http_fairgate_zone_ref(ngx_conf_t *cf, ngx_str_t *name,
    ngx_shm_zone_t **shm_zone, char *directive)
{
    ngx_http_fairgate_zone_ref_t   *ref;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_fairgate_module);

    *shm_zone = ngx_shared_memory_add(cf, name, 0, &ngx_http_fairgate_module);
    if (*shm_zone == NULL) {
        return NGX_ERROR;
    }

    ref = ngx_array_push(&fmcf->refs);
    if (ref == NULL) {
        return NGX_ERROR;
    }

    ref->shm_zone = *shm_zone;
    ref->file = cf->conf_file->file.name;
    ref->line = cf->conf_file->line;
    ref->directive = directive;

    return NGX_OK;
}


ngx_int_t
ngx_http_fairgate_check_refs(ngx_conf_t *cf,
    ngx_http_fairgate_main_conf_t *fmcf)
{
    ngx_uint_t                     i;
    ngx_http_fairgate_zone_ref_t  *ref;

    ref = fmcf->refs.elts;

    for (i = 0; i < fmcf->refs.nelts; i++) {
        if (ref[i].shm_zone->data == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "unknown fairgate_zone \"%V\" in \"%s\" in %V:%ui",
                          &ref[i].shm_zone->shm.name, ref[i].directive,
                          &ref[i].file, ref[i].line);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* the wall clock in seconds, for rate windows and the scheduler */

double
ngx_http_fairgate_now(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (double) tp->sec + tp->msec / 1000.0;
}
