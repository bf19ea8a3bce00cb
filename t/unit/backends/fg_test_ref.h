
/*
 * fairgate: the unit tests' reference forward pass of a Llama-family
 * model, for test_model.c (the cpu forward pass) and the batcher's
 * embeddings (t/unit/batch/test_embed.c).
 *
 * It runs one sequence at a time, one position after the other, with
 * dense K and V (no paging), in double, reading the file itself: its own
 * hyperparameters from the metadata, its own RoPE frequencies and
 * pairing, weights widened once with the GGUF library's conversion (not
 * the kernels').  It returns the logits of every position, and its final
 * hidden states when asked.  Its keys and values are rounded as the
 * engine's cache holds them (kv_type: halves in an F16 one).
 */

#ifndef _FG_TEST_REF_H_INCLUDED_
#define _FG_TEST_REF_H_INCLUDED_


#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fg_ggml_types.h"
#include "fg_gguf.h"
#include "fg_half.h"
#include "fg_kernels.h"


/* the engine's cache, and what the reference rounds its K and V to */
static fg_k_type_e  kv_type = FG_K_F32;


typedef struct {
    float    *attn_norm, *ffn_norm, *bq, *bk, *bv, *qn, *kn;
    float    *wq, *wk, *wv, *wo, *wg, *wu, *wd;
    int       q8;               /* the matrices are Q8_0 */
} ref_layer_t;


typedef struct {
    uint32_t      vocab, embd, n_layer, ff, n_head, n_kv, hd, n_rot, qd;
    int           halves, q8_output;
    double        eps, base;
    float        *tok_embd, *output, *output_norm, *factors;
    ref_layer_t  *l;
} ref_t;


static float *
ref_tensor(const fg_gguf_t *g, const char *name, int required)
{
    float                   *f;
    const fg_gguf_tensor_t  *t;

    t = fg_gguf_find_tensor(g, name);

    if (t == NULL) {
        if (required) {
            diag("reference: no tensor %s", name);
            exit(1);
        }

        return NULL;
    }

    f = malloc(t->n_elements * sizeof(float));

    if (f == NULL
        || fg_k_row_size((fg_k_type_e) t->type, t->n_elements) == 0)
    {
        diag("reference: cannot read %s", name);
        exit(1);
    }

    fg_k_dequant_row((fg_k_type_e) t->type, t->data, f, t->n_elements);

    return f;
}


static uint32_t
ref_u32(const fg_gguf_t *g, const char *arch, const char *key, uint32_t def)
{
    char      name[128];
    uint32_t  v;

    snprintf(name, sizeof(name), "%s.%s", arch, key);
    v = def;
    fg_gguf_get_u32(g, name, &v, NULL, 0);

    return v;
}


static int
ref_load(ref_t *r, const char *path)
{
    char             arch[16], name[64], err[FG_GGUF_ERR_LEN];
    float            f;
    uint32_t         i;
    fg_gguf_t       *g;
    fg_gguf_str_t    s;
    const fg_gguf_kv_t  *kv;

    memset(r, 0, sizeof(ref_t));

    g = fg_gguf_open(path, err, sizeof(err));
    if (g == NULL) {
        diag("reference: %s", err);
        return -1;
    }

    fg_gguf_get_str(g, "general.architecture", &s, NULL, 0);
    snprintf(arch, sizeof(arch), "%.*s", (int) s.len, s.data);

    /* llama's Q and K rows are stored permuted for adjacent pairs */
    r->halves = strcmp(arch, "llama") != 0;

    r->embd = ref_u32(g, arch, "embedding_length", 0);
    r->n_layer = ref_u32(g, arch, "block_count", 0);
    r->ff = ref_u32(g, arch, "feed_forward_length", 0);
    r->n_head = ref_u32(g, arch, "attention.head_count", 0);
    r->n_kv = ref_u32(g, arch, "attention.head_count_kv", r->n_head);
    r->hd = ref_u32(g, arch, "attention.key_length", r->embd / r->n_head);
    r->n_rot = ref_u32(g, arch, "rope.dimension_count", r->hd);
    r->qd = r->n_head * r->hd;

    snprintf(name, sizeof(name), "%s.attention.layer_norm_rms_epsilon",
             arch);
    fg_gguf_get_f32(g, name, &f, NULL, 0);
    r->eps = f;

    f = 10000.0f;
    snprintf(name, sizeof(name), "%s.rope.freq_base", arch);
    fg_gguf_get_f32(g, name, &f, NULL, 0);
    r->base = f;

    r->vocab = 0;

    if (fg_gguf_get_arr(g, "tokenizer.ggml.tokens", FG_GGUF_STRING, &kv, NULL,
                        0)
        == 0)
    {
        r->vocab = (uint32_t) kv->n;
    }

    r->tok_embd = ref_tensor(g, "token_embd.weight", 1);
    r->output = ref_tensor(g, "output.weight", 0);
    r->output_norm = ref_tensor(g, "output_norm.weight", 1);
    r->factors = ref_tensor(g, "rope_freqs.weight", 0);

    if (r->output == NULL) {
        r->output = r->tok_embd;
        r->q8_output = fg_gguf_find_tensor(g, "token_embd.weight")->type
                       == FG_GGML_Q8_0;

    } else {
        r->q8_output = fg_gguf_find_tensor(g, "output.weight")->type
                       == FG_GGML_Q8_0;
    }

    r->l = calloc(r->n_layer, sizeof(ref_layer_t));

    for (i = 0; i < r->n_layer; i++) {

#define ref_blk(field, suffix, required)                                      \
        snprintf(name, sizeof(name), "blk.%u." suffix, i);                    \
        r->l[i].field = ref_tensor(g, name, required)

        ref_blk(attn_norm, "attn_norm.weight", 1);
        ref_blk(ffn_norm, "ffn_norm.weight", 1);
        ref_blk(wq, "attn_q.weight", 1);
        ref_blk(wk, "attn_k.weight", 1);
        ref_blk(wv, "attn_v.weight", 1);
        ref_blk(wo, "attn_output.weight", 1);
        ref_blk(bq, "attn_q.bias", 0);
        ref_blk(bk, "attn_k.bias", 0);
        ref_blk(bv, "attn_v.bias", 0);
        ref_blk(qn, "attn_q_norm.weight", 0);
        ref_blk(kn, "attn_k_norm.weight", 0);
        ref_blk(wg, "ffn_gate.weight", 1);
        ref_blk(wu, "ffn_up.weight", 1);
        ref_blk(wd, "ffn_down.weight", 1);

#undef ref_blk

        snprintf(name, sizeof(name), "blk.%u.attn_q.weight", i);
        r->l[i].q8 = fg_gguf_find_tensor(g, name)->type == FG_GGML_Q8_0;
    }

    fg_gguf_close(g);

    return 0;
}


static void
ref_free(ref_t *r)
{
    uint32_t  i;

    for (i = 0; i < r->n_layer; i++) {
        free(r->l[i].attn_norm);
        free(r->l[i].ffn_norm);
        free(r->l[i].bq);
        free(r->l[i].bk);
        free(r->l[i].bv);
        free(r->l[i].qn);
        free(r->l[i].kn);
        free(r->l[i].wq);
        free(r->l[i].wk);
        free(r->l[i].wv);
        free(r->l[i].wo);
        free(r->l[i].wg);
        free(r->l[i].wu);
        free(r->l[i].wd);
    }

    if (r->output != r->tok_embd) {
        free(r->output);
    }

    free(r->tok_embd);
    free(r->output_norm);
    free(r->factors);
    free(r->l);
}


/* y[out] = W[out][in] x (+ b) */
static void
ref_matvec(double *y, const float *w, const double *x, const float *b,
    size_t in, size_t out)
{
    size_t  i, j;
    double  s;

    for (i = 0; i < out; i++) {
        s = b ? b[i] : 0.0;

        for (j = 0; j < in; j++) {
            s += (double) w[i * in + j] * x[j];
        }

        y[i] = s;
    }
}


/*
 * What a Q8_0 product sees of its input: each block of 32 as d * q,
 * q the nearest integer (ties to even) to x / (amax / 127), d = amax /
 * 127 rounded to a half, as ggml keeps it.
 */
static const double *
ref_q8(double *y, const double *x, size_t n, int q8)
{
    size_t  i, j;
    double  amax, d;

    if (!q8) {
        return x;
    }

    for (i = 0; i < n; i += 32) {
        amax = 0.0;

        for (j = 0; j < 32; j++) {
            amax = fabs(x[i + j]) > amax ? fabs(x[i + j]) : amax;
        }

        d = amax / 127;

        for (j = 0; j < 32; j++) {
            y[i + j] = d != 0.0 ? fg_fp16_to_f32(fg_f32_to_fp16((float) d))
                                  * nearbyint(x[i + j] / d) : 0.0;
        }
    }

    return y;
}


static void
ref_rmsnorm(double *y, const double *x, const float *w, size_t n, double eps)
{
    size_t  i;
    double  ss;

    ss = 0.0;

    for (i = 0; i < n; i++) {
        ss += x[i] * x[i];
    }

    ss = 1.0 / sqrt(ss / n + eps);

    for (i = 0; i < n; i++) {
        y[i] = x[i] * ss * w[i];
    }
}


static void
ref_rope(const ref_t *r, double *v, size_t n_heads, size_t p)
{
    size_t  h, i, a, b;
    double  freq, c, s, x0, x1;

    for (h = 0; h < n_heads; h++) {
        for (i = 0; i < r->n_rot / 2; i++) {
            freq = pow(r->base, -2.0 * i / r->n_rot);

            if (r->factors) {
                freq /= r->factors[i];
            }

            c = cos(p * freq);
            s = sin(p * freq);

            a = h * r->hd + (r->halves ? i : 2 * i);
            b = h * r->hd + (r->halves ? i + r->n_rot / 2 : 2 * i + 1);

            x0 = v[a];
            x1 = v[b];
            v[a] = x0 * c - x1 * s;
            v[b] = x0 * s + x1 * c;
        }
    }
}


/* one sequence's scratch and its dense cache, [n_layer][len][kvd] */
typedef struct {
    double   *x, *xb, *q, *k, *v, *o, *att, *g, *u, *xq, *kc, *vc;
    size_t    len, kvd;
} ref_run_t;


/* position p's attention output, o, over the cache of layer l */
static void
ref_attend(const ref_t *r, ref_run_t *rr, size_t l, size_t p)
{
    size_t   h, j, i, kvd, len, group;
    double   max, sum, *att;

    kvd = rr->kvd;
    len = rr->len;
    att = rr->att;
    group = r->n_head / r->n_kv;

    for (h = 0; h < r->n_head; h++) {
        max = -INFINITY;

        for (j = 0; j <= p; j++) {
            att[j] = 0.0;

            for (i = 0; i < r->hd; i++) {
                att[j] += rr->q[h * r->hd + i]
                          * rr->kc[(l * len + j) * kvd
                                   + (h / group) * r->hd + i];
            }

            att[j] /= sqrt((double) r->hd);
            max = att[j] > max ? att[j] : max;
        }

        sum = 0.0;

        for (j = 0; j <= p; j++) {
            att[j] = exp(att[j] - max);
            sum += att[j];
        }

        for (i = 0; i < r->hd; i++) {
            rr->o[h * r->hd + i] = 0.0;

            for (j = 0; j <= p; j++) {
                rr->o[h * r->hd + i] += att[j] / sum
                                        * rr->vc[(l * len + j) * kvd
                                                 + (h / group) * r->hd + i];
            }
        }
    }
}


/* a key or value as the engine's cache holds it: a half in an F16 one */
static double
ref_kv(double x)
{
    return kv_type == FG_K_F16 ? fg_fp16_to_f32(fg_f32_to_fp16((float) x))
                               : x;
}


/* layer l at position p: x goes through attention and the feed-forward */
static void
ref_layer(const ref_t *r, ref_run_t *rr, size_t l, size_t p)
{
    size_t              i, kvd;
    const double       *in;
    const ref_layer_t  *ly;

    ly = &r->l[l];
    kvd = rr->kvd;

    ref_rmsnorm(rr->xb, rr->x, ly->attn_norm, r->embd, r->eps);
    in = ref_q8(rr->xq, rr->xb, r->embd, ly->q8);
    ref_matvec(rr->q, ly->wq, in, ly->bq, r->embd, r->qd);
    ref_matvec(rr->k, ly->wk, in, ly->bk, r->embd, kvd);
    ref_matvec(rr->v, ly->wv, in, ly->bv, r->embd, kvd);

    /* qwen3: each head of q and k normed on its own, before RoPE */
    for (i = 0; ly->qn && i < r->n_head; i++) {
        ref_rmsnorm(rr->q + i * r->hd, rr->q + i * r->hd, ly->qn, r->hd,
                    r->eps);
    }

    for (i = 0; ly->kn && i < r->n_kv; i++) {
        ref_rmsnorm(rr->k + i * r->hd, rr->k + i * r->hd, ly->kn, r->hd,
                    r->eps);
    }

    ref_rope(r, rr->q, r->n_head, p);
    ref_rope(r, rr->k, r->n_kv, p);

    for (i = 0; i < kvd; i++) {
        rr->kc[(l * rr->len + p) * kvd + i] = ref_kv(rr->k[i]);
        rr->vc[(l * rr->len + p) * kvd + i] = ref_kv(rr->v[i]);
    }

    ref_attend(r, rr, l, p);

    in = ref_q8(rr->xq, rr->o, r->qd, ly->q8);
    ref_matvec(rr->xb, ly->wo, in, NULL, r->qd, r->embd);

    for (i = 0; i < r->embd; i++) {
        rr->x[i] += rr->xb[i];
    }

    ref_rmsnorm(rr->xb, rr->x, ly->ffn_norm, r->embd, r->eps);
    in = ref_q8(rr->xq, rr->xb, r->embd, ly->q8);
    ref_matvec(rr->g, ly->wg, in, NULL, r->embd, r->ff);
    ref_matvec(rr->u, ly->wu, in, NULL, r->embd, r->ff);

    for (i = 0; i < r->ff; i++) {
        rr->g[i] = rr->g[i] / (1.0 + exp(-rr->g[i])) * rr->u[i];
    }

    in = ref_q8(rr->xq, rr->g, r->ff, ly->q8);
    ref_matvec(rr->xb, ly->wd, in, NULL, r->ff, r->embd);

    for (i = 0; i < r->embd; i++) {
        rr->x[i] += rr->xb[i];
    }
}


/* logits[len][vocab] of every position of one sequence; hidden (NULL:
 * not wanted) its final hidden states, after the output norm,
 * [len][embd] */
static void
ref_forward(const ref_t *r, const int32_t *tokens, size_t len,
    double *logits, double *hidden)
{
    size_t         p, l, i, kvd;
    ref_run_t      rr;
    const double  *in;

    kvd = (size_t) r->n_kv * r->hd;

    rr.len = len;
    rr.kvd = kvd;
    rr.x = calloc(r->embd, sizeof(double));
    rr.xb = calloc(r->embd, sizeof(double));
    rr.q = calloc(r->qd, sizeof(double));
    rr.k = calloc(kvd, sizeof(double));
    rr.v = calloc(kvd, sizeof(double));
    rr.o = calloc(r->qd, sizeof(double));
    rr.att = calloc(len, sizeof(double));
    rr.g = calloc(r->ff, sizeof(double));
    rr.u = calloc(r->ff, sizeof(double));
    rr.xq = calloc(r->ff + r->embd + r->qd, sizeof(double));
    rr.kc = calloc(r->n_layer * len * kvd, sizeof(double));
    rr.vc = calloc(r->n_layer * len * kvd, sizeof(double));

    for (p = 0; p < len; p++) {
        for (i = 0; i < r->embd; i++) {
            rr.x[i] = r->tok_embd[(size_t) tokens[p] * r->embd + i];
        }

        for (l = 0; l < r->n_layer; l++) {
            ref_layer(r, &rr, l, p);
        }

        ref_rmsnorm(rr.xb, rr.x, r->output_norm, r->embd, r->eps);

        if (hidden) {
            memcpy(hidden + p * r->embd, rr.xb, r->embd * sizeof(double));
        }

        in = ref_q8(rr.xq, rr.xb, r->embd, r->q8_output);
        ref_matvec(logits + p * r->vocab, r->output, in, NULL, r->embd,
                   r->vocab);
    }

    free(rr.x);
    free(rr.xb);
    free(rr.q);
    free(rr.k);
    free(rr.v);
    free(rr.o);
    free(rr.att);
    free(rr.g);
    free(rr.u);
    free(rr.xq);
    free(rr.kc);
    free(rr.vc);
}


#endif /* _FG_TEST_REF_H_INCLUDED_ */
