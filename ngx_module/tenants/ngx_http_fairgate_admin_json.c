
/*
 * fairgate: the admin API's JSON (ngx_http_fairgate_admin.c): a key's
 * settings as a client sends them, checked field by field into the
 * field/value pairs of its Redis hash; a hash as HGETALL gives it back as
 * the JSON a client reads.  A field that does not check is named, with
 * what was expected, for a 400 in OpenAI's shape.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>
#include <hiredis/hiredis.h>

#include "ngx_http_fairgate_tenants.h"
#include "fg_keys.h"


/* the longest quota or budget, as compact JSON */
#define NGX_HTTP_FAIRGATE_ADMIN_OBJECT_LEN  4096


typedef enum {
    NGX_HTTP_FAIRGATE_ADMIN_NAME = 0,        /* user, app */
    NGX_HTTP_FAIRGATE_ADMIN_REAL,            /* weight, priority */
    NGX_HTTP_FAIRGATE_ADMIN_COUNT,           /* rpm, tpm */
    NGX_HTTP_FAIRGATE_ADMIN_MODELS,
    NGX_HTTP_FAIRGATE_ADMIN_OBJECT           /* quota, budget: kept as text */
} ngx_http_fairgate_admin_kind_e;


typedef struct {
    const char                      *name;
    ngx_http_fairgate_admin_kind_e   kind;
    const char                      *expected;
} ngx_http_fairgate_admin_field_t;


static ngx_http_fairgate_admin_field_t  ngx_http_fairgate_admin_fields[] = {
    { "user", NGX_HTTP_FAIRGATE_ADMIN_NAME,
      "a name of 1 to 255 bytes, no control character or blank" },
    { "app", NGX_HTTP_FAIRGATE_ADMIN_NAME,
      "a name of 1 to 255 bytes, no control character or blank, or null" },
    { "weight", NGX_HTTP_FAIRGATE_ADMIN_REAL,
      "a number above 0, at most 1000000" },
    { "priority", NGX_HTTP_FAIRGATE_ADMIN_REAL,
      "a number above 0, at most 1000000" },
    { "rpm", NGX_HTTP_FAIRGATE_ADMIN_COUNT, "an integer of 0 or more" },
    { "tpm", NGX_HTTP_FAIRGATE_ADMIN_COUNT, "an integer of 0 or more" },
    { "models", NGX_HTTP_FAIRGATE_ADMIN_MODELS,
      "an array of model names (printable ASCII, no comma), or null" },
    { "quota", NGX_HTTP_FAIRGATE_ADMIN_OBJECT,
      "an object of at most 4096 bytes as JSON, or null" },
    { "budget", NGX_HTTP_FAIRGATE_ADMIN_OBJECT,
      "an object of at most 4096 bytes as JSON, or null" },
    { NULL, 0, NULL }
};


static ngx_int_t ngx_http_fairgate_admin_value(ngx_pool_t *pool,
    ngx_http_fairgate_admin_field_t *f, json_t *v, ngx_str_t *out);
static ngx_int_t ngx_http_fairgate_admin_quota(ngx_pool_t *pool,
    ngx_http_fairgate_admin_field_t *f, ngx_str_t *v, const char **field,
    u_char *msg);
static ngx_int_t ngx_http_fairgate_admin_name(const char *s, size_t len);
static ngx_int_t ngx_http_fairgate_admin_models(ngx_pool_t *pool, json_t *v,
    ngx_str_t *out);
static json_t *ngx_http_fairgate_admin_value_json(ngx_str_t *field,
    ngx_str_t *v);


/*
 * The body's fields as pairs of ngx_str_t (name, value) pushed to args;
 * create: user is required.  NGX_DECLINED: *field names the bad one and
 * msg (256 bytes) says why.
 */

ngx_int_t
ngx_http_fairgate_admin_parse(ngx_pool_t *pool, json_t *body,
    ngx_uint_t create, ngx_array_t *args, const char **field, u_char *msg)
{
    void                             *it;
    ngx_str_t                        *a;
    const char                       *key;
    ngx_uint_t                        user;
    ngx_http_fairgate_admin_field_t  *f;

    user = 0;

    for (it = json_object_iter(body); it;
         it = json_object_iter_next(body, it))
    {
        key = json_object_iter_key(it);

        for (f = ngx_http_fairgate_admin_fields; f->name; f++) {
            if (ngx_strcmp(key, f->name) == 0) {
                break;
            }
        }

        *field = f->name ? f->name : key;

        if (f->name == NULL) {
            ngx_snprintf(msg, 255, "Unrecognized request argument "
                         "supplied: %s%Z", key);
            return NGX_DECLINED;
        }

        a = ngx_array_push_n(args, 2);
        if (a == NULL) {
            return NGX_ERROR;
        }

        a[0].data = (u_char *) f->name;
        a[0].len = ngx_strlen(f->name);

        switch (ngx_http_fairgate_admin_value(pool, f,
                                              json_object_iter_value(it),
                                              &a[1]))
        {
        case NGX_OK:
            if (f->kind == NGX_HTTP_FAIRGATE_ADMIN_OBJECT && a[1].len
                && ngx_http_fairgate_admin_quota(pool, f, &a[1], field, msg)
                   != NGX_OK)
            {
                return NGX_DECLINED;
            }

            break;

        case NGX_DECLINED:
            ngx_snprintf(msg, 255, "Invalid '%s': expected %s.%Z", f->name,
                         f->expected);
            return NGX_DECLINED;

        default:
            return NGX_ERROR;
        }

        user |= (f == ngx_http_fairgate_admin_fields);
    }

    if (create && !user) {
        *field = "user";
        ngx_snprintf(msg, 255, "Missing required parameter: 'user'.%Z");
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* a field's value as the hash keeps it; NGX_DECLINED: not valid */

static ngx_int_t
ngx_http_fairgate_admin_value(ngx_pool_t *pool,
    ngx_http_fairgate_admin_field_t *f, json_t *v, ngx_str_t *out)
{
    u_char  *p;
    char    *s;
    double   d;

    ngx_str_null(out);

    switch (f->kind) {

    case NGX_HTTP_FAIRGATE_ADMIN_NAME:
        if (json_is_null(v) && f->name[0] == 'a') {
            return NGX_OK;
        }

        if (!json_is_string(v)
            || ngx_http_fairgate_admin_name(json_string_value(v),
                                            json_string_length(v))
               != NGX_OK)
        {
            return NGX_DECLINED;
        }

        out->data = (u_char *) json_string_value(v);
        out->len = json_string_length(v);
        return NGX_OK;

    case NGX_HTTP_FAIRGATE_ADMIN_REAL:
        d = json_number_value(v);

        if (!json_is_number(v) || !(d > 0 && d <= 1e6)) {
            return NGX_DECLINED;
        }

        p = ngx_pnalloc(pool, 32);
        if (p == NULL) {
            return NGX_ERROR;
        }

        out->data = p;
        out->len = ngx_sprintf(p, "%.3f", d) - p;
        return NGX_OK;

    case NGX_HTTP_FAIRGATE_ADMIN_COUNT:
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            return NGX_DECLINED;
        }

        p = ngx_pnalloc(pool, NGX_INT64_LEN);
        if (p == NULL) {
            return NGX_ERROR;
        }

        out->data = p;
        out->len = ngx_sprintf(p, "%L", (int64_t) json_integer_value(v)) - p;
        return NGX_OK;

    case NGX_HTTP_FAIRGATE_ADMIN_MODELS:
        return ngx_http_fairgate_admin_models(pool, v, out);

    default: /* NGX_HTTP_FAIRGATE_ADMIN_OBJECT */
        if (json_is_null(v)) {
            return NGX_OK;
        }

        if (!json_is_object(v)) {
            return NGX_DECLINED;
        }

        s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        if (s == NULL) {
            return NGX_ERROR;
        }

        out->len = ngx_strlen(s);

        if (out->len > NGX_HTTP_FAIRGATE_ADMIN_OBJECT_LEN) {
            free(s);
            return NGX_DECLINED;
        }

        out->data = ngx_pnalloc(pool, out->len);

        if (out->data) {
            ngx_memcpy(out->data, s, out->len);
        }

        free(s);

        return out->data ? NGX_OK : NGX_ERROR;
    }
}


/*
 * A quota or budget read as the gateways will read it, so that what is
 * stored always applies; a bad value is named to its field
 * ("quota.month.tokens")
 */

static ngx_int_t
ngx_http_fairgate_admin_quota(ngx_pool_t *pool,
    ngx_http_fairgate_admin_field_t *f, ngx_str_t *v, const char **field,
    u_char *msg)
{
    char            *name;
    const char      *expected;
    fg_quota_set_t   set;

    name = ngx_pnalloc(pool, FG_QUOTA_FIELD_LEN);
    if (name == NULL) {
        *field = f->name;
        ngx_snprintf(msg, 255, "Invalid '%s'.%Z", f->name);
        return NGX_DECLINED;
    }

    set.n = 0;

    if (fg_quota_json(&set, (char *) v->data, v->len, f->name[0] == 'b',
                      name, &expected)
        == 0)
    {
        return NGX_OK;
    }

    *field = name;
    ngx_snprintf(msg, 255, "Invalid '%s': expected %s.%Z", name, expected);

    return NGX_DECLINED;
}


/* a user or an app: what the keys file takes, so both read alike */

static ngx_int_t
ngx_http_fairgate_admin_name(const char *s, size_t len)
{
    size_t  i;

    if (len == 0 || len > NGX_HTTP_FAIRGATE_NAME_LEN) {
        return NGX_DECLINED;
    }

    for (i = 0; i < len; i++) {
        if ((u_char) s[i] <= 0x20 || s[i] == 0x7f || s[i] == '"'
            || s[i] == '\\')
        {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_admin_models(ngx_pool_t *pool, json_t *v, ngx_str_t *out)
{
    u_char  *p;
    size_t   i, n, len;
    json_t  *m;

    if (json_is_null(v)) {
        return NGX_OK;
    }

    if (!json_is_array(v)) {
        return NGX_DECLINED;
    }

    n = json_array_size(v);
    len = 0;

    for (i = 0; i < n; i++) {
        m = json_array_get(v, i);

        if (!json_is_string(m)
            || fg_keys_models_valid(json_string_value(m),
                                    json_string_length(m)) != 0
            || ngx_strchr(json_string_value(m), ',') != NULL)
        {
            return NGX_DECLINED;
        }

        len += json_string_length(m) + 1;
    }

    if (len > FG_KEYS_MODELS_LEN) {
        return NGX_DECLINED;
    }

    p = ngx_pnalloc(pool, len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    out->data = p;

    for (i = 0; i < n; i++) {
        m = json_array_get(v, i);

        if (i) {
            *p++ = ',';
        }

        p = ngx_cpymem(p, json_string_value(m), json_string_length(m));
    }

    out->len = p - out->data;

    return NGX_OK;
}


/* a key's hash (HGETALL's reply) as its JSON object; NULL: no memory */

json_t *
ngx_http_fairgate_admin_key_json(void *r)
{
    size_t       i;
    json_t      *o, *v;
    ngx_str_t    field, value;
    redisReply  *reply = r;

    o = json_object();
    if (o == NULL) {
        return NULL;
    }

    json_object_set_new(o, "object", json_string("api_key"));

    for (i = 0; i + 1 < reply->elements; i += 2) {
        if (reply->element[i]->type != REDIS_REPLY_STRING
            || reply->element[i + 1]->type != REDIS_REPLY_STRING)
        {
            continue;
        }

        field.data = (u_char *) reply->element[i]->str;
        field.len = reply->element[i]->len;
        value.data = (u_char *) reply->element[i + 1]->str;
        value.len = reply->element[i + 1]->len;

        v = ngx_http_fairgate_admin_value_json(&field, &value);

        if (v) {
            json_object_setn_new(o, (char *) field.data, field.len, v);
        }
    }

    return o;
}


/* the list script's reply, {has_more, [hash, ...]}, as a list object */

json_t *
ngx_http_fairgate_admin_list_json(void *r)
{
    size_t       i;
    json_t      *o, *list, *k;
    redisReply  *reply = r, *items;

    if (reply->elements != 2 || reply->element[1]->type != REDIS_REPLY_ARRAY)
    {
        return NULL;
    }

    items = reply->element[1];
    o = json_object();
    list = json_array();

    if (o == NULL || list == NULL) {
        json_decref(o);
        json_decref(list);
        return NULL;
    }

    for (i = 0; i < items->elements; i++) {
        k = ngx_http_fairgate_admin_key_json(items->element[i]);
        if (k) {
            json_array_append_new(list, k);
        }
    }

    json_object_set_new(o, "object", json_string("list"));
    json_object_set_new(o, "data", list);
    json_object_set_new(o, "has_more",
                        json_boolean(reply->element[0]->integer == 1));

    return o;
}


static json_t *
ngx_http_fairgate_admin_value_json(ngx_str_t *field, ngx_str_t *v)
{
    u_char  *p, *last, *comma;
    json_t  *a;

#define ngx_http_fairgate_admin_is(name)                                      \
    (field->len == sizeof(name) - 1                                           \
     && ngx_strncmp(field->data, name, field->len) == 0)

    if (ngx_http_fairgate_admin_is("weight")
        || ngx_http_fairgate_admin_is("priority"))
    {
        return json_real((double) ngx_atofp(v->data, v->len, 3) / 1000.0);
    }

    if (ngx_http_fairgate_admin_is("rpm") || ngx_http_fairgate_admin_is("tpm")
        || ngx_http_fairgate_admin_is("created"))
    {
        return json_integer(ngx_atoi(v->data, v->len));
    }

    if (ngx_http_fairgate_admin_is("revoked")) {
        return (v->len && !(v->len == 1 && v->data[0] == '0'))
               ? json_integer(ngx_atoi(v->data, v->len)) : json_null();
    }

    if (ngx_http_fairgate_admin_is("quota")
        || ngx_http_fairgate_admin_is("budget"))
    {
        return v->len ? json_loadb((char *) v->data, v->len, 0, NULL)
                      : json_null();
    }

    if (ngx_http_fairgate_admin_is("models")) {
        if (v->len == 0) {
            return json_null();
        }

        a = json_array();
        p = v->data;
        last = p + v->len;

        while (a && p < last) {
            comma = ngx_strlchr(p, last, ',');
            comma = comma ? comma : last;
            json_array_append_new(a, json_stringn((char *) p, comma - p));
            p = comma + 1;
        }

        return a;
    }

#undef ngx_http_fairgate_admin_is

    return v->len ? json_stringn((char *) v->data, v->len) : json_null();
}
