
/*
 * fairgate: the worker processes' part of each zone, and how one wakes
 * another.
 *
 * Each worker has a slot in the zone, with the list of its requests and of
 * those dispatched for it but not yet resumed; a worker that dispatches
 * another's request puts it on that list and wakes the owner with a
 * datagram on a per-worker UNIX socket in Linux's abstract namespace
 * ("fairgate-PID"), registered in the owner's event loop.  No worker polls
 * and none blocks but on the zone's mutex.
 *
 * A worker that dies leaves its slot behind: the next worker to start
 * reclaims the slots of dead processes (their requests are cancelled and
 * their capacity is freed), and so does a worker whose wake-up finds no
 * socket.  A worker that exits reclaims its own slot.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sys/un.h>

#include "ngx_http_fairgate_zone_int.h"


static ngx_int_t ngx_http_fairgate_wake_send(ngx_pid_t pid);
static void ngx_http_fairgate_sockaddr(struct sockaddr_un *sa,
    socklen_t *len, ngx_pid_t pid);
static ngx_int_t ngx_http_fairgate_wake_listen(ngx_cycle_t *cycle);
static void ngx_http_fairgate_slot_take(ngx_http_fairgate_zone_t *zone,
    ngx_cycle_t *cycle);
static void ngx_http_fairgate_reclaim_locked(ngx_http_fairgate_zone_t *zone,
    ngx_uint_t slot, ngx_uint_t own, ngx_log_t *log);
static void ngx_http_fairgate_wake_handler(ngx_event_t *ev);
static void ngx_http_fairgate_ready_handler(ngx_event_t *ev);


static ngx_connection_t  *ngx_http_fairgate_wake_conn;
static ngx_event_t        ngx_http_fairgate_ready_event;


void
ngx_http_fairgate_wakes_init(ngx_http_fairgate_wakes_t *wakes)
{
    wakes->n = 0;
    wakes->self = 0;
    ngx_memzero(wakes->seen, sizeof(wakes->seen));
}


/* after the mutex is released: tells the owners of dispatched requests */

void
ngx_http_fairgate_wake(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_wakes_t *wakes)
{
    ngx_uint_t                  i, n, rounds;
    ngx_http_fairgate_wakes_t   more;

    if (wakes->self) {
        ngx_post_event(&ngx_http_fairgate_ready_event, &ngx_posted_events);
    }

    /* a dead owner's requests are reclaimed and the freed room dispatched */

    for (rounds = 0; wakes->n && rounds < NGX_HTTP_FAIRGATE_SLOTS; rounds++) {

        ngx_http_fairgate_wakes_init(&more);
        n = 0;

        for (i = 0; i < wakes->n; i++) {
            if (ngx_http_fairgate_wake_send(wakes->pid[i]) != NGX_DECLINED) {
                continue;
            }

            ngx_shmtx_lock(&zone->shpool->mutex);

            if (zone->sh->slots[wakes->slot[i]].pid == wakes->pid[i]) {
                ngx_http_fairgate_reclaim_locked(zone, wakes->slot[i], 0,
                                                 ngx_cycle->log);
                ngx_http_fairgate_dispatch_locked(zone, &more);
                n++;
            }

            ngx_shmtx_unlock(&zone->shpool->mutex);
        }

        if (more.self) {
            ngx_post_event(&ngx_http_fairgate_ready_event,
                           &ngx_posted_events);
        }

        if (n == 0) {
            return;
        }

        *wakes = more;
    }
}


/* NGX_OK, or NGX_DECLINED when no process listens (the owner is gone) */

static ngx_int_t
ngx_http_fairgate_wake_send(ngx_pid_t pid)
{
    u_char              byte;
    ngx_err_t           err;
    socklen_t           len;
    struct sockaddr_un  sa;

    if (ngx_http_fairgate_wake_conn == NULL) {
        return NGX_OK;
    }

    ngx_http_fairgate_sockaddr(&sa, &len, pid);
    byte = 0;

    if (sendto(ngx_http_fairgate_wake_conn->fd, &byte, 1, 0,
               (struct sockaddr *) &sa, len)
        == 1)
    {
        return NGX_OK;
    }

    err = ngx_socket_errno;

    /* a full queue means a wake-up is pending already */

    if (err == NGX_EAGAIN || err == ENOBUFS) {
        return NGX_OK;
    }

    if (err == NGX_ECONNREFUSED || err == NGX_ENOENT) {
        return NGX_DECLINED;
    }

    ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, err,
                  "fairgate: waking worker %P failed", pid);

    return NGX_ERROR;
}


static void
ngx_http_fairgate_sockaddr(struct sockaddr_un *sa, socklen_t *len,
    ngx_pid_t pid)
{
    u_char  *p;

    ngx_memzero(sa, sizeof(struct sockaddr_un));
    sa->sun_family = AF_UNIX;

    /* the abstract namespace: a leading NUL, no file, gone with the socket */
    p = ngx_sprintf((u_char *) sa->sun_path + 1, "fairgate-%P", pid);

    *len = offsetof(struct sockaddr_un, sun_path)
           + (p - (u_char *) sa->sun_path);
}


/*
 * Gives up every request of a slot's worker, which is gone or ("own")
 * exiting; only then do the nodes' owners live in this process, and they
 * are told the node is gone.
 */

static void
ngx_http_fairgate_reclaim_locked(ngx_http_fairgate_zone_t *zone,
    ngx_uint_t slot, ngx_uint_t own, ngx_log_t *log)
{
    ngx_uint_t                 n;
    ngx_queue_t               *q;
    ngx_http_fairgate_slot_t  *sl;
    ngx_http_fairgate_node_t  *node;

    sl = &zone->sh->slots[slot];
    n = 0;

    while (!ngx_queue_empty(&sl->owned)) {
        q = ngx_queue_head(&sl->owned);
        node = ngx_queue_data(q, ngx_http_fairgate_node_t, owned);

        if (own && node->ref) {
            *node->ref = NULL;
        }

        ngx_http_fairgate_node_free_locked(zone, node);
        n++;
    }

    if (n && !own) {
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "fairgate_zone \"%V\": %ui requests of exited worker "
                      "%P reclaimed", &zone->name, n, sl->pid);
    }

    zone->sh->reclaimed += n;

    sl->pid = 0;
    ngx_queue_init(&sl->owned);
    ngx_queue_init(&sl->ready);
}


/*
 * A worker starts: it opens its wake-up socket, reclaims the slots of dead
 * workers and takes a slot in each zone.
 */

ngx_int_t
ngx_http_fairgate_workers_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                       i;
    ngx_http_fairgate_zone_t       **zone;
    ngx_http_fairgate_main_conf_t   *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(cycle);
    if (fmcf == NULL || fmcf->zones.nelts == 0) {
        return NGX_OK;
    }

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        zone[i]->slot = NGX_HTTP_FAIRGATE_NO_SLOT;
    }

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    /* a worker without a wake-up socket takes no slot: it cannot park */

    if (ngx_http_fairgate_wake_listen(cycle) != NGX_OK) {
        return NGX_OK;
    }

    for (i = 0; i < fmcf->zones.nelts; i++) {
        ngx_http_fairgate_slot_take(zone[i], cycle);
    }

    return NGX_OK;
}


/* the worker's wake-up socket, in its event loop */

static ngx_int_t
ngx_http_fairgate_wake_listen(ngx_cycle_t *cycle)
{
    ngx_err_t            err;
    socklen_t            len;
    ngx_socket_t         fd;
    ngx_connection_t    *c;
    struct sockaddr_un   sa;

    ngx_http_fairgate_ready_event.handler = ngx_http_fairgate_ready_handler;
    ngx_http_fairgate_ready_event.log = cycle->log;

    fd = socket(AF_UNIX, SOCK_DGRAM, 0);

    if (fd == (ngx_socket_t) -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_socket_errno,
                      "fairgate: socket() failed");
        return NGX_ERROR;
    }

    ngx_http_fairgate_sockaddr(&sa, &len, ngx_pid);

    if (bind(fd, (struct sockaddr *) &sa, len) == -1) {
        err = ngx_socket_errno;
        ngx_close_socket(fd);
        ngx_log_error(NGX_LOG_EMERG, cycle->log, err,
                      "fairgate: bind() of the wake-up socket failed");
        return NGX_ERROR;
    }

    if (ngx_nonblocking(fd) == -1) {
        err = ngx_socket_errno;
        ngx_close_socket(fd);
        ngx_log_error(NGX_LOG_EMERG, cycle->log, err,
                      ngx_nonblocking_n " failed");
        return NGX_ERROR;
    }

    c = ngx_get_connection(fd, cycle->log);
    if (c == NULL) {
        ngx_close_socket(fd);
        return NGX_ERROR;
    }

    c->read->handler = ngx_http_fairgate_wake_handler;
    c->read->log = cycle->log;
    c->write->log = cycle->log;

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_close_connection(c);
        return NGX_ERROR;
    }

    ngx_http_fairgate_wake_conn = c;

    return NGX_OK;
}


/*
 * The dead workers' slots reclaimed and a free one taken, then the
 * reclaimed capacity, or a reload that raised it, dispatched.
 */

static void
ngx_http_fairgate_slot_take(ngx_http_fairgate_zone_t *zone,
    ngx_cycle_t *cycle)
{
    ngx_uint_t                  j;
    ngx_http_fairgate_slot_t   *sl;
    ngx_http_fairgate_wakes_t   wakes;

    ngx_http_fairgate_wakes_init(&wakes);

    ngx_shmtx_lock(&zone->shpool->mutex);

    for (j = 0; j < NGX_HTTP_FAIRGATE_SLOTS; j++) {
        sl = &zone->sh->slots[j];

        if (sl->pid == 0) {
            continue;
        }

        if (sl->pid == ngx_pid
            || (kill(sl->pid, 0) == -1 && ngx_errno == NGX_ESRCH))
        {
            ngx_http_fairgate_reclaim_locked(zone, j, 0, cycle->log);
        }
    }

    for (j = 0; j < NGX_HTTP_FAIRGATE_SLOTS; j++) {
        sl = &zone->sh->slots[j];

        if (sl->pid == 0) {
            sl->pid = ngx_pid;
            zone->slot = j;
            break;
        }
    }

    ngx_http_fairgate_dispatch_locked(zone, &wakes);

    ngx_shmtx_unlock(&zone->shpool->mutex);

    ngx_http_fairgate_wake(zone, &wakes);

    if (zone->slot == NGX_HTTP_FAIRGATE_NO_SLOT) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "fairgate_zone \"%V\" has no free slot for this "
                      "worker: more than %d worker processes",
                      &zone->name, NGX_HTTP_FAIRGATE_SLOTS);
    }
}


void
ngx_http_fairgate_workers_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                       i;
    ngx_http_fairgate_zone_t       **zone, *z;
    ngx_http_fairgate_wakes_t        wakes;
    ngx_http_fairgate_main_conf_t   *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(cycle);

    if (fmcf != NULL && ngx_http_fairgate_wake_conn != NULL) {

        zone = fmcf->zones.elts;

        for (i = 0; i < fmcf->zones.nelts; i++) {
            z = zone[i];

            if (z->slot == NGX_HTTP_FAIRGATE_NO_SLOT) {
                continue;
            }

            ngx_http_fairgate_wakes_init(&wakes);

            ngx_shmtx_lock(&z->shpool->mutex);

            ngx_http_fairgate_reclaim_locked(z, z->slot, 1, cycle->log);
            z->slot = NGX_HTTP_FAIRGATE_NO_SLOT;

            ngx_http_fairgate_dispatch_locked(z, &wakes);

            ngx_shmtx_unlock(&z->shpool->mutex);

            wakes.self = 0;
            ngx_http_fairgate_wake(z, &wakes);
        }
    }

    if (ngx_http_fairgate_wake_conn) {
        ngx_close_connection(ngx_http_fairgate_wake_conn);
        ngx_http_fairgate_wake_conn = NULL;
    }
}


static void
ngx_http_fairgate_wake_handler(ngx_event_t *ev)
{
    u_char             buf[64];
    ssize_t            n;
    ngx_connection_t  *c;

    c = ev->data;

    /* the datagrams only wake; the ready lists say what to do */

    for ( ;; ) {
        n = recv(c->fd, buf, sizeof(buf), 0);

        if (n == -1) {
            break;
        }
    }

    ev->ready = 0;

    if (ngx_handle_read_event(ev, 0) != NGX_OK) {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0,
                      "fairgate: wake-up socket event failed");
    }

    ngx_http_fairgate_ready_handler(&ngx_http_fairgate_ready_event);
}


/*
 * Resumes this worker's requests dispatched for it, one at a time, through
 * the event each owner gave at admission.
 */

static void
ngx_http_fairgate_ready_handler(ngx_event_t *ev)
{
    ngx_uint_t                       i;
    ngx_queue_t                     *q;
    ngx_event_t                     *resume;
    ngx_http_fairgate_node_t        *node;
    ngx_http_fairgate_slot_t        *sl;
    ngx_http_fairgate_zone_t       **zone, *z;
    ngx_http_fairgate_main_conf_t   *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(ngx_cycle);
    if (fmcf == NULL) {
        return;
    }

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        z = zone[i];

        if (z->slot == NGX_HTTP_FAIRGATE_NO_SLOT) {
            continue;
        }

        sl = &z->sh->slots[z->slot];

        for ( ;; ) {
            ngx_shmtx_lock(&z->shpool->mutex);

            if (ngx_queue_empty(&sl->ready)) {
                ngx_shmtx_unlock(&z->shpool->mutex);
                break;
            }

            q = ngx_queue_head(&sl->ready);
            ngx_queue_remove(q);

            node = ngx_queue_data(q, ngx_http_fairgate_node_t, ready);
            node->ready_set = 0;
            resume = node->resume;

            ngx_shmtx_unlock(&z->shpool->mutex);

            /* the owner's handler goes on with the request */
            resume->handler(resume);
        }
    }
}

