
/*
 * fairgate: the zone's clocks, the wall clock read from nginx's cached
 * time.  At the bottom of zone/: the tenants' records, the zone, its
 * dispatch and the Redis sync all read them.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_fairgate_zone.h"


/* the wall clock in seconds, for rate windows and the scheduler */

double
ngx_http_fairgate_now(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (double) tp->sec + tp->msec / 1000.0;
}


/* the wall clock in ms: zones outlive processes, so no monotonic time */

ngx_msec_t
ngx_http_fairgate_wall_msec(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (ngx_msec_t) tp->sec * 1000 + tp->msec;
}
