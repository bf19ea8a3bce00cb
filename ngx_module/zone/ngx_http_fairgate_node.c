
/*
 * fairgate: a request's node in the zone, from its admission to its end.
 *
 * The node holds the request's fg_request_t in the scheduler, references
 * to its user and app (a tenant with requests is never expired), the
 * capacity it reserves once dispatched, and its place on its worker's
 * lists.  It is made at admission and freed when the request ends however
 * it ends, or when its worker's slot is reclaimed.  Under the zone's mutex.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_zone_int.h"


static void ngx_http_fairgate_node_unref(ngx_http_fairgate_shctx_t *sh,
    ngx_http_fairgate_tenant_t *t);


/*
 * The node of a request about to be admitted, as its owner describes it:
 * its tenants found or made, the capacity it will reserve, its engines and
 * hashes, on this worker's list.  NULL: the zone has no room for another
 * tenant or request.
 */

ngx_http_fairgate_node_t *
ngx_http_fairgate_node_new_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_entry_t *entry)
{
    ngx_http_fairgate_node_t    *node;
    ngx_http_fairgate_shctx_t   *sh;
    ngx_http_fairgate_tenant_t  *user, *app;

    sh = zone->sh;

    user = ngx_http_fairgate_tenant_get(zone, NGX_HTTP_FAIRGATE_USER,
                                        entry->user, entry->weight);
    if (user == NULL) {
        return NULL;
    }

    /* held from here: looking up the app may expire idle tenants */
    user->refs++;

    app = NULL;

    if (entry->app->len) {
        app = ngx_http_fairgate_tenant_get(zone, NGX_HTTP_FAIRGATE_APP,
                                           entry->app, 1.0);
        if (app == NULL) {
            user->refs--;
            return NULL;
        }

        app->refs++;
    }

    node = ngx_http_fairgate_room_alloc(zone,
                                        sizeof(ngx_http_fairgate_node_t));
    if (node == NULL) {
        user->refs--;

        if (app) {
            app->refs--;
        }

        return NULL;
    }

    ngx_memzero(node, sizeof(ngx_http_fairgate_node_t));

    node->user = user;
    node->app = app;
    node->resume = entry->resume;
    node->ref = entry->ref;
    node->slot = zone->slot;
    node->reserved = entry->reserve ? entry->reserve
                                    : entry->tokens_in + entry->max_tokens;

    fg_request_init(&node->req, entry->tokens_in, entry->max_tokens);

    if (ngx_http_fairgate_engines_bind_locked(zone, node, entry->engines,
                                              entry->n_engines, entry->hashes,
                                              entry->n_hashes,
                                              entry->block_size)
        != NGX_OK)
    {
        ngx_http_fairgate_engines_unbind_locked(zone, node);
        ngx_slab_free_locked(zone->shpool, node);
        ngx_http_fairgate_node_unref(sh, user);

        if (app) {
            ngx_http_fairgate_node_unref(sh, app);
        }

        return NULL;
    }

    ngx_queue_insert_tail(&sh->slots[zone->slot].owned, &node->owned);

    return node;
}


/*
 * Frees a node that left the scheduler or is about to be given up with it
 * (what the scheduler still holds is cancelled): its capacity, its
 * tenants' references, its slot's lists.
 */

void
ngx_http_fairgate_node_free_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node)
{
    ngx_http_fairgate_shctx_t  *sh;

    sh = zone->sh;

    if (node->req.state == FG_REQ_QUEUED
        || node->req.state == FG_REQ_RUNNING)
    {
        fg_sched_cancel(sh->sched, &node->req);
    }

    /*
     * An interaction whose request ends here unserved is cut (one served
     * was settled before: tenants/ngx_http_fairgate_interaction.c).
     */
    if (node->interaction) {
        fg_oit_abort(&sh->oit, node->interaction);
        node->interaction = 0;
    }

    if (node->holds) {
        sh->running--;
        sh->running_tokens -= node->reserved;
        ngx_http_fairgate_engines_end_locked(zone, node);
        node->holds = 0;
    }

    ngx_http_fairgate_engines_unbind_locked(zone, node);

    if (node->ready_set) {
        ngx_queue_remove(&node->ready);
    }

    ngx_queue_remove(&node->owned);

    ngx_http_fairgate_node_unref(sh, node->user);

    if (node->app) {
        ngx_http_fairgate_node_unref(sh, node->app);
    }

    /* a key's record, held when a quota of keys applies (quota/) */
    if (node->key) {
        ngx_http_fairgate_node_unref(sh, node->key);
    }

    ngx_slab_free_locked(zone->shpool, node);
}


/* a tenant's idle time counts from the end of its last request */

static void
ngx_http_fairgate_node_unref(ngx_http_fairgate_shctx_t *sh,
    ngx_http_fairgate_tenant_t *t)
{
    t->refs--;
    t->last = ngx_current_msec;
    ngx_queue_remove(&t->lru);
    ngx_queue_insert_head(&sh->lru, &t->lru);
}
