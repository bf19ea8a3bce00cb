
/*
 * fairgate: hiredis's async API in nginx's event loop, the module's own
 * adapter.  A connection wraps hiredis's socket; hiredis's hooks add and
 * delete level-triggered events on it (hiredis reads 16 KB a call, and an
 * edge-triggered event would stall a larger reply), the events call
 * hiredis's handlers, and the cleanup hook gives the connection back
 * without closing the socket, which hiredis closes.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_fairgate_redis.h"


static void ngx_http_fairgate_redis_read_handler(ngx_event_t *ev);
static void ngx_http_fairgate_redis_write_handler(ngx_event_t *ev);
static void ngx_http_fairgate_redis_add_read(void *data);
static void ngx_http_fairgate_redis_del_read(void *data);
static void ngx_http_fairgate_redis_add_write(void *data);
static void ngx_http_fairgate_redis_del_write(void *data);
static void ngx_http_fairgate_redis_cleanup(void *data);


/* NULL: no free connection (the caller frees ac) */

ngx_connection_t *
ngx_http_fairgate_redis_attach(redisAsyncContext *ac, ngx_log_t *log)
{
    ngx_connection_t  *c;

    c = ngx_get_connection(ac->c.fd, log);
    if (c == NULL) {
        return NULL;
    }

    c->data = ac;
    c->read->handler = ngx_http_fairgate_redis_read_handler;
    c->write->handler = ngx_http_fairgate_redis_write_handler;
    c->read->log = log;
    c->write->log = log;

    ac->ev.data = c;
    ac->ev.addRead = ngx_http_fairgate_redis_add_read;
    ac->ev.delRead = ngx_http_fairgate_redis_del_read;
    ac->ev.addWrite = ngx_http_fairgate_redis_add_write;
    ac->ev.delWrite = ngx_http_fairgate_redis_del_write;
    ac->ev.cleanup = ngx_http_fairgate_redis_cleanup;

    return c;
}


static void
ngx_http_fairgate_redis_read_handler(ngx_event_t *ev)
{
    ngx_connection_t  *c = ev->data;

    redisAsyncHandleRead(c->data);
}


static void
ngx_http_fairgate_redis_write_handler(ngx_event_t *ev)
{
    ngx_connection_t  *c = ev->data;

    redisAsyncHandleWrite(c->data);
}


/* what hiredis's four hooks ask of the connection's read or write event */

static void
ngx_http_fairgate_redis_add(ngx_connection_t *c, ngx_uint_t write)
{
    ngx_event_t  *ev;

    ev = write ? c->write : c->read;

    if (!ev->active
        && ngx_add_event(ev, write ? NGX_WRITE_EVENT : NGX_READ_EVENT,
                         NGX_LEVEL_EVENT)
           != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0,
                      "fairgate_redis: adding a %s event failed",
                      write ? "write" : "read");
    }
}


static void
ngx_http_fairgate_redis_del(ngx_connection_t *c, ngx_uint_t write)
{
    ngx_event_t  *ev;

    ev = write ? c->write : c->read;

    if (ev->active) {
        (void) ngx_del_event(ev, write ? NGX_WRITE_EVENT : NGX_READ_EVENT, 0);
    }
}


static void
ngx_http_fairgate_redis_add_read(void *data)
{
    ngx_http_fairgate_redis_add(data, 0);
}


static void
ngx_http_fairgate_redis_del_read(void *data)
{
    ngx_http_fairgate_redis_del(data, 0);
}


static void
ngx_http_fairgate_redis_add_write(void *data)
{
    ngx_http_fairgate_redis_add(data, 1);
}


static void
ngx_http_fairgate_redis_del_write(void *data)
{
    ngx_http_fairgate_redis_del(data, 1);
}


/* hiredis is done with the socket and closes it itself */

static void
ngx_http_fairgate_redis_cleanup(void *data)
{
    ngx_connection_t  *c = data;

    if (c->read->active) {
        (void) ngx_del_event(c->read, NGX_READ_EVENT, NGX_CLOSE_EVENT);
    }

    if (c->write->active) {
        (void) ngx_del_event(c->write, NGX_WRITE_EVENT, NGX_CLOSE_EVENT);
    }

    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }

    c->read->closed = 1;
    c->write->closed = 1;

    ngx_free_connection(c);

    c->fd = (ngx_socket_t) -1;
}
