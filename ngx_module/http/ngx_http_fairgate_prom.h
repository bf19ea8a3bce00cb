
/*
 * fairgate: the Prometheus text format (version 0.0.4), written from
 * tables of families.  A family has its name, type and help, what one of
 * its records is (a zone, a user, an app), and its samples: each the value
 * of the family's label and where its number lies in the record, with its
 * format.  The zones' families are in ngx_http_fairgate_status_prom.c,
 * Redis's in redis/ngx_http_fairgate_redis_status.c.
 *
 * The text goes into a chain of buffers: a line is bounded by its name,
 * its labels (made valid UTF-8 and escaped: six times as long at most)
 * and a number, and each line is given that much room, so no size is
 * guessed beforehand.
 */

#ifndef _NGX_HTTP_FAIRGATE_PROM_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_PROM_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


/* a sample's number, and how it is written */
#define NGX_HTTP_FAIRGATE_PROM_END       0   /* no more samples */
#define NGX_HTTP_FAIRGATE_PROM_U64       1   /* uint64_t, %uL */
#define NGX_HTTP_FAIRGATE_PROM_UINT      2   /* ngx_uint_t, %ui */
#define NGX_HTTP_FAIRGATE_PROM_U32       3   /* uint32_t, %uD */
#define NGX_HTTP_FAIRGATE_PROM_FIXED3    4   /* double, %.3f */
#define NGX_HTTP_FAIRGATE_PROM_FIXED6    5   /* double, %.6f */

/* what a family's record is */
#define NGX_HTTP_FAIRGATE_PROM_ZONE      0
#define NGX_HTTP_FAIRGATE_PROM_HISTOGRAM 1   /* a zone, written by hand */
#define NGX_HTTP_FAIRGATE_PROM_USER      2
#define NGX_HTTP_FAIRGATE_PROM_APP       3
#define NGX_HTTP_FAIRGATE_PROM_ENGINE    4   /* an engine the zone feeds */
#define NGX_HTTP_FAIRGATE_PROM_QOE       5   /* a zone's QoE histogram */
#define NGX_HTTP_FAIRGATE_PROM_USER_QOE  6   /* a user's */
#define NGX_HTTP_FAIRGATE_PROM_APP_QOE   7   /* an app's */

/* the most samples a family has a record */
#define NGX_HTTP_FAIRGATE_PROM_SAMPLES   10


typedef struct {
    ngx_str_t                    value;      /* of the family's label */
    size_t                       offset;     /* of the number, in a record */
    ngx_uint_t                   format;     /* NGX_HTTP_FAIRGATE_PROM_* */
} ngx_http_fairgate_prom_sample_t;


typedef struct {
    ngx_str_t                    name;
    ngx_str_t                    type;
    ngx_str_t                    help;
    ngx_uint_t                   per;        /* NGX_HTTP_FAIRGATE_PROM_ZONE
                                                ... */
    ngx_str_t                    label;      /* "": one sample, unlabelled */
    ngx_http_fairgate_prom_sample_t  samples[NGX_HTTP_FAIRGATE_PROM_SAMPLES];
} ngx_http_fairgate_prom_family_t;


typedef struct {
    ngx_str_t                    name;
    ngx_str_t                    value;      /* escaped when written */
} ngx_http_fairgate_prom_label_t;


/*
 * the text so far: a chain of buffers in the request's pool; with flush
 * set, the full buffers are handed to it (the chain given away) each
 * time a new one is started, so that a page is sent as it is written
 */
typedef ngx_int_t (*ngx_http_fairgate_prom_flush_pt)(void *data,
    ngx_chain_t *full);

typedef struct {
    ngx_pool_t                  *pool;
    ngx_chain_t                 *out;
    ngx_chain_t                **last;
    ngx_buf_t                   *buf;        /* being filled; NULL: none */
    ngx_http_fairgate_prom_flush_pt  flush;  /* NULL: keep it all */
    void                        *data;
} ngx_http_fairgate_prom_t;


void ngx_http_fairgate_prom_init(ngx_http_fairgate_prom_t *w,
    ngx_pool_t *pool);
ngx_int_t ngx_http_fairgate_prom_help(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_prom_family_t *f);
ngx_int_t ngx_http_fairgate_prom_samples(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_prom_family_t *f, ngx_http_fairgate_prom_label_t *labels,
    ngx_uint_t n, void *record);
/* how many families a table holds */
#define NGX_HTTP_FAIRGATE_PROM_FAMILIES(table)                               \
    (sizeof(table) / sizeof(ngx_http_fairgate_prom_family_t))

ngx_int_t ngx_http_fairgate_prom_table(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_prom_family_t *families, ngx_uint_t nfamilies,
    ngx_str_t *label, ngx_str_t *values, void *records, size_t size,
    ngx_uint_t n);
ngx_int_t ngx_http_fairgate_prom_line(ngx_http_fairgate_prom_t *w,
    ngx_str_t *name, ngx_http_fairgate_prom_label_t *labels, ngx_uint_t n,
    ngx_uint_t format, void *number);


#endif /* _NGX_HTTP_FAIRGATE_PROM_H_INCLUDED_ */
