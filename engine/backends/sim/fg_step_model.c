
/*
 * fairgate: the engine's step-time model.
 */


#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fg_err.h"
#include "fg_mem.h"
#include "fg_step_model.h"


/* one input length of a profile, its output points ascending */
typedef struct {
    double     input;
    double     prefill;                 /* mean over the row's points */
    uint32_t   n;
    double    *output;
    double    *decode;                  /* seconds per token */
} fg_step_row_t;


struct fg_step_model_s {
    unsigned         linear:1;
    unsigned         gpu:1;
    double           prefill_per_token;
    double           decode_per_request;
    double           step;              /* gpu: once per step */
    double           per_ctx;           /* gpu: per context token */

    fg_step_row_t   *rows;              /* ascending input */
    uint32_t         nrows;

    /* the rows that model decode, and their input lengths */
    fg_step_row_t  **decode_rows;
    double          *decode_input;
    uint32_t         ndecode;

    double          *prefill_input;
    double          *prefill;
};


/*
 * The segment [x[i], x[i + 1]] of ascending x (n >= 2) that holds v, or
 * the outermost one when v lies outside: extrapolation uses it.
 */
static uint32_t
fg_step_segment(const double *x, uint32_t n, double v)
{
    uint32_t  i;

    for (i = 0; i + 2 < n; i++) {
        if (v <= x[i + 1]) {
            break;
        }
    }

    return i;
}


static double
fg_step_line(double x0, double y0, double x1, double y1, double v)
{
    return y0 + (y1 - y0) * (v - x0) / (x1 - x0);
}


static double
fg_step_interp(const double *x, const double *y, uint32_t n, double v)
{
    uint32_t  i;

    if (n == 1) {
        return y[0];
    }

    i = fg_step_segment(x, n, v);

    return fg_step_line(x[i], y[i], x[i + 1], y[i + 1], v);
}


static int
fg_step_length(const char *key, double *len)
{
    char           *end;
    unsigned long   v;

    if (*key < '0' || *key > '9') {
        return -1;
    }

    errno = 0;
    v = strtoul(key, &end, 10);

    if (*end != '\0' || errno || v == 0 || v > 100000000) {
        return -1;
    }

    *len = (double) v;

    return 0;
}


static int
fg_step_cmp_row(const void *a, const void *b)
{
    const fg_step_row_t  *ra = a, *rb = b;

    return (ra->input > rb->input) - (ra->input < rb->input);
}


/* sorts a row's points by output length, carrying decode along */
static void
fg_step_sort_row(fg_step_row_t *row)
{
    double    o, d;
    uint32_t  i, j;

    for (i = 1; i < row->n; i++) {
        o = row->output[i];
        d = row->decode[i];

        for (j = i; j > 0 && row->output[j - 1] > o; j--) {
            row->output[j] = row->output[j - 1];
            row->decode[j] = row->decode[j - 1];
        }

        row->output[j] = o;
        row->decode[j] = d;
    }
}


static int
fg_step_parse_row(fg_step_row_t *row, const char *path, const char *in_key,
    json_t *obj, char *err, size_t size)
{
    double       out, batch, prefill, decode;
    json_t      *point;
    uint32_t     n;
    const char  *key;

    if (!json_is_object(obj) || json_object_size(obj) == 0) {
        fg_err_printf(err, size, "profile %s: [\"%s\"] must be a non-empty "
                      "object {output_len: [batch_size, prefill_s, "
                      "decode_s]}", path, in_key);
        return -1;
    }

    row->output = calloc(json_object_size(obj), sizeof(double));
    row->decode = calloc(json_object_size(obj), sizeof(double));

    if (row->output == NULL || row->decode == NULL) {
        fg_err_printf(err, size, "profile %s: out of memory", path);
        return -1;
    }

    n = 0;

    json_object_foreach(obj, key, point) {

        if (fg_step_length(key, &out) != 0) {
            fg_err_printf(err, size, "profile %s: [\"%s\"]: output length "
                          "\"%s\" is not a positive integer", path, in_key,
                          key);
            return -1;
        }

        if (!json_is_array(point) || json_array_size(point) != 3
            || !json_is_number(json_array_get(point, 0))
            || !json_is_number(json_array_get(point, 1))
            || !json_is_number(json_array_get(point, 2)))
        {
            fg_err_printf(err, size, "profile %s: [\"%s\"][\"%s\"] must be "
                          "[batch_size, prefill_s, decode_s], three numbers",
                          path, in_key, key);
            return -1;
        }

        batch = json_number_value(json_array_get(point, 0));
        prefill = json_number_value(json_array_get(point, 1));
        decode = json_number_value(json_array_get(point, 2));

        if (!(batch >= 1.0) || !(prefill >= 0.0) || !(decode >= 0.0)
            || !isfinite(prefill) || !isfinite(decode))
        {
            fg_err_printf(err, size, "profile %s: [\"%s\"][\"%s\"]: batch "
                          "size must be >= 1 and times finite and >= 0",
                          path, in_key, key);
            return -1;
        }

        row->output[n] = out;
        row->decode[n] = decode / out;
        row->prefill += prefill;
        n++;
    }

    row->n = n;
    row->prefill /= n;

    fg_step_sort_row(row);

    for (n = 1; n < row->n; n++) {
        if (row->output[n] == row->output[n - 1]) {
            /* "64" and "064": interpolation would divide by zero */
            fg_err_printf(err, size, "profile %s: [\"%s\"]: output length "
                          "%.0f given twice", path, in_key, row->output[n]);
            return -1;
        }
    }

    return 0;
}


static int
fg_step_load_profile(fg_step_model_t *m, const char *path, char *err,
    size_t size)
{
    json_t        *root, *obj;
    uint32_t       i, n;
    const char    *key;
    json_error_t   jerr;

    root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        if (jerr.line > 0) {
            fg_err_printf(err, size, "profile %s:%d: %s", path, jerr.line,
                          jerr.text);

        } else {
            fg_err_printf(err, size, "profile %s: %s", path, jerr.text);
        }

        return -1;
    }

    if (!json_is_object(root) || json_object_size(root) == 0) {
        fg_err_printf(err, size, "profile %s: must be a non-empty object "
                      "{input_len: {output_len: [batch_size, prefill_s, "
                      "decode_s]}}", path);
        json_decref(root);
        return -1;
    }

    n = json_object_size(root);
    m->rows = calloc(n, sizeof(fg_step_row_t));
    m->decode_rows = calloc(n, sizeof(fg_step_row_t *));
    m->decode_input = calloc(n, sizeof(double));
    m->prefill_input = calloc(n, sizeof(double));
    m->prefill = calloc(n, sizeof(double));

    if (m->rows == NULL || m->decode_rows == NULL || m->decode_input == NULL
        || m->prefill_input == NULL || m->prefill == NULL)
    {
        fg_err_printf(err, size, "profile %s: out of memory", path);
        json_decref(root);
        return -1;
    }

    json_object_foreach(root, key, obj) {

        if (fg_step_length(key, &m->rows[m->nrows].input) != 0) {
            fg_err_printf(err, size, "profile %s: input length \"%s\" is "
                          "not a positive integer", path, key);
            json_decref(root);
            return -1;
        }

        /* counted before parsing, so that destroy frees a partial row */
        m->nrows++;

        if (fg_step_parse_row(&m->rows[m->nrows - 1], path, key, obj, err,
                              size)
            != 0)
        {
            json_decref(root);
            return -1;
        }
    }

    json_decref(root);

    qsort(m->rows, m->nrows, sizeof(fg_step_row_t), fg_step_cmp_row);

    for (i = 0; i < m->nrows; i++) {
        if (i > 0 && m->rows[i].input == m->rows[i - 1].input) {
            fg_err_printf(err, size, "profile %s: input length %.0f given "
                          "twice", path, m->rows[i].input);
            return -1;
        }

        m->prefill_input[i] = m->rows[i].input;
        m->prefill[i] = m->rows[i].prefill;

        if (m->rows[i].n >= 2) {
            m->decode_input[m->ndecode] = m->rows[i].input;
            m->decode_rows[m->ndecode++] = &m->rows[i];
        }
    }

    if (m->ndecode == 0) {
        /* no row shows growth with output: use every row, flat in output */
        for (i = 0; i < m->nrows; i++) {
            m->decode_input[i] = m->rows[i].input;
            m->decode_rows[i] = &m->rows[i];
        }

        m->ndecode = m->nrows;
    }

    return 0;
}


static int
fg_step_parse_linear(fg_step_model_t *m, const char *text, char *err,
    size_t size)
{
    char        *end;
    double       prefill, decode;
    const char  *p;

    prefill = strtod(text, &end);
    if (end == text || *end != ',') {
        goto invalid;
    }

    p = end + 1;
    decode = strtod(p, &end);
    if (end == p || *end != '\0') {
        goto invalid;
    }

    if (!(prefill >= 0.0 && decode >= 0.0)
        || !isfinite(prefill) || !isfinite(decode))
    {
        fg_err_printf(err, size, "engine model \"linear:%s\": seconds must "
                      "be finite and >= 0", text);
        return -1;
    }

    m->linear = 1;
    m->prefill_per_token = prefill;
    m->decode_per_request = decode;

    return 0;

invalid:

    fg_err_printf(err, size, "engine model \"linear:%s\": expected "
                  "linear:PREFILL,DECODE (seconds per input token, seconds "
                  "per running request and step)", text);
    return -1;
}


/*
 * gpu[:STEP,PER_SEQ,PER_CTX,PREFILL]: four non-negative seconds, or none
 * for the defaults of fg_step_model.h.
 */
static int
fg_step_parse_gpu(fg_step_model_t *m, const char *text, char *err,
    size_t size)
{
    char        *end;
    double       v[4];
    uint32_t     i;
    const char  *p;

    v[0] = FG_STEP_GPU_STEP;
    v[1] = FG_STEP_GPU_PER_SEQ;
    v[2] = FG_STEP_GPU_PER_CTX;
    v[3] = FG_STEP_GPU_PREFILL;

    if (*text == ':') {
        p = text + 1;

        for (i = 0; i < 4; i++) {
            v[i] = strtod(p, &end);

            if (end == p || *end != (i < 3 ? ',' : '\0')) {
                goto invalid;
            }

            if (!(v[i] >= 0.0) || !isfinite(v[i])) {
                fg_err_printf(err, size, "engine model \"gpu%s\": seconds "
                              "must be finite and >= 0", text);
                return -1;
            }

            p = end + 1;
        }

    } else if (*text != '\0') {
        goto invalid;
    }

    m->gpu = 1;
    m->step = v[0];
    m->decode_per_request = v[1];
    m->per_ctx = v[2];
    m->prefill_per_token = v[3];

    return 0;

invalid:

    fg_err_printf(err, size, "engine model \"gpu%s\": expected gpu or "
                  "gpu:STEP,PER_SEQ,PER_CTX,PREFILL (seconds per step, per "
                  "running request, per context token held, per input "
                  "token)", text);
    return -1;
}


fg_step_model_t *
fg_step_model_create(const char *spec, char *err, size_t size)
{
    int               rc;
    fg_step_model_t  *m;

    m = calloc(1, sizeof(fg_step_model_t));
    if (m == NULL) {
        fg_err_printf(err, size, "out of memory");
        return NULL;
    }

    if (strncmp(spec, "linear:", 7) == 0) {
        rc = fg_step_parse_linear(m, spec + 7, err, size);

    } else if (strncmp(spec, "gpu", 3) == 0) {
        rc = fg_step_parse_gpu(m, spec + 3, err, size);

    } else if (strncmp(spec, "profile:", 8) == 0 && spec[8] != '\0') {
        rc = fg_step_load_profile(m, spec + 8, err, size);

    } else {
        fg_err_printf(err, size, "engine model \"%s\": expected "
                      "profile:FILE or linear:PREFILL,DECODE or "
                      "gpu[:STEP,PER_SEQ,PER_CTX,PREFILL]", spec);
        rc = -1;
    }

    if (rc != 0) {
        fg_step_model_destroy(m);
        return NULL;
    }

    return m;
}


void
fg_step_model_destroy(fg_step_model_t *m)
{
    uint32_t  i;

    if (m == NULL) {
        return;
    }

    for (i = 0; i < m->nrows; i++) {
        free(m->rows[i].output);
        free(m->rows[i].decode);
    }

    fg_free_all(m->rows, m->decode_rows, m->decode_input, m->prefill_input,
                m->prefill, m);
}


double
fg_step_model_prefill(const fg_step_model_t *m, uint32_t input)
{
    double  t;

    if (m->linear || m->gpu) {
        return m->prefill_per_token * input;
    }

    t = fg_step_interp(m->prefill_input, m->prefill, m->nrows, input);

    return t > 0.0 ? t : 0.0;
}


double
fg_step_model_decode(const fg_step_model_t *m, uint32_t input,
    uint32_t output)
{
    double          t, lo, hi;
    uint32_t        i;
    fg_step_row_t  *a, *b;

    if (m->linear) {
        return m->decode_per_request;
    }

    if (m->gpu) {
        /* the mean context it holds over its life */
        return m->decode_per_request
               + m->per_ctx * (input + (double) output / 2);
    }

    if (m->ndecode == 1) {
        a = m->decode_rows[0];
        t = fg_step_interp(a->output, a->decode, a->n, output);

    } else {
        i = fg_step_segment(m->decode_input, m->ndecode, input);
        a = m->decode_rows[i];
        b = m->decode_rows[i + 1];

        lo = fg_step_interp(a->output, a->decode, a->n, output);
        hi = fg_step_interp(b->output, b->decode, b->n, output);

        t = fg_step_line(a->input, lo, b->input, hi, input);
    }

    return t > 0.0 ? t : 0.0;
}


double
fg_step_model_step(const fg_step_model_t *m)
{
    return m->gpu ? m->step : 0.0;
}


double
fg_step_model_chunk(const fg_step_model_t *m, uint32_t pos, uint32_t n,
    int first)
{
    double  t;

    if (n == 0) {
        return 0.0;
    }

    if (pos == 0) {
        return fg_step_model_prefill(m, n);
    }

    if (!first && n == 1) {
        return fg_step_model_decode(m, pos, 1);
    }

    t = fg_step_model_prefill(m, pos + n) - fg_step_model_prefill(m, pos);

    if (first) {
        t += fg_step_model_prefill(m, 0);
    }

    return t > 0.0 ? t : 0.0;
}
