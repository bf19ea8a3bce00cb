
/*
 * fairgate: the quotas' directives.
 *
 *     fairgate_quota user|app|key [NAME] [requests=N] [tokens=N]
 *                    [budget=AMOUNT] per=hour|day|week|month|TIME
 *                    [rolling] [soft=PERCENT];
 *     fairgate_quota_timezone ZONE;
 *
 * A quota without a name is every tenant's of its kind; one with a name
 * is that tenant's, in place of the default of the same window.  A level
 * with quotas of its own takes none of the level above's, as add_header.
 * The time zone is read once, here: calendar windows never ask the C
 * library again.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_quota.h"
#include "ngx_http_fairgate_param.h"


/* the zone table's span: back as far as the longest window, and on for
 * as long as a configuration may run */
#define NGX_HTTP_FAIRGATE_TZ_BEFORE  (400 * 86400)
#define NGX_HTTP_FAIRGATE_TZ_AFTER   ((int64_t) 30 * 366 * 86400)

/* the largest budget, in the price unit: its billionths fit 60 bits */
#define NGX_HTTP_FAIRGATE_BUDGET_MAX  1000000000


static char *ngx_http_fairgate_quota_param(ngx_conf_t *cf,
    ngx_http_fairgate_quota_t *q, ngx_str_t *v);
static char *ngx_http_fairgate_quota_per(ngx_conf_t *cf,
    ngx_http_fairgate_quota_t *q, ngx_str_t *v);
static ngx_int_t ngx_http_fairgate_quota_amount(u_char *p, size_t len,
    uint64_t *amount);
static char *ngx_http_fairgate_quota_check(ngx_conf_t *cf,
    ngx_http_fairgate_loc_conf_t *flcf, ngx_http_fairgate_quota_t *q);
static ngx_int_t ngx_http_fairgate_quota_name(ngx_uint_t kind,
    ngx_str_t *name);


static const char  *ngx_http_fairgate_quota_kinds[] = {
    "user", "app", "key"
};

static fg_tz_t  ngx_http_fairgate_quota_utc;


const char *
ngx_http_fairgate_quota_kind(ngx_uint_t kind)
{
    return ngx_http_fairgate_quota_kinds[kind];
}


char *
ngx_http_fairgate_quota(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    char                       *rv;
    ngx_str_t                  *value;
    ngx_uint_t                  i, k;
    ngx_http_fairgate_quota_t  *q;

    value = cf->args->elts;

    for (k = 0; k < NGX_HTTP_FAIRGATE_QUOTA_KINDS; k++) {
        if (ngx_strcmp(value[1].data, ngx_http_fairgate_quota_kinds[k]) == 0)
        {
            break;
        }
    }

    if (k == NGX_HTTP_FAIRGATE_QUOTA_KINDS) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid tenant \"%V\" in \"fairgate_quota\": "
                           "user, app or key", &value[1]);
        return NGX_CONF_ERROR;
    }

    if (flcf->quotas == NULL) {
        flcf->quotas = ngx_array_create(cf->pool, 4,
                                        sizeof(ngx_http_fairgate_quota_t));
        if (flcf->quotas == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    q = ngx_array_push(flcf->quotas);
    if (q == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(q, sizeof(ngx_http_fairgate_quota_t));
    q->kind = k;
    q->per.length = -1;

    i = 2;

    /* a name is a word with no "=", and not "rolling" */
    if (i < cf->args->nelts
        && ngx_strlchr(value[i].data, value[i].data + value[i].len, '=')
           == NULL
        && ngx_strcmp(value[i].data, "rolling") != 0)
    {
        if (ngx_http_fairgate_quota_name(k, &value[i]) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid %s \"%V\" in \"fairgate_quota\"%s",
                               ngx_http_fairgate_quota_kinds[k], &value[i],
                               k == NGX_HTTP_FAIRGATE_KEY
                               ? ": a key's id is 16 hex digits" : "");
            return NGX_CONF_ERROR;
        }

        q->name = value[i++];
    }

    for ( /* void */ ; i < cf->args->nelts; i++) {
        rv = ngx_http_fairgate_quota_param(cf, q, &value[i]);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    return ngx_http_fairgate_quota_check(cf, flcf, q);
}


static ngx_int_t
ngx_http_fairgate_quota_name(ngx_uint_t kind, ngx_str_t *name)
{
    size_t  i;

    if (name->len == 0 || name->len > NGX_HTTP_FAIRGATE_NAME_LEN) {
        return NGX_ERROR;
    }

    if (kind != NGX_HTTP_FAIRGATE_KEY) {
        return NGX_OK;
    }

    /* $fairgate_key_id's form: lowercase hex */
    if (name->len != 16) {
        return NGX_ERROR;
    }

    for (i = 0; i < name->len; i++) {
        if (!((name->data[i] >= '0' && name->data[i] <= '9')
              || (name->data[i] >= 'a' && name->data[i] <= 'f')))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static char *
ngx_http_fairgate_quota_param(ngx_conf_t *cf, ngx_http_fairgate_quota_t *q,
    ngx_str_t *v)
{
    uint64_t   *p;
    ngx_int_t   n;

    if (ngx_strcmp(v->data, "rolling") == 0) {
        if (q->per.rolling) {
            goto duplicate;
        }

        q->per.rolling = 1;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(v->data, "per=", 4) == 0) {
        if (q->per.length != -1) {
            goto duplicate;
        }

        return ngx_http_fairgate_quota_per(cf, q, v);
    }

    if (ngx_strncmp(v->data, "budget=", 7) == 0) {
        if (q->limit.cost) {
            goto duplicate;
        }

        if (ngx_http_fairgate_quota_amount(v->data + 7, v->len - 7,
                                           &q->limit.cost)
            != NGX_OK)
        {
            goto invalid;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(v->data, "soft=", 5) == 0) {
        if (q->limit.soft) {
            goto duplicate;
        }

        n = ngx_http_fairgate_param_number(v->data + 5,
                                           v->len - 5
                                           - (v->data[v->len - 1] == '%'),
                                           1, 100);
        if (n == NGX_ERROR) {
            goto invalid;
        }

        q->limit.soft = (uint32_t) n;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(v->data, "requests=", 9) == 0) {
        p = &q->limit.requests;
        n = 9;

    } else if (ngx_strncmp(v->data, "tokens=", 7) == 0) {
        p = &q->limit.tokens;
        n = 7;

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\" in \"fairgate_quota\"",
                           v);
        return NGX_CONF_ERROR;
    }

    if (*p) {
        goto duplicate;
    }

    n = ngx_http_fairgate_param_number(v->data + n, v->len - n, 1,
                                       NGX_HTTP_FAIRGATE_NO_MAX);
    if (n == NGX_ERROR) {
        goto invalid;
    }

    *p = (uint64_t) n;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid value \"%V\" in \"fairgate_quota\"", v);
    return NGX_CONF_ERROR;

duplicate:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "duplicate parameter \"%V\" in \"fairgate_quota\"", v);
    return NGX_CONF_ERROR;
}


/* per=hour|day|week|month, or a time ("30d", "12h") */

static char *
ngx_http_fairgate_quota_per(ngx_conf_t *cf, ngx_http_fairgate_quota_t *q,
    ngx_str_t *v)
{
    ngx_str_t   s;
    ngx_int_t   secs;
    ngx_uint_t  i;

    static struct {
        const char  *name;
        uint32_t     unit;
        int64_t      length;     /* rolling */
    } units[] = {
        { "hour", FG_QUOTA_HOUR, 3600 },
        { "day", FG_QUOTA_DAY, 86400 },
        { "week", FG_QUOTA_WEEK, 7 * 86400 },
        { "month", FG_QUOTA_MONTH, 30 * 86400 }
    };

    s.data = v->data + 4;
    s.len = v->len - 4;
    q->window = s;

    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (ngx_strcmp(s.data, units[i].name) == 0) {
            q->per.unit = units[i].unit;
            q->per.length = units[i].length;
            return NGX_CONF_OK;
        }
    }

    secs = ngx_parse_time(&s, 1);

    if (secs == NGX_ERROR || secs <= 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid window \"%V\" in \"fairgate_quota\": "
                           "hour, day, week, month or a time", v);
        return NGX_CONF_ERROR;
    }

    q->per.unit = FG_QUOTA_SPAN;
    q->per.length = secs;

    return NGX_CONF_OK;
}


/* an amount of money, "10" or "12.50": billionths of its unit */

static ngx_int_t
ngx_http_fairgate_quota_amount(u_char *p, size_t len, uint64_t *amount)
{
    u_char    *end;
    uint64_t   whole, frac, scale;

    end = p + len;
    whole = 0;
    frac = 0;
    scale = 1000000000;

    if (p == end || *p < '0' || *p > '9') {
        return NGX_ERROR;
    }

    for ( /* void */ ; p < end && *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (*p - '0');

        if (whole > NGX_HTTP_FAIRGATE_BUDGET_MAX) {
            return NGX_ERROR;
        }
    }

    if (p < end && *p == '.') {
        p++;

        if (p == end) {
            return NGX_ERROR;
        }

        for ( /* void */ ; p < end && *p >= '0' && *p <= '9'; p++) {
            if (scale == 1) {
                return NGX_ERROR;
            }

            scale /= 10;
            frac += (uint64_t) (*p - '0') * scale;
        }
    }

    if (p != end) {
        return NGX_ERROR;
    }

    *amount = whole * 1000000000 + frac;

    return (*amount > 0) ? NGX_OK : NGX_ERROR;
}


/* a whole quota: a window, something to count, not twice at a level */

static char *
ngx_http_fairgate_quota_check(ngx_conf_t *cf,
    ngx_http_fairgate_loc_conf_t *flcf, ngx_http_fairgate_quota_t *q)
{
    u_char                     *p;
    ngx_uint_t                  i;
    ngx_http_fairgate_quota_t  *o;

    if (q->per.length == -1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fairgate_quota\" needs per=WINDOW");
        return NGX_CONF_ERROR;
    }

    if (!q->limit.requests && !q->limit.tokens && !q->limit.cost) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fairgate_quota\" needs requests=N, tokens=N "
                           "or budget=AMOUNT");
        return NGX_CONF_ERROR;
    }

    if (fg_quota_per_check(&q->per) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid window \"per=%V%s\" in "
                           "\"fairgate_quota\": %s", &q->window,
                           q->per.rolling ? " rolling" : "",
                           q->per.rolling
                           ? "a rolling window is a whole number of "
                             "minutes up to 366 days"
                           : "a time from a minute to 366 days");
        return NGX_CONF_ERROR;
    }

    if (q->per.rolling) {
        p = ngx_pnalloc(cf->pool, q->window.len + sizeof(" rolling") - 1);
        if (p == NULL) {
            return NGX_CONF_ERROR;
        }

        q->window.len = ngx_sprintf(p, "%V rolling", &q->window) - p;
        q->window.data = p;
    }

    o = flcf->quotas->elts;

    for (i = 0; i + 1 < flcf->quotas->nelts; i++) {
        if (o[i].kind == q->kind
            && o[i].name.len == q->name.len
            && ngx_strncmp(o[i].name.data, q->name.data, q->name.len) == 0
            && o[i].per.unit == q->per.unit
            && o[i].per.rolling == q->per.rolling
            && o[i].per.length == q->per.length)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate \"fairgate_quota\" of the same "
                               "tenant and window: give its limits in one");
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


/* whether q applies to its kind's tenant named name (see above) */

ngx_uint_t
ngx_http_fairgate_quota_applies(ngx_array_t *quotas,
    ngx_http_fairgate_quota_t *q, ngx_str_t *name)
{
    ngx_uint_t                  i;
    ngx_http_fairgate_quota_t  *o;

    if (q->name.len) {
        return q->name.len == name->len
               && ngx_strncmp(q->name.data, name->data, name->len) == 0;
    }

    o = quotas->elts;

    for (i = 0; i < quotas->nelts; i++) {
        if (o[i].kind == q->kind
            && o[i].name.len == name->len
            && ngx_strncmp(o[i].name.data, name->data, name->len) == 0
            && o[i].per.unit == q->per.unit
            && o[i].per.rolling == q->per.rolling
            && o[i].per.length == q->per.length)
        {
            return 0;
        }
    }

    return 1;
}


char *
ngx_http_fairgate_quota_timezone(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_fairgate_main_conf_t  *fmcf = conf;

    int64_t     now;
    ngx_str_t  *value;

    if (fmcf->quota_tz != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    fmcf->quota_tz = ngx_palloc(cf->pool, sizeof(fg_tz_t));
    if (fmcf->quota_tz == NULL) {
        return NGX_CONF_ERROR;
    }

    now = (int64_t) ngx_time();

    if (fg_tz_load(fmcf->quota_tz, (char *) value[1].data,
                   now - NGX_HTTP_FAIRGATE_TZ_BEFORE,
                   now + NGX_HTTP_FAIRGATE_TZ_AFTER)
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "unknown time zone \"%V\" in "
                           "\"fairgate_quota_timezone\": an IANA name "
                           "such as \"Europe/Paris\", or \"UTC\"",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


fg_tz_t *
ngx_http_fairgate_quota_tz(void)
{
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_fairgate_cycle_conf(ngx_cycle);

    if (fmcf == NULL || fmcf->quota_tz == NULL) {
        /* all zeros: UTC */
        return &ngx_http_fairgate_quota_utc;
    }

    return fmcf->quota_tz;
}
