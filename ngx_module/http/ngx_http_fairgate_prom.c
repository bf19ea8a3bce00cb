
/*
 * fairgate: the Prometheus text writer: a family's HELP and TYPE lines,
 * its samples as a table describes them, and any one line, each given the
 * room its bound needs in a chain of buffers.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_fairgate_prom.h"
#include "ngx_http_fairgate_http.h"


/* a buffer of the chain; a longer line gets one its size */
#define NGX_HTTP_FAIRGATE_PROM_CHUNK     16384

/* a number as written: 20 digits and a sign, a point, 6 decimals */
#define NGX_HTTP_FAIRGATE_PROM_NUMBER    32

/* labels of a sample: the caller's (zone, user or app) and its own */
#define NGX_HTTP_FAIRGATE_PROM_LABELS    3


static u_char *ngx_http_fairgate_prom_reserve(ngx_http_fairgate_prom_t *w,
    size_t len);
static u_char *ngx_http_fairgate_prom_number(u_char *p, ngx_uint_t format,
    void *number);
static u_char *ngx_http_fairgate_prom_escape(u_char *p, ngx_str_t *s);


void
ngx_http_fairgate_prom_init(ngx_http_fairgate_prom_t *w, ngx_pool_t *pool)
{
    w->pool = pool;
    w->out = NULL;
    w->last = &w->out;
    w->buf = NULL;
    w->flush = NULL;
    w->data = NULL;
}


ngx_int_t
ngx_http_fairgate_prom_help(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_prom_family_t *f)
{
    u_char  *p;
    size_t   len;

    len = sizeof("# HELP  \n# TYPE  \n") - 1
          + 2 * f->name.len + f->help.len + f->type.len;

    p = ngx_http_fairgate_prom_reserve(w, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    w->buf->last = ngx_sprintf(p, "# HELP %V %V\n# TYPE %V %V\n",
                               &f->name, &f->help, &f->name, &f->type);

    return NGX_OK;
}


/*
 * Families of one record an object (a zone, an engine): each family's
 * help, then the samples of the n records of size bytes at records, the
 * i-th labelled label="values[i]"; a record whose value is null has none.
 */

ngx_int_t
ngx_http_fairgate_prom_table(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_prom_family_t *families, ngx_uint_t nfamilies,
    ngx_str_t *label, ngx_str_t *values, void *records, size_t size,
    ngx_uint_t n)
{
    u_char                          *record;
    ngx_uint_t                       f, i;
    ngx_http_fairgate_prom_label_t   l;

    l.name = *label;

    for (f = 0; f < nfamilies; f++) {

        if (ngx_http_fairgate_prom_help(w, &families[f]) != NGX_OK) {
            return NGX_ERROR;
        }

        record = records;

        for (i = 0; i < n; i++, record += size) {
            if (values[i].data == NULL) {
                continue;
            }

            l.value = values[i];

            if (ngx_http_fairgate_prom_samples(w, &families[f], &l, 1, record)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


/*
 * A record's samples of a family: the caller's labels (at most two), then
 * the family's own, if it has one.
 */

ngx_int_t
ngx_http_fairgate_prom_samples(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_prom_family_t *f, ngx_http_fairgate_prom_label_t *labels,
    ngx_uint_t n, void *record)
{
    ngx_uint_t                        i, nl;
    ngx_http_fairgate_prom_label_t    l[NGX_HTTP_FAIRGATE_PROM_LABELS];
    ngx_http_fairgate_prom_sample_t  *s;

    if (n >= NGX_HTTP_FAIRGATE_PROM_LABELS) {
        return NGX_ERROR;
    }

    ngx_memcpy(l, labels, n * sizeof(ngx_http_fairgate_prom_label_t));

    nl = n;

    if (f->label.len) {
        l[n].name = f->label;
        nl++;
    }

    for (i = 0; i < NGX_HTTP_FAIRGATE_PROM_SAMPLES; i++) {
        s = &f->samples[i];

        if (s->format == NGX_HTTP_FAIRGATE_PROM_END) {
            break;
        }

        l[n].value = s->value;

        if (ngx_http_fairgate_prom_line(w, &f->name, l, nl, s->format,
                                        (u_char *) record + s->offset)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* NAME{LABEL="VALUE",...} NUMBER */

ngx_int_t
ngx_http_fairgate_prom_line(ngx_http_fairgate_prom_t *w, ngx_str_t *name,
    ngx_http_fairgate_prom_label_t *labels, ngx_uint_t n, ngx_uint_t format,
    void *number)
{
    u_char      *p;
    size_t       len;
    ngx_uint_t   i;

    len = name->len + sizeof("{} \n") - 1 + NGX_HTTP_FAIRGATE_PROM_NUMBER;

    for (i = 0; i < n; i++) {
        len += sizeof(",=\"\"") - 1 + labels[i].name.len
               + 6 * labels[i].value.len;
    }

    p = ngx_http_fairgate_prom_reserve(w, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(p, name->data, name->len);

    for (i = 0; i < n; i++) {
        *p++ = (i == 0) ? '{' : ',';
        p = ngx_cpymem(p, labels[i].name.data, labels[i].name.len);
        *p++ = '=';
        *p++ = '"';
        p = ngx_http_fairgate_prom_escape(p, &labels[i].value);
        *p++ = '"';
    }

    if (n) {
        *p++ = '}';
    }

    *p++ = ' ';
    p = ngx_http_fairgate_prom_number(p, format, number);
    *p++ = LF;

    w->buf->last = p;

    return NGX_OK;
}


static u_char *
ngx_http_fairgate_prom_reserve(ngx_http_fairgate_prom_t *w, size_t len)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    b = w->buf;

    if (b && (size_t) (b->end - b->last) >= len) {
        return b->last;
    }

    if (w->flush && w->out) {
        if (w->flush(w->data, w->out) != NGX_OK) {
            return NULL;
        }

        w->out = NULL;
        w->last = &w->out;
    }

    b = ngx_create_temp_buf(w->pool,
                            ngx_max(len, NGX_HTTP_FAIRGATE_PROM_CHUNK));
    if (b == NULL) {
        return NULL;
    }

    cl = ngx_alloc_chain_link(w->pool);
    if (cl == NULL) {
        return NULL;
    }

    cl->buf = b;
    cl->next = NULL;

    *w->last = cl;
    w->last = &cl->next;
    w->buf = b;

    return b->last;
}


static u_char *
ngx_http_fairgate_prom_number(u_char *p, ngx_uint_t format, void *number)
{
    switch (format) {

    case NGX_HTTP_FAIRGATE_PROM_UINT:
        return ngx_sprintf(p, "%ui", *(ngx_uint_t *) number);

    case NGX_HTTP_FAIRGATE_PROM_U32:
        return ngx_sprintf(p, "%uD", *(uint32_t *) number);

    case NGX_HTTP_FAIRGATE_PROM_FIXED3:
        return ngx_sprintf(p, "%.3f", *(double *) number);

    case NGX_HTTP_FAIRGATE_PROM_FIXED6:
        return ngx_sprintf(p, "%.6f", *(double *) number);

    default: /* NGX_HTTP_FAIRGATE_PROM_U64 */
        return ngx_sprintf(p, "%uL", *(uint64_t *) number);
    }
}


/*
 * a label value: backslash, double quote and newline escaped, and bytes
 * that are not UTF-8 as U+FFFD (the format's text is UTF-8); p holds
 * 6 * len: the mended value, then its escaped copy written over it
 */

static u_char *
ngx_http_fairgate_prom_escape(u_char *p, ngx_str_t *s)
{
    u_char  *c, *last;

    c = p + 3 * s->len;
    last = ngx_http_fairgate_utf8_safe(c, s->data, s->len);

    for ( /* void */ ; c < last; c++) {
        switch (*c) {

        case '\\':
        case '"':
            *p++ = '\\';
            *p++ = *c;
            break;

        case LF:
            *p++ = '\\';
            *p++ = 'n';
            break;

        default:
            *p++ = *c;
        }
    }

    return p;
}
