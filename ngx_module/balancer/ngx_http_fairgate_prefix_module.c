
/*
 * fairgate: the fairgate_prefix module.  The directive (in an upstream
 * block), the upstream's set-up on top of round robin's peers, and the
 * variables $fairgate_prefix_match and $fairgate_prefix_blocks.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_prefix.h"
#include "ngx_http_fairgate_param.h"


/* a zone of its own when none is named: this much per block indexed */
#define NGX_HTTP_FAIRGATE_PREFIX_ENTRY_SIZE  72


/* a number parameter of the directive, and its bounds */
typedef struct {
    ngx_str_t                          name;
    ngx_uint_t                         offset;
    ngx_uint_t                         min;
    ngx_uint_t                         max;
} ngx_http_fairgate_prefix_param_t;


static ngx_int_t ngx_http_fairgate_prefix_add_variables(ngx_conf_t *cf);
static void *ngx_http_fairgate_prefix_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_fairgate_prefix_create_conf(ngx_conf_t *cf);
static char *ngx_http_fairgate_prefix(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fairgate_prefix_zone(ngx_conf_t *cf,
    ngx_http_fairgate_prefix_conf_t *pcf, ngx_str_t *value);
static ngx_int_t ngx_http_fairgate_prefix_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_fairgate_prefix_names(ngx_conf_t *cf,
    ngx_http_fairgate_prefix_conf_t *pcf, ngx_http_upstream_rr_peers_t *peers);
static ngx_int_t ngx_http_fairgate_prefix_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static ngx_http_fairgate_prefix_param_t  ngx_http_fairgate_prefix_params[] = {
    { ngx_string("block="),
      offsetof(ngx_http_fairgate_prefix_conf_t, block), 8, 65536 },
    { ngx_string("blocks="),
      offsetof(ngx_http_fairgate_prefix_conf_t, blocks), 1, 4096 },
    { ngx_string("entries="),
      offsetof(ngx_http_fairgate_prefix_conf_t, entries), 1, 1 << 24 },
    { ngx_string("imbalance="),
      offsetof(ngx_http_fairgate_prefix_conf_t, imbalance), 0, 1 << 20 },
    { ngx_null_string, 0, 0, 0 }
};


static ngx_command_t  ngx_http_fairgate_prefix_commands[] = {

    { ngx_string("fairgate_prefix"),
      NGX_HTTP_UPS_CONF|NGX_CONF_ANY,
      ngx_http_fairgate_prefix,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_fairgate_prefix_module_ctx = {
    ngx_http_fairgate_prefix_add_variables, /* preconfiguration */
    NULL,                                  /* postconfiguration */

    ngx_http_fairgate_prefix_create_main_conf, /* create main configuration */
    NULL,                                  /* init main configuration */

    ngx_http_fairgate_prefix_create_conf,  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_fairgate_prefix_module = {
    NGX_MODULE_V1,
    &ngx_http_fairgate_prefix_module_ctx,  /* module context */
    ngx_http_fairgate_prefix_commands,     /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_http_variable_t  ngx_http_fairgate_prefix_vars[] = {

    { ngx_string("fairgate_prefix_match"), NULL,
      ngx_http_fairgate_prefix_variable,
      offsetof(ngx_http_fairgate_prefix_peer_data_t, matched),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_prefix_blocks"), NULL,
      ngx_http_fairgate_prefix_variable,
      offsetof(ngx_http_fairgate_prefix_peer_data_t, nhashes),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


/* the most prompt text any upstream of this configuration hashes */

size_t
ngx_http_fairgate_prefix_text(ngx_http_request_t *r)
{
    ngx_http_fairgate_prefix_main_conf_t  *pmcf;

    pmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_prefix_module);

    return pmcf->text;
}


static ngx_int_t
ngx_http_fairgate_prefix_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_fairgate_prefix_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static void *
ngx_http_fairgate_prefix_create_main_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool,
                       sizeof(ngx_http_fairgate_prefix_main_conf_t));
}


static void *
ngx_http_fairgate_prefix_create_conf(ngx_conf_t *cf)
{
    ngx_http_fairgate_prefix_conf_t  *pcf;

    pcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_prefix_conf_t));
    if (pcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     pcf->shm_zone = NULL;
     *     pcf->names = NULL;
     *     pcf->slots = NULL;
     */

    pcf->block = NGX_CONF_UNSET_UINT;
    pcf->blocks = NGX_CONF_UNSET_UINT;
    pcf->entries = NGX_CONF_UNSET_UINT;
    pcf->imbalance = NGX_CONF_UNSET_UINT;

    return pcf;
}


/*
 * fairgate_prefix [zone=NAME:SIZE] [block=BYTES] [blocks=N] [entries=N]
 *                 [imbalance=N];
 */

static char *
ngx_http_fairgate_prefix(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_prefix_conf_t  *pcf = conf;

    size_t                                 text;
    ngx_int_t                              n;
    ngx_str_t                             *value;
    ngx_uint_t                             i, *field;
    ngx_http_upstream_srv_conf_t          *uscf;
    ngx_http_fairgate_prefix_param_t      *p;
    ngx_http_fairgate_prefix_main_conf_t  *pmcf;

    if (pcf->upstream) {
        return "is duplicate";
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {
            if (ngx_http_fairgate_prefix_zone(cf, pcf, &value[i])
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        for (p = ngx_http_fairgate_prefix_params; p->name.len; p++) {
            if (ngx_strncmp(value[i].data, p->name.data, p->name.len) == 0) {
                break;
            }
        }

        if (p->name.len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" in "
                               "\"fairgate_prefix\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        field = (ngx_uint_t *) ((u_char *) pcf + p->offset);

        if (*field != NGX_CONF_UNSET_UINT) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\" in \"fairgate_prefix\": "
                               "given twice", &value[i]);
            return NGX_CONF_ERROR;
        }

        n = ngx_http_fairgate_param_number(value[i].data + p->name.len,
                                           value[i].len - p->name.len,
                                           p->min, p->max);

        if (n == NGX_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\" in \"fairgate_prefix\": "
                               "expected a number of %ui to %ui",
                               &value[i], p->min, p->max);
            return NGX_CONF_ERROR;
        }

        *field = n;
    }

    ngx_conf_init_uint_value(pcf->block, NGX_HTTP_FAIRGATE_PREFIX_BLOCK);
    ngx_conf_init_uint_value(pcf->blocks, NGX_HTTP_FAIRGATE_PREFIX_BLOCKS);
    ngx_conf_init_uint_value(pcf->entries, NGX_HTTP_FAIRGATE_PREFIX_ENTRIES);
    ngx_conf_init_uint_value(pcf->imbalance,
                             NGX_HTTP_FAIRGATE_PREFIX_IMBALANCE);

    text = pcf->block * pcf->blocks;

    if (text > 1024 * 1024) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fairgate_prefix\" would hash %uz bytes of a "
                           "prompt (block times blocks): at most 1m", text);
        return NGX_CONF_ERROR;
    }

    pmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_fairgate_prefix_module);
    pmcf->text = ngx_max(pmcf->text, text);

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    uscf->peer.init_upstream = ngx_http_fairgate_prefix_init_upstream;

    uscf->flags = NGX_HTTP_UPSTREAM_CREATE
                  |NGX_HTTP_UPSTREAM_WEIGHT
                  |NGX_HTTP_UPSTREAM_MAX_CONNS
                  |NGX_HTTP_UPSTREAM_MAX_FAILS
                  |NGX_HTTP_UPSTREAM_FAIL_TIMEOUT
                  |NGX_HTTP_UPSTREAM_DOWN
                  |NGX_HTTP_UPSTREAM_BACKUP;

    pcf->upstream = uscf;

    return NGX_CONF_OK;
}


/* zone=NAME:SIZE, the index's shared zone */

static char *
ngx_http_fairgate_prefix_zone(ngx_conf_t *cf,
    ngx_http_fairgate_prefix_conf_t *pcf, ngx_str_t *value)
{
    ssize_t     size;
    ngx_int_t   rc;
    ngx_str_t   name, s;

    rc = ngx_http_fairgate_param_zone(value->data + 5, value->len - 5, &name,
                                      &size);

    if (pcf->shm_zone || rc == NGX_DECLINED) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\" in \"fairgate_prefix\": %s",
                           value, pcf->shm_zone ? "given twice"
                                                : "expected zone=NAME:SIZE");
        return NGX_CONF_ERROR;
    }

    s.data = name.data + name.len + 1;
    s.len = value->data + value->len - s.data;

    if (rc == NGX_ERROR || size < (ssize_t) (8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid zone size \"%V\" in \"fairgate_prefix\": "
                           "at least %uzk", &s, 8 * ngx_pagesize / 1024);
        return NGX_CONF_ERROR;
    }

    if (ngx_http_fairgate_prefix_add_zone(cf, pcf, &name, size) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * The upstream's peers are known: round robin's set-up, then the names the
 * index knows each peer by, and a zone sized for them when none was named.
 */

static ngx_int_t
ngx_http_fairgate_prefix_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us)
{
    size_t                            size;
    ngx_str_t                         name;
    ngx_http_upstream_rr_peers_t     *peers;
    ngx_http_fairgate_prefix_conf_t  *pcf;

    if (ngx_http_upstream_init_round_robin(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    us->peer.init = ngx_http_fairgate_prefix_init_peer;

    pcf = ngx_http_conf_upstream_srv_conf(us, ngx_http_fairgate_prefix_module);
    peers = us->peer.data;

    if (ngx_http_fairgate_prefix_names(cf, pcf, peers) != NGX_OK) {
        return NGX_ERROR;
    }

    if (pcf->shm_zone) {
        return NGX_OK;
    }

    name.len = sizeof("fairgate_prefix:") - 1 + us->host.len;
    name.data = ngx_pnalloc(cf->pool, name.len);
    if (name.data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(name.data, "fairgate_prefix:%V", &us->host);

    /* the entries of every peer, their slots and the slab's own pages */

    size = pcf->npeers * (pcf->entries * NGX_HTTP_FAIRGATE_PREFIX_ENTRY_SIZE
                          + sizeof(ngx_http_fairgate_prefix_slot_t))
           + 16 * ngx_pagesize;
    size = ngx_align(size, ngx_pagesize);

    pcf->auto_zone = 1;

    return ngx_http_fairgate_prefix_add_zone(cf, pcf, &name, size);
}


/* the peers' names in the order a request sees them: primary, backup */

static ngx_int_t
ngx_http_fairgate_prefix_names(ngx_conf_t *cf,
    ngx_http_fairgate_prefix_conf_t *pcf, ngx_http_upstream_rr_peers_t *peers)
{
    ngx_uint_t                     n;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *set;

    n = peers->number + (peers->next ? peers->next->number : 0);

    pcf->names = ngx_palloc(cf->pool, n * sizeof(ngx_str_t));
    pcf->slots = ngx_pcalloc(cf->pool,
                             n * sizeof(ngx_http_fairgate_prefix_slot_t *));

    if (pcf->names == NULL || pcf->slots == NULL) {
        return NGX_ERROR;
    }

    n = 0;

    for (set = peers; set; set = set->next) {
        for (peer = set->peer; peer; peer = peer->next) {
            pcf->names[n++] = peer->name;
        }
    }

    pcf->npeers = n;

    return NGX_OK;
}


/* $fairgate_prefix_match, $fairgate_prefix_blocks: a number of the data */

static ngx_int_t
ngx_http_fairgate_prefix_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                                *p;
    ngx_http_fairgate_prefix_peer_data_t  *pd;

    pd = ngx_http_get_module_ctx(r, ngx_http_fairgate_prefix_module);

    if (pd == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->len = ngx_sprintf(p, "%ui", *(ngx_uint_t *) ((u_char *) pd + data))
             - p;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = p;

    return NGX_OK;
}
