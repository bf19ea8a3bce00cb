
/*
 * fairgate: "fairgate_quota_state DIRECTORY [interval=TIME];", the quota
 * windows' counts (fairgate_quota) kept in a file of each zone,
 * DIRECTORY/ZONE.quota, so that they survive restarts and binary
 * upgrades, with or without Redis.
 *
 * The file holds what THIS gateway counted, a line a bucket (a calendar
 * or fixed window's, or one of a rolling window's):
 *
 *     KIND UNIT ROLLING LENGTH START REQUESTS TOKENS COST NAME
 *
 * A worker writes it every interval (one worker an interval: the zone
 * says when it was last written) and each worker at its exit, a new file
 * renamed into place, so that a reader never sees half of one.  A zone
 * made anew (nginx started, or a binary upgrade; a reload keeps the zone
 * and its counts) reads it once, in the master before the workers start:
 * each bucket goes into its tenant's window, the larger of each count
 * where the zone already has one.  Redis's own field of this gateway is
 * then merged the same way by the first sync round (_qsync.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <stdlib.h>

#include "ngx_http_fairgate_redis.h"
#include "ngx_http_fairgate_param.h"


#define NGX_HTTP_FAIRGATE_QSTATE_INTERVAL  1000
#define NGX_HTTP_FAIRGATE_QSTATE_LINE      (8 * NGX_INT64_LEN + 16)


static ngx_int_t ngx_http_fairgate_qstate_name(ngx_pool_t *pool,
    ngx_http_fairgate_qstate_conf_t *qc, ngx_http_fairgate_zone_t *zone,
    ngx_str_t *name, ngx_uint_t tmp);
static void ngx_http_fairgate_qstate_read(ngx_http_fairgate_qstate_conf_t *qc,
    ngx_http_fairgate_zone_t *zone, ngx_log_t *log);
static ngx_uint_t ngx_http_fairgate_qstate_load(
    ngx_http_fairgate_zone_t *zone, u_char *p, u_char *last);
static ngx_int_t ngx_http_fairgate_qstate_line(u_char *p, u_char *eol,
    ngx_http_fairgate_qentry_t *e);
static void ngx_http_fairgate_qstate_tick(ngx_event_t *ev);
static void ngx_http_fairgate_qstate_write(
    ngx_http_fairgate_qstate_conf_t *qc, ngx_http_fairgate_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_fairgate_qstate_save(ngx_str_t *name,
    ngx_array_t *entries, ngx_log_t *log);


static ngx_event_t  ngx_http_fairgate_qstate_event;


char *
ngx_http_fairgate_qstate(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_main_conf_t  *fmcf = conf;

    ngx_str_t                        *value;
    ngx_file_info_t                   fi;
    ngx_http_fairgate_qstate_conf_t  *qc;

    if (fmcf->qstate) {
        return "is duplicate";
    }

    value = cf->args->elts;

    qc = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_qstate_conf_t));
    if (qc == NULL) {
        return NGX_CONF_ERROR;
    }

    qc->path = value[1];
    qc->interval = NGX_HTTP_FAIRGATE_QSTATE_INTERVAL;

    if (ngx_conf_full_name(cf->cycle, &qc->path, 0) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_file_info(qc->path.data, &fi) == NGX_FILE_ERROR
        || !ngx_is_dir(&fi))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "\"fairgate_quota_state\" needs a directory, "
                           "\"%V\" is not one", &qc->path);
        return NGX_CONF_ERROR;
    }

    if (cf->args->nelts == 3) {
        if (ngx_strncmp(value[2].data, "interval=", 9) != 0
            || (qc->interval = ngx_http_fairgate_param_msec(
                                   value[2].data + 9, value[2].len - 9, 100,
                                   3600000))
               == (ngx_msec_t) NGX_ERROR)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" in "
                               "\"fairgate_quota_state\", expected "
                               "interval=100ms to 1h", &value[2]);
            return NGX_CONF_ERROR;
        }
    }

    fmcf->qstate = qc;

    return NGX_CONF_OK;
}


/* DIRECTORY/ZONE.quota, or the new file written: ZONE.quota.PID */

static ngx_int_t
ngx_http_fairgate_qstate_name(ngx_pool_t *pool,
    ngx_http_fairgate_qstate_conf_t *qc, ngx_http_fairgate_zone_t *zone,
    ngx_str_t *name, ngx_uint_t tmp)
{
    u_char  *p;

    name->data = ngx_pnalloc(pool, qc->path.len + zone->name.len
                                   + NGX_INT64_LEN + 16);
    if (name->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(name->data, "%V/%V.quota", &qc->path, &zone->name);

    if (tmp) {
        p = ngx_sprintf(p, ".%P", ngx_pid);
    }

    *p = '\0';
    name->len = p - name->data;

    return NGX_OK;
}


/*
 * In the master, the cycle committed: each new zone's file read into it,
 * before any worker counts in it (a reload keeps the zone, and reads
 * nothing)
 */

void
ngx_http_fairgate_qstate_init_module(ngx_cycle_t *cycle)
{
    ngx_uint_t                      i, read;
    ngx_http_fairgate_zone_t      **zone;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(cycle);

    /* nginx -t counts nothing */
    if (fmcf == NULL || fmcf->qstate == NULL || ngx_test_config) {
        return;
    }

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        ngx_shmtx_lock(&zone[i]->shpool->mutex);

        read = (zone[i]->sh->redis.qstate == 0);

        if (read) {
            zone[i]->sh->redis.qstate = 1;
        }

        ngx_shmtx_unlock(&zone[i]->shpool->mutex);

        if (read) {
            ngx_http_fairgate_qstate_read(fmcf->qstate, zone[i], cycle->log);
        }
    }
}


/* in a worker: the writes' timer */

void
ngx_http_fairgate_qstate_init_process(ngx_cycle_t *cycle)
{
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(cycle);

    if (fmcf == NULL || fmcf->qstate == NULL) {
        return;
    }

    ngx_http_fairgate_qstate_event.handler = ngx_http_fairgate_qstate_tick;
    ngx_http_fairgate_qstate_event.data = fmcf->qstate;
    ngx_http_fairgate_qstate_event.log = cycle->log;
    ngx_http_fairgate_qstate_event.cancelable = 1;

    ngx_add_timer(&ngx_http_fairgate_qstate_event, fmcf->qstate->interval);
}


/* at a worker's exit, each zone's file written with its last counts */

void
ngx_http_fairgate_qstate_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                      i;
    ngx_http_fairgate_zone_t      **zone;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(cycle);

    if (fmcf == NULL || fmcf->qstate == NULL) {
        return;
    }

    if (ngx_http_fairgate_qstate_event.timer_set) {
        ngx_del_timer(&ngx_http_fairgate_qstate_event);
    }

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        ngx_http_fairgate_qstate_write(fmcf->qstate, zone[i], cycle->log);
    }
}


static void
ngx_http_fairgate_qstate_tick(ngx_event_t *ev)
{
    ngx_http_fairgate_qstate_conf_t  *qc = ev->data;

    ngx_msec_t                      now;
    ngx_uint_t                      i, due;
    ngx_http_fairgate_zone_t      **zone;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf((ngx_cycle_t *) ngx_cycle);

    if (fmcf == NULL || fmcf->qstate != qc) {
        return;
    }

    now = ngx_http_fairgate_wall_msec();
    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        ngx_shmtx_lock(&zone[i]->shpool->mutex);

        due = (zone[i]->sh->redis.qstate == 2
               && now - zone[i]->sh->redis.qwritten >= qc->interval);

        if (due) {
            zone[i]->sh->redis.qwritten = now;
        }

        ngx_shmtx_unlock(&zone[i]->shpool->mutex);

        if (due) {
            ngx_http_fairgate_qstate_write(qc, zone[i], ev->log);
        }
    }

    if (!(ngx_exiting || ngx_quit || ngx_terminate)) {
        ngx_add_timer(ev, qc->interval);
    }
}


/* the zone's file into it; a missing file is a first start */

static void
ngx_http_fairgate_qstate_read(ngx_http_fairgate_qstate_conf_t *qc,
    ngx_http_fairgate_zone_t *zone, ngx_log_t *log)
{
    u_char           *buf;
    ssize_t           n;
    ngx_fd_t          fd;
    ngx_str_t         name;
    ngx_pool_t       *pool;
    ngx_uint_t        loaded;
    ngx_file_info_t   fi;

    pool = ngx_create_pool(4096, log);
    buf = NULL;
    loaded = 0;
    fd = NGX_INVALID_FILE;

    if (pool && ngx_http_fairgate_qstate_name(pool, qc, zone, &name, 0)
                == NGX_OK)
    {
        fd = ngx_open_file(name.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    }

    if (fd != NGX_INVALID_FILE && ngx_fd_info(fd, &fi) != NGX_FILE_ERROR) {
        buf = ngx_pnalloc(pool, (size_t) ngx_file_size(&fi) + 1);
    }

    if (buf) {
        n = ngx_read_fd(fd, buf, (size_t) ngx_file_size(&fi));

        if (n == (ssize_t) ngx_file_size(&fi)) {
            buf[n] = '\0';
            loaded = ngx_http_fairgate_qstate_load(zone, buf, buf + n);

            ngx_log_error(NGX_LOG_NOTICE, log, 0,
                          "fairgate_quota_state: zone \"%V\" read from "
                          "\"%V\", buckets: %ui", &zone->name, &name,
                          loaded);

        } else {
            ngx_log_error(NGX_LOG_ERR, log, ngx_errno,
                          "fairgate_quota_state: reading \"%V\" failed",
                          &name);
        }
    }

    if (fd != NGX_INVALID_FILE) {
        (void) ngx_close_file(fd);
    }

    if (pool) {
        ngx_destroy_pool(pool);
    }

    /* from now on, the zone's counts may be written */

    ngx_shmtx_lock(&zone->shpool->mutex);
    zone->sh->redis.qstate = 2;
    ngx_shmtx_unlock(&zone->shpool->mutex);
}


static ngx_uint_t
ngx_http_fairgate_qstate_load(ngx_http_fairgate_zone_t *zone, u_char *p,
    u_char *last)
{
    u_char                      *eol;
    ngx_uint_t                   n;
    ngx_http_fairgate_qentry_t   e;

    n = 0;

    for ( /* void */ ; p < last; p = eol + 1) {
        eol = ngx_strlchr(p, last, '\n');

        if (eol == NULL) {
            /* a line cut short: the file is renamed whole, never cut */
            break;
        }

        if (*p == '#' || ngx_http_fairgate_qstate_line(p, eol, &e) != NGX_OK)
        {
            continue;
        }

        ngx_shmtx_lock(&zone->shpool->mutex);

        if (ngx_http_fairgate_qcount_merge(zone, &e, 1) == NGX_OK) {
            n++;
        }

        ngx_shmtx_unlock(&zone->shpool->mutex);
    }

    return n;
}


/* KIND UNIT ROLLING LENGTH START REQUESTS TOKENS COST NAME */

static ngx_int_t
ngx_http_fairgate_qstate_line(u_char *p, u_char *eol,
    ngx_http_fairgate_qentry_t *e)
{
    char        *s, *end;
    int64_t      v[8];
    ngx_uint_t   i;

    ngx_memzero(e, sizeof(ngx_http_fairgate_qentry_t));

    s = (char *) p;

    for (i = 0; i < 8; i++) {
        v[i] = strtoll(s, &end, 10);

        if (end == s || *end != ' ' || end >= (char *) eol) {
            return NGX_ERROR;
        }

        s = end + 1;
    }

    e->name.data = (u_char *) s;
    e->name.len = eol - (u_char *) s;

    e->kind = (ngx_uint_t) v[0];
    e->per.unit = (uint32_t) v[1];
    e->per.rolling = (uint32_t) v[2];
    e->per.length = v[3];
    e->c.start = v[4];
    e->c.requests = (uint64_t) v[5];
    e->c.tokens = (uint64_t) v[6];
    e->c.cost = (uint64_t) v[7];

    if (e->kind > NGX_HTTP_FAIRGATE_KEY || e->per.unit > FG_QUOTA_MONTH
        || e->per.rolling > 1 || fg_quota_per_check(&e->per) != 0
        || e->name.len == 0 || e->name.len > NGX_HTTP_FAIRGATE_NAME_LEN
        || e->c.start == INT64_MIN)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the zone's counts, as they are now, into its file */

static void
ngx_http_fairgate_qstate_write(ngx_http_fairgate_qstate_conf_t *qc,
    ngx_http_fairgate_zone_t *zone, ngx_log_t *log)
{
    ngx_int_t     rc;
    ngx_str_t     name, tmp;
    ngx_pool_t   *pool;
    ngx_array_t   entries;

    pool = ngx_create_pool(16384, log);
    if (pool == NULL) {
        return;
    }

    if (ngx_array_init(&entries, pool, 64,
                       sizeof(ngx_http_fairgate_qentry_t)) != NGX_OK
        || ngx_http_fairgate_qstate_name(pool, qc, zone, &name, 0) != NGX_OK
        || ngx_http_fairgate_qstate_name(pool, qc, zone, &tmp, 1) != NGX_OK)
    {
        ngx_destroy_pool(pool);
        return;
    }

    ngx_shmtx_lock(&zone->shpool->mutex);

    rc = (zone->sh->redis.qstate == 2)
         ? ngx_http_fairgate_qcount_copy(zone, &entries, 0, 0) : NGX_DECLINED;

    ngx_shmtx_unlock(&zone->shpool->mutex);

    if (rc == NGX_OK
        && ngx_http_fairgate_qstate_save(&tmp, &entries, log) == NGX_OK
        && ngx_rename_file(tmp.data, name.data) == NGX_FILE_ERROR)
    {
        ngx_log_error(NGX_LOG_ERR, log, ngx_errno,
                      "fairgate_quota_state: rename \"%V\" to \"%V\" failed",
                      &tmp, &name);
        (void) ngx_delete_file(tmp.data);
    }

    ngx_destroy_pool(pool);
}


static ngx_int_t
ngx_http_fairgate_qstate_save(ngx_str_t *name, ngx_array_t *entries,
    ngx_log_t *log)
{
    u_char                      *buf, *p;
    size_t                       size;
    ngx_fd_t                     fd;
    ngx_uint_t                   i;
    ngx_http_fairgate_qentry_t  *e;

    e = entries->elts;
    size = 64;

    for (i = 0; i < entries->nelts; i++) {
        size += NGX_HTTP_FAIRGATE_QSTATE_LINE + e[i].name.len;
    }

    buf = ngx_pnalloc(entries->pool, size);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(buf, "# fairgate quota state 1\n");

    for (i = 0; i < entries->nelts; i++) {
        p = ngx_sprintf(p, "%ui %uD %uD %L %L %uL %uL %uL %V\n", e[i].kind,
                        e[i].per.unit, e[i].per.rolling, e[i].per.length,
                        e[i].c.start, e[i].c.requests, e[i].c.tokens,
                        e[i].c.cost, &e[i].name);
    }

    fd = ngx_open_file(name->data, NGX_FILE_WRONLY, NGX_FILE_TRUNCATE,
                       NGX_FILE_DEFAULT_ACCESS);

    if (fd == NGX_INVALID_FILE
        || ngx_write_fd(fd, buf, p - buf) != p - buf)
    {
        ngx_log_error(NGX_LOG_ERR, log, ngx_errno,
                      "fairgate_quota_state: writing \"%V\" failed", name);

        if (fd != NGX_INVALID_FILE) {
            (void) ngx_close_file(fd);
            (void) ngx_delete_file(name->data);
        }

        return NGX_ERROR;
    }

    (void) ngx_close_file(fd);

    return NGX_OK;
}
