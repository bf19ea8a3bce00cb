
/*
 * fairgate: "fairgate_zone zone=NAME:SIZE [policy=P] [cost=C]
 * [max_tenants=N] [rpm=N] [wsc=A:B:G] [inflight=N] [inflight_tokens=N]
 * [interactions=N] [interaction_idle=TIME] [quantum=Q] [window=N]
 * [route=R] [order=O];", and the zones that fairgate and fairgate_status
 * name.
 *
 * Each parameter has its setter in a table; a parameter may be given once.
 * On a reload, what the new directive changes from the previous cycle's
 * zone of the same name decides whether the zone's state carries over
 * (ngx_http_fairgate_zone.c says how).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_zone.h"
#include "ngx_http_fairgate_param.h"


/* open interactions a zone tracks, and how long one may idle */
#define NGX_HTTP_FAIRGATE_INTERACTIONS     1024
#define NGX_HTTP_FAIRGATE_INTERACTION_IDLE 60000


/* the directive as it is read */
typedef struct {
    ngx_http_fairgate_zone_t    *zone;
    ssize_t                      size;
    ngx_uint_t                   set;        /* parameters given, by bit */
} ngx_http_fairgate_zone_args_t;


typedef struct ngx_http_fairgate_zone_param_s  ngx_http_fairgate_zone_param_t;

/* a parameter's setter: the setters below are declared with it */
typedef char *ngx_http_fairgate_zone_set_fn(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args, ngx_http_fairgate_zone_param_t *param,
    u_char *value);


struct ngx_http_fairgate_zone_param_s {
    ngx_str_t                       name;    /* with its "=" */
    ngx_http_fairgate_zone_set_fn  *set;
    size_t                          offset;  /* a number's field in the zone */
    size_t                          size;    /* ... and its size */
    ngx_int_t                       min;     /* ... and its bounds */
    ngx_int_t                       max;
    ngx_uint_t                      policies; /* only with these, by bit */
    char                           *needs;   /* ... as the error names them */
};


#define NGX_HTTP_FAIRGATE_POLICY(p)    ((ngx_uint_t) 1 << FG_POLICY_##p)
#define NGX_HTTP_FAIRGATE_UINT32(f)                                          \
    offsetof(ngx_http_fairgate_zone_t, f), sizeof(uint32_t)
#define NGX_HTTP_FAIRGATE_UINT(f)                                            \
    offsetof(ngx_http_fairgate_zone_t, f), sizeof(ngx_uint_t)


static ngx_http_fairgate_zone_set_fn  ngx_http_fairgate_zone_size;
static ngx_http_fairgate_zone_set_fn  ngx_http_fairgate_zone_policy;
static ngx_http_fairgate_zone_set_fn  ngx_http_fairgate_zone_cost;
static ngx_http_fairgate_zone_set_fn  ngx_http_fairgate_zone_number;
static ngx_http_fairgate_zone_set_fn  ngx_http_fairgate_zone_wsc;
static ngx_http_fairgate_zone_set_fn  ngx_http_fairgate_zone_idle;
static ngx_http_fairgate_zone_set_fn  ngx_http_fairgate_zone_quantum;
static ngx_http_fairgate_zone_set_fn  ngx_http_fairgate_zone_route;
static ngx_http_fairgate_zone_set_fn  ngx_http_fairgate_zone_order;
static char *ngx_http_fairgate_zone_invalid(ngx_conf_t *cf,
    ngx_http_fairgate_zone_param_t *param, u_char *value,
    const char *expected);
static char *ngx_http_fairgate_zone_args(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args);
static char *ngx_http_fairgate_zone_check(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args);
static char *ngx_http_fairgate_zone_add(ngx_conf_t *cf,
    ngx_http_fairgate_main_conf_t *fmcf, ngx_http_fairgate_zone_args_t *args);
static ngx_shm_zone_t *ngx_http_fairgate_previous_zone(ngx_conf_t *cf,
    ngx_str_t *name);
static u_char *ngx_http_fairgate_changes(ngx_conf_t *cf,
    ngx_http_fairgate_zone_t *prev, ngx_http_fairgate_zone_t *zone);


/* the parameters, in the order of their bits */
static ngx_http_fairgate_zone_param_t  ngx_http_fairgate_zone_params[] = {
    { ngx_string("zone="), ngx_http_fairgate_zone_size, 0, 0, 0, 0, 0, NULL },
    { ngx_string("policy="), ngx_http_fairgate_zone_policy, 0, 0, 0, 0, 0,
      NULL },
    { ngx_string("cost="), ngx_http_fairgate_zone_cost, 0, 0, 0, 0, 0, NULL },
    { ngx_string("max_tenants="), ngx_http_fairgate_zone_number,
      NGX_HTTP_FAIRGATE_UINT32(conf.max_clients), 1, NGX_HTTP_FAIRGATE_MAX32,
      0, NULL },
    { ngx_string("rpm="), ngx_http_fairgate_zone_number,
      NGX_HTTP_FAIRGATE_UINT32(conf.rpm_limit), 1, NGX_HTTP_FAIRGATE_MAX32,
      NGX_HTTP_FAIRGATE_POLICY(RPM), "\"rpm\"" },
    { ngx_string("inflight="), ngx_http_fairgate_zone_number,
      NGX_HTTP_FAIRGATE_UINT(inflight), 0, NGX_HTTP_FAIRGATE_MAX32, 0,
      NULL },
    { ngx_string("inflight_tokens="), ngx_http_fairgate_zone_number,
      NGX_HTTP_FAIRGATE_UINT(inflight_tokens), 0, NGX_HTTP_FAIRGATE_MAX32, 0,
      NULL },
    { ngx_string("wsc="), ngx_http_fairgate_zone_wsc, 0, 0, 0, 0,
      NGX_HTTP_FAIRGATE_POLICY(WSC), "\"wsc\"" },
    { ngx_string("interactions="), ngx_http_fairgate_zone_number,
      NGX_HTTP_FAIRGATE_UINT(interactions), 0, 16 * 1024 * 1024, 0, NULL },
    { ngx_string("interaction_idle="), ngx_http_fairgate_zone_idle, 0, 0, 0,
      0, 0, NULL },
    { ngx_string("quantum="), ngx_http_fairgate_zone_quantum, 0, 0, 0, 0,
      NGX_HTTP_FAIRGATE_POLICY(DLPM), "\"dlpm\"" },
    { ngx_string("window="), ngx_http_fairgate_zone_number,
      NGX_HTTP_FAIRGATE_UINT32(conf.window), 1, NGX_HTTP_FAIRGATE_MAX32,
      NGX_HTTP_FAIRGATE_POLICY(LPM) | NGX_HTTP_FAIRGATE_POLICY(DLPM),
      "\"lpm\" or \"dlpm\"" },
    { ngx_string("route="), ngx_http_fairgate_zone_route, 0, 0, 0, 0, 0,
      NULL },
    { ngx_string("order="), ngx_http_fairgate_zone_order, 0, 0, 0, 0, 0,
      NULL },
    { ngx_null_string, NULL, 0, 0, 0, 0, 0, NULL }
};

#define NGX_HTTP_FAIRGATE_ZONE_SET     (1 << 0)
#define NGX_HTTP_FAIRGATE_RPM_SET      (1 << 4)


char *
ngx_http_fairgate_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_main_conf_t  *fmcf = conf;

    char                           *rv;
    ngx_http_fairgate_zone_t       *zone;
    ngx_http_fairgate_zone_args_t   args;

    zone = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_zone_t));
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }

    fg_sched_conf_init(&zone->conf, NGX_HTTP_FAIRGATE_MAX_TENANTS);
    ngx_str_set(&zone->cost, "linear");

    zone->interactions = NGX_HTTP_FAIRGATE_INTERACTIONS;
    zone->interaction_idle = NGX_HTTP_FAIRGATE_INTERACTION_IDLE;

    args.zone = zone;
    args.size = 0;
    args.set = 0;

    rv = ngx_http_fairgate_zone_args(cf, &args);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    rv = ngx_http_fairgate_zone_check(cf, &args);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    return ngx_http_fairgate_zone_add(cf, fmcf, &args);
}


/*
 * Each word by its parameter's setter; the words of a directive are
 * NUL-terminated, so the policy core parses values as they are.
 */

static char *
ngx_http_fairgate_zone_args(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args)
{
    char                            *rv;
    ngx_str_t                       *value;
    ngx_uint_t                       i, k, bit;
    ngx_http_fairgate_zone_param_t  *p;

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        p = ngx_http_fairgate_zone_params;

        for (k = 0; p[k].set; k++) {
            if (ngx_strncmp(value[i].data, p[k].name.data, p[k].name.len)
                == 0)
            {
                break;
            }
        }

        if (p[k].set == NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" in \"fairgate_zone\"",
                               &value[i]);
            return NGX_CONF_ERROR;
        }

        rv = p[k].set(cf, args, &p[k], value[i].data + p[k].name.len);
        if (rv != NGX_CONF_OK) {
            return rv;
        }

        bit = (ngx_uint_t) 1 << k;

        if (args->set & bit) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate parameter \"%V\" "
                               "in \"fairgate_zone\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        args->set |= bit;
    }

    return NGX_CONF_OK;
}


/* a parameter's value refused: its name, the value, and what it expects */

static char *
ngx_http_fairgate_zone_invalid(ngx_conf_t *cf,
    ngx_http_fairgate_zone_param_t *param, u_char *value,
    const char *expected)
{
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid %*s \"%s\" in \"fairgate_zone\"%s",
                       param->name.len - 1, param->name.data, value,
                       expected);
    return NGX_CONF_ERROR;
}


/* zone=NAME:SIZE */

static char *
ngx_http_fairgate_zone_size(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args, ngx_http_fairgate_zone_param_t *param,
    u_char *value)
{
    ngx_int_t  rc;
    ngx_str_t  name;

    rc = ngx_http_fairgate_param_zone(value, ngx_strlen(value), &name,
                                      &args->size);

    if (rc == NGX_DECLINED) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid zone \"zone=%s\" in \"fairgate_zone\"",
                           value);
        return NGX_CONF_ERROR;
    }

    if (rc == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid zone size \"%s\" in \"fairgate_zone\"",
                           name.data + name.len + 1);
        return NGX_CONF_ERROR;
    }

    if (args->size < (ssize_t) (8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "zone \"%V\" is too small in \"fairgate_zone\"",
                           &name);
        return NGX_CONF_ERROR;
    }

    args->zone->name = name;

    return NGX_CONF_OK;
}


static char *
ngx_http_fairgate_zone_policy(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args, ngx_http_fairgate_zone_param_t *param,
    u_char *value)
{
    if (fg_sched_policy_parse(&args->zone->conf.policy, (char *) value)
        != FG_OK)
    {
        return ngx_http_fairgate_zone_invalid(cf, param, value, "");
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_fairgate_zone_cost(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args, ngx_http_fairgate_zone_param_t *param,
    u_char *value)
{
    if (fg_cost_parse(&args->zone->conf.cost, (char *) value) != 0) {
        return ngx_http_fairgate_zone_invalid(cf, param, value, "");
    }

    args->zone->cost.data = value;
    args->zone->cost.len = ngx_strlen(value);

    return NGX_CONF_OK;
}


/*
 * max_tenants=, rpm=, window= (the scheduler's), inflight=,
 * inflight_tokens= (the upstream's capacity), interactions=: a whole number
 * within the parameter's bounds, into its field of the zone.
 */

static char *
ngx_http_fairgate_zone_number(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args, ngx_http_fairgate_zone_param_t *param,
    u_char *value)
{
    char       *field;
    ngx_int_t   n;
    u_char      expected[NGX_INT_T_LEN * 2 + sizeof(", expected  to ")];

    n = ngx_http_fairgate_param_number(value, ngx_strlen(value), param->min,
                                       param->max);

    if (n == NGX_ERROR) {
        ngx_sprintf(expected, ", expected %i to %i%Z", param->min, param->max);
        return ngx_http_fairgate_zone_invalid(cf, param, value,
                                              (char *) expected);
    }

    field = (char *) args->zone + param->offset;

    if (param->size == sizeof(uint32_t)) {
        *(uint32_t *) field = (uint32_t) n;

    } else {
        *(ngx_uint_t *) field = (ngx_uint_t) n;
    }

    return NGX_CONF_OK;
}


/* wsc=ALPHA:BETA:GAMMA */

static char *
ngx_http_fairgate_zone_wsc(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args, ngx_http_fairgate_zone_param_t *param,
    u_char *value)
{
    char    *p, *end;
    double   w[3];
    size_t   i;

    p = (char *) value;

    for (i = 0; i < 3; i++) {
        w[i] = strtod(p, &end);

        if (end == p || !(w[i] >= 0 && w[i] < 1e9)
            || *end != (i < 2 ? ':' : '\0'))
        {
            goto invalid;
        }

        p = end + 1;
    }

    if (w[2] == 0) {
        goto invalid;
    }

    args->zone->conf.wsc_alpha = w[0];
    args->zone->conf.wsc_beta = w[1];
    args->zone->conf.wsc_gamma = w[2];

    return NGX_CONF_OK;

invalid:

    return ngx_http_fairgate_zone_invalid(cf, param, value,
                                          ", expected ALPHA:BETA:GAMMA, the "
                                          "token weights of input, system "
                                          "prompt and output (GAMMA above 0)");
}


static char *
ngx_http_fairgate_zone_idle(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args, ngx_http_fairgate_zone_param_t *param,
    u_char *value)
{
    ngx_msec_t  ms;

    ms = ngx_http_fairgate_param_msec(value, ngx_strlen(value), 1,
                                      NGX_HTTP_FAIRGATE_NO_MAX);

    if (ms == (ngx_msec_t) NGX_ERROR) {
        return ngx_http_fairgate_zone_invalid(cf, param, value, "");
    }

    args->zone->interaction_idle = ms;

    return NGX_CONF_OK;
}


/* quantum=Q: dlpm's deficit refill, in the cost's units */

static char *
ngx_http_fairgate_zone_quantum(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args, ngx_http_fairgate_zone_param_t *param,
    u_char *value)
{
    char    *end;
    double   q;

    q = strtod((char *) value, &end);

    if (end == (char *) value || *end != '\0' || !(q > 0 && q < 1e12)) {
        return ngx_http_fairgate_zone_invalid(cf, param, value,
                                              ", expected a number above 0 "
                                              "(cost units)");
    }

    args->zone->conf.quantum = q;

    return NGX_CONF_OK;
}


/* route=prefix|least-load|round-robin: how a request picks an engine */

static char *
ngx_http_fairgate_zone_route(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args, ngx_http_fairgate_zone_param_t *param,
    u_char *value)
{
    if (fg_sched_route_parse(&args->zone->conf.route, (char *) value)
        != FG_OK)
    {
        return ngx_http_fairgate_zone_invalid(cf, param, value,
                                              ", expected prefix, least-load "
                                              "or round-robin");
    }

    return NGX_CONF_OK;
}


/* order=arrival|qoe: which of a tenant's waiting requests goes first */

static char *
ngx_http_fairgate_zone_order(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args, ngx_http_fairgate_zone_param_t *param,
    u_char *value)
{
    ngx_int_t  order;

    static ngx_conf_enum_t  orders[] = {
        { ngx_string("arrival"), FG_ORDER_ARRIVAL },
        { ngx_string("qoe"), FG_ORDER_QOE },
        { ngx_null_string, 0 }
    };

    order = ngx_http_fairgate_param_enum(value, ngx_strlen(value), orders);

    if (order == NGX_ERROR) {
        return ngx_http_fairgate_zone_invalid(cf, param, value,
                                              ", expected arrival or qoe");
    }

    args->zone->conf.order = (fg_order_e) order;

    return NGX_CONF_OK;
}


/* what the parameters say together */

static char *
ngx_http_fairgate_zone_check(ngx_conf_t *cf,
    ngx_http_fairgate_zone_args_t *args)
{
    ngx_uint_t                       k;
    fg_sched_conf_t                 *conf;
    ngx_http_fairgate_zone_param_t  *p;

    conf = &args->zone->conf;

    if (!(args->set & NGX_HTTP_FAIRGATE_ZONE_SET)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "missing \"zone=NAME:SIZE\" in \"fairgate_zone\"");
        return NGX_CONF_ERROR;
    }

    if (conf->policy == FG_POLICY_RPM
        && !(args->set & NGX_HTTP_FAIRGATE_RPM_SET))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "policy \"rpm\" needs \"rpm=N\" "
                           "in \"fairgate_zone\"");
        return NGX_CONF_ERROR;
    }

    /* the parameters that go with some policies only */

    for (p = ngx_http_fairgate_zone_params, k = 0; p[k].set; k++) {
        if (p[k].policies == 0 || !(args->set & ((ngx_uint_t) 1 << k))
            || (p[k].policies & ((ngx_uint_t) 1 << conf->policy)))
        {
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" needs policy %s, not \"%s\", "
                           "in \"fairgate_zone\"", &p[k].name, p[k].needs,
                           fg_sched_policy_name(conf->policy));
        return NGX_CONF_ERROR;
    }

    if (conf->order == FG_ORDER_QOE
        && (conf->policy == FG_POLICY_LPM || conf->policy == FG_POLICY_DLPM))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"order=qoe\" does not work with policy \"%s\" "
                           "(it orders by cached prefix) in "
                           "\"fairgate_zone\"",
                           fg_sched_policy_name(conf->policy));
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * The zone added to the cycle's shared memory, and on a reload compared
 * with the previous cycle's zone of its name.
 */

static char *
ngx_http_fairgate_zone_add(ngx_conf_t *cf, ngx_http_fairgate_main_conf_t *fmcf,
    ngx_http_fairgate_zone_args_t *args)
{
    ngx_uint_t                  i;
    ngx_shm_zone_t             *shm_zone, *prev;
    ngx_http_fairgate_zone_t   *zone, **zonep;

    zone = args->zone;
    zonep = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        if (zonep[i]->name.len == zone->name.len
            && ngx_strncmp(zonep[i]->name.data, zone->name.data,
                           zone->name.len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate zone \"%V\" in \"fairgate_zone\"",
                               &zone->name);
            return NGX_CONF_ERROR;
        }
    }

    shm_zone = ngx_shared_memory_add(cf, &zone->name, args->size,
                                     &ngx_http_fairgate_module);
    if (shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    zone->shm_zone = shm_zone;

    shm_zone->init = ngx_http_fairgate_init_zone;
    shm_zone->data = zone;

    prev = ngx_http_fairgate_previous_zone(cf, &zone->name);

    if (prev) {
        zone->previous = prev;
        zone->changes = ngx_http_fairgate_changes(cf, prev->data, zone);

        if (zone->changes == NULL) {
            return NGX_CONF_ERROR;
        }

        if (zone->changes[0] != '\0') {
            /* a fresh zone: see ngx_http_fairgate_zone.c */
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

    if (o->quantum != n->quantum || o->window != n->window
        || o->route != n->route || o->order != n->order)
    {
        p = ngx_slprintf(p, last, ", quantum, window, route or order "
                         "changed");
    }

    if (prev->interactions != zone->interactions) {
        p = ngx_slprintf(p, last, ", interactions %ui -> %ui",
                         prev->interactions, zone->interactions);
    }

    *p = '\0';

    /* skip the leading ", " */

    return (p == text) ? text : text + 2;
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

