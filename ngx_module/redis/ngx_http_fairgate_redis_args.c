
/*
 * fairgate: a script call's arguments for hiredis's argv API, formatted
 * into one buffer from the round's pool: the per-minute counters' rounds
 * (_sync.c) and the quota windows' (_qsync.c) build their calls alike.
 * hiredis copies a command into its own buffer, so the pool may go once
 * the call is sent.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_fairgate_redis.h"


ngx_int_t
ngx_http_fairgate_redis_args_init(ngx_http_fairgate_redis_args_t *a,
    ngx_pool_t *pool, ngx_uint_t argc, size_t size)
{
    a->argv = ngx_palloc(pool, argc * sizeof(char *));
    a->argvlen = ngx_palloc(pool, argc * sizeof(size_t));
    a->p = ngx_pnalloc(pool, size);

    if (a->argv == NULL || a->argvlen == NULL || a->p == NULL) {
        return NGX_ERROR;
    }

    a->argc = 0;
    a->last = a->p + size;

    return NGX_OK;
}


/* an argument as it is: a literal, the script */

void
ngx_http_fairgate_redis_arg(ngx_http_fairgate_redis_args_t *a,
    const char *s, size_t len)
{
    a->argv[a->argc] = s;
    a->argvlen[a->argc++] = len;
}


/* an argument formatted into the buffer; when it is full the argument is
 * cut, and the caller, seeing a->p at a->last, sends nothing */

void
ngx_http_fairgate_redis_argf(ngx_http_fairgate_redis_args_t *a,
    const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(a->p, a->last, fmt, args);
    va_end(args);

    ngx_http_fairgate_redis_arg_end(a, p);
}


/* the argument written into the buffer from a->p up to p */

void
ngx_http_fairgate_redis_arg_end(ngx_http_fairgate_redis_args_t *a, u_char *p)
{
    a->argv[a->argc] = (char *) a->p;
    a->argvlen[a->argc++] = p - a->p;
    a->p = p;
}
