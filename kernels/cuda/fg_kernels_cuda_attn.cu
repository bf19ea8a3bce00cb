
/*
 * fairgate: the CUDA kernels of the KV cache (fg_kernels_cuda.h): a
 * step's keys and values written into it, with the biases and RoPE of q
 * and k, and paged attention over it.
 *
 * Launch shapes, and why:
 *
 *   qkv          one block per (row, head): biases, RoPE and the cache
 *                write in one pass over q, k, v
 *   attention    one block per (row, query head), warps taking keys in
 *                turn with an online softmax, merged at the end: no score
 *                buffer, so any context length fits
 */


#include <limits.h>

#include "fg_kernels_cuda_int.cuh"


#define FG_CUK_ATTN_WARPS   8


static __global__ void
fg_cuk_qkv_kernel(float *q, float *k, float *v, const float *bq,
    const float *bk, const float *bv, __half *kc, __half *vc,
    fg_cuk_batch_t b, int n_head, int n_kv_head, int head_dim,
    int block_size, int rot_dim, const float *inv_freq, int halves)
{
    int           t, h, kh, d, i, half, p, slot;
    float        *x, *xv, x0, x1, c, s;
    double        sn, cs;
    size_t        off;
    int32_t       block;
    const float  *bias, *bias_v;

    t = blockIdx.x;
    h = blockIdx.y;
    p = b.tok.pos[t];

    kh = h - n_head;
    xv = NULL;
    bias_v = NULL;

    if (kh < 0) {
        x = q + ((size_t) t * n_head + h) * head_dim;
        bias = bq ? bq + (size_t) h * head_dim : NULL;

    } else {
        x = k + ((size_t) t * n_kv_head + kh) * head_dim;
        xv = v + ((size_t) t * n_kv_head + kh) * head_dim;
        bias = bk ? bk + (size_t) kh * head_dim : NULL;
        bias_v = bv ? bv + (size_t) kh * head_dim : NULL;
    }

    for (d = threadIdx.x; d < head_dim; d += blockDim.x) {
        if (bias) {
            x[d] += bias[d];
        }

        if (bias_v) {
            xv[d] += bias_v[d];
        }
    }

    __syncthreads();

    half = rot_dim / 2;

    for (i = threadIdx.x; i < half; i += blockDim.x) {

        /* in double, as the CPU: pos * freq reaches 1e5 radians */
        sincos((double) p * inv_freq[i], &sn, &cs);
        c = (float) cs;
        s = (float) sn;

        if (halves) {
            x0 = x[i];
            x1 = x[i + half];
            x[i] = x0 * c - x1 * s;
            x[i + half] = x0 * s + x1 * c;

        } else {
            x0 = x[2 * i];
            x1 = x[2 * i + 1];
            x[2 * i] = x0 * c - x1 * s;
            x[2 * i + 1] = x0 * s + x1 * c;
        }
    }

    if (kh < 0) {
        return;
    }

    __syncthreads();

    block = b.tok.block_tables[(size_t) b.tok.seq[t] * b.tok.max_blocks
                               + p / block_size];
    slot = p % block_size;
    off = (((size_t) block * n_kv_head + kh) * block_size + slot) * head_dim;

    for (d = threadIdx.x; d < head_dim; d += blockDim.x) {
        kc[off + d] = __float2half_rn(x[d]);
        vc[off + d] = __float2half_rn(xv[d]);
    }
}


/*
 * A block takes the queries of G heads that share a kv head, for R rows
 * of one sequence (NQ >= R * G queries in all), so that each key and
 * value it reads from the cache serves all of them: G = 4 for Llama 3's
 * grouped heads in decode, and R > 1 rows of a prefill chunk, where
 * every row would otherwise read the whole context again.
 *
 * Lane l holds dimensions l, l + 32, ... of the head (ND of them).  Each
 * warp takes KEYS keys at a time, their loads in flight together, and
 * keeps a running max, sum and weighted values per query (an online
 * softmax, no score buffer: any context fits); the warps' states are
 * merged at the end.  A key past a query's position is masked for it:
 * causal masking of a chunk and decode over block tables are one loop.
 * Rows of other sequences in a block's R (decode batches) are taken in
 * turn.  A sliding window (window > 0) starts the keys at the earliest
 * any query sees and masks, for each query, those before its own window;
 * a soft cap bends each score to softcap * tanh(score / softcap).
 */
template <int ND, int NQ>
static __global__ void
__launch_bounds__(FG_CUK_ATTN_WARPS * 32)
fg_cuk_attention_kernel(float *out, const float *q, const __half *kc,
    const __half *vc, fg_cuk_batch_t b, int n_head, int n_kv_head,
    int head_dim, int block_size, float scale, int rows, int heads,
    float softcap, int window)
{
    const int            KEYS = NQ >= 4 ? 2 : 4;
    int                  lane, warp, kh, h0, t0, t1, ts, te, nq, qi, i, u;
    int                  j, j0, jlo, d, w, pmax, pmin, seq, pq[NQ];
    float                qv[NQ][ND], acc[NQ][ND], m[NQ], l[NQ];
    float                kr[KEYS][ND], vr[KEYS][ND], sc[KEYS][NQ];
    float                mx, c, e, tot;
    size_t               off;
    const int32_t       *table;
    __shared__ float     sm[FG_CUK_ATTN_WARPS][NQ];
    __shared__ float     sl[FG_CUK_ATTN_WARPS][NQ];
    extern __shared__ float  sacc[];

    lane = threadIdx.x & 31;
    warp = threadIdx.x >> 5;
    h0 = blockIdx.y * heads;
    kh = h0 / (n_head / n_kv_head);
    t0 = blockIdx.x * rows;
    t1 = min(t0 + rows, (int) b.tok.n_tokens);

    for (ts = t0; ts < t1; ts = te) {
        seq = b.tok.seq[ts];

        for (te = ts + 1; te < t1 && b.tok.seq[te] == seq; te++) {
            /* void */
        }

        nq = (te - ts) * heads;
        table = b.tok.block_tables + (size_t) seq * b.tok.max_blocks;
        pmax = 0;
        pmin = INT_MAX;

#pragma unroll
        for (qi = 0; qi < NQ; qi++) {
            pq[qi] = -1;
            m[qi] = -INFINITY;
            l[qi] = 0.0f;

            if (qi < nq) {
                pq[qi] = b.tok.pos[ts + qi / heads];
                pmax = max(pmax, pq[qi]);
                pmin = min(pmin, pq[qi]);
            }

#pragma unroll
            for (i = 0; i < ND; i++) {
                d = lane + 32 * i;
                acc[qi][i] = 0.0f;
                qv[qi][i] = qi < nq && d < head_dim
                            ? q[((size_t) (ts + qi / heads) * n_head + h0
                                 + qi % heads) * head_dim + d] * scale
                            : 0.0f;
            }
        }

        jlo = window > 0 ? max(0, pmin - window + 1) : 0;

        for (j0 = jlo + warp * KEYS; j0 <= pmax;
             j0 += FG_CUK_ATTN_WARPS * KEYS)
        {

#pragma unroll
            for (u = 0; u < KEYS; u++) {
                j = j0 + u;
                off = 0;

                if (j <= pmax) {
                    off = (((size_t) table[j / block_size] * n_kv_head + kh)
                           * block_size + j % block_size) * head_dim;
                }

#pragma unroll
                for (i = 0; i < ND; i++) {
                    d = lane + 32 * i;
                    kr[u][i] = 0.0f;
                    vr[u][i] = 0.0f;

                    if (j <= pmax && d < head_dim) {
                        kr[u][i] = __half2float(kc[off + d]);
                        vr[u][i] = __half2float(vc[off + d]);
                    }
                }
            }

#pragma unroll
            for (u = 0; u < KEYS; u++) {

#pragma unroll
                for (qi = 0; qi < NQ; qi++) {
                    e = 0.0f;

#pragma unroll
                    for (i = 0; i < ND; i++) {
                        e += qv[qi][i] * kr[u][i];
                    }

                    e = fg_cuk_warp_sum(e);

                    if (softcap > 0.0f) {
                        e = softcap * tanhf(e / softcap);
                    }

                    sc[u][qi] = j0 + u <= pq[qi]
                                && (window == 0 || pq[qi] - (j0 + u) < window)
                                ? e : -INFINITY;
                }
            }

#pragma unroll
            for (qi = 0; qi < NQ; qi++) {
                mx = m[qi];

#pragma unroll
                for (u = 0; u < KEYS; u++) {
                    mx = fmaxf(mx, sc[u][qi]);
                }

                /* no key of this round is this query's yet */
                if (mx == -INFINITY) {
                    continue;
                }

                c = expf(m[qi] - mx);
                l[qi] *= c;

#pragma unroll
                for (i = 0; i < ND; i++) {
                    acc[qi][i] *= c;
                }

#pragma unroll
                for (u = 0; u < KEYS; u++) {
                    e = expf(sc[u][qi] - mx);
                    l[qi] += e;

#pragma unroll
                    for (i = 0; i < ND; i++) {
                        acc[qi][i] += e * vr[u][i];
                    }
                }

                m[qi] = mx;
            }
        }

        /* the warps' states, merged */
        if (lane == 0) {

#pragma unroll
            for (qi = 0; qi < NQ; qi++) {
                sm[warp][qi] = m[qi];
                sl[warp][qi] = l[qi];
            }
        }

#pragma unroll
        for (qi = 0; qi < NQ; qi++) {

#pragma unroll
            for (i = 0; i < ND; i++) {
                d = lane + 32 * i;

                if (qi < nq && d < head_dim) {
                    sacc[(warp * NQ + qi) * head_dim + d] = acc[qi][i];
                }
            }
        }

        __syncthreads();

        for (i = threadIdx.x; i < nq * head_dim; i += blockDim.x) {
            qi = i / head_dim;
            d = i % head_dim;

            /* a query's own key is in some warp: mx is finite */
            mx = -INFINITY;

            for (w = 0; w < FG_CUK_ATTN_WARPS; w++) {
                mx = fmaxf(mx, sm[w][qi]);
            }

            tot = 0.0f;
            e = 0.0f;

            for (w = 0; w < FG_CUK_ATTN_WARPS; w++) {
                if (sl[w][qi] != 0.0f) {
                    c = expf(sm[w][qi] - mx);
                    tot += sl[w][qi] * c;
                    e += sacc[(w * NQ + qi) * head_dim + d] * c;
                }
            }

            out[((size_t) (ts + qi / heads) * n_head + h0 + qi % heads)
                * head_dim + d] = e / tot;
        }

        __syncthreads();
    }
}


/* ---- launchers ---- */

extern "C" cudaError_t
fg_cuk_qkv(cudaStream_t s, float *q, float *k, float *v, const float *bq,
    const float *bk, const float *bv, const fg_cuk_kv_t *kv,
    const fg_cuk_batch_t *b, size_t n_head, size_t rot_dim,
    const float *inv_freq, fg_k_rope_e rope)
{
    dim3      grid;
    unsigned  threads;

    if (b->tok.n_tokens == 0) {
        return cudaSuccess;
    }

    grid = dim3((unsigned) b->tok.n_tokens,
                (unsigned) (n_head + kv->n_kv_head));
    threads = kv->head_dim < 128 ? 32 : 128;

    fg_cuk_qkv_kernel<<<grid, threads, 0, s>>>(
        q, k, v, bq, bk, bv, (__half *) kv->k, (__half *) kv->v, *b,
        (int) n_head, (int) kv->n_kv_head, (int) kv->head_dim,
        (int) kv->block_size, (int) rot_dim, inv_freq,
        rope == FG_K_ROPE_HALVES);

    return cudaGetLastError();
}


/* queries a block may take for a head of this size: 48 KiB of merging */
static int
fg_cuk_attn_nq(size_t head_dim)
{
    return head_dim <= 128 ? 8 : (head_dim <= 256 ? 4 : 2);
}


extern "C" cudaError_t
fg_cuk_attention(cudaStream_t s, float *out, const float *q,
    const fg_cuk_kv_t *kv, const fg_cuk_batch_t *b, size_t n_head)
{
    return fg_cuk_attention_ext(s, out, q, kv, b, n_head, NULL);
}


extern "C" cudaError_t
fg_cuk_attention_ext(cudaStream_t s, float *out, const float *q,
    const fg_cuk_kv_t *kv, const fg_cuk_batch_t *b, size_t n_head,
    const fg_k_attn_opts_t *opts)
{
    int     group, heads, rows, nq, nq_max, code, window;
    dim3    grid;
    float   scale, softcap;
    size_t  smem;

    if (b->tok.n_tokens == 0) {
        return cudaSuccess;
    }

    if (kv->head_dim > FG_CUK_MAX_HEAD_DIM || kv->n_kv_head == 0
        || n_head % kv->n_kv_head != 0)
    {
        return cudaErrorInvalidValue;
    }

    /* the heads of a kv group that fit, and rows of a chunk beside them */
    nq_max = fg_cuk_attn_nq(kv->head_dim);
    group = (int) (n_head / kv->n_kv_head);

    for (heads = nq_max < group ? nq_max : group; group % heads; heads--) {
        /* void */
    }

    rows = b->rows_per_seq > 1 ? nq_max / heads : 1;

    for (nq = 1; nq < rows * heads; nq *= 2) {
        /* void */
    }

    grid = dim3((unsigned) ((b->tok.n_tokens + rows - 1) / rows),
                (unsigned) (n_head / heads));
    scale = 1.0f / sqrtf((float) kv->head_dim);
    softcap = 0.0f;
    window = 0;

    if (opts) {
        scale = opts->scale > 0 ? opts->scale : scale;
        softcap = opts->softcap;
        window = (int) opts->window;
    }

    smem = (size_t) FG_CUK_ATTN_WARPS * nq * kv->head_dim * sizeof(float);

    code = kv->head_dim <= 32 ? 1 : kv->head_dim <= 64 ? 2
           : kv->head_dim <= 128 ? 4 : kv->head_dim <= 256 ? 8 : 16;

#define FG_CUK_ATTN(nd, n)                                                    \
    case nd * 100 + n:                                                        \
        fg_cuk_attention_kernel<nd, n>                                        \
            <<<grid, FG_CUK_ATTN_WARPS * 32, smem, s>>>(                      \
            out, q, (const __half *) kv->k, (const __half *) kv->v, *b,       \
            (int) n_head, (int) kv->n_kv_head, (int) kv->head_dim,            \
            (int) kv->block_size, scale, rows, heads, softcap, window);       \
        break

    switch (code * 100 + nq) {

    FG_CUK_ATTN(1, 1);
    FG_CUK_ATTN(1, 2);
    FG_CUK_ATTN(1, 4);
    FG_CUK_ATTN(1, 8);
    FG_CUK_ATTN(2, 1);
    FG_CUK_ATTN(2, 2);
    FG_CUK_ATTN(2, 4);
    FG_CUK_ATTN(2, 8);
    FG_CUK_ATTN(4, 1);
    FG_CUK_ATTN(4, 2);
    FG_CUK_ATTN(4, 4);
    FG_CUK_ATTN(4, 8);
    FG_CUK_ATTN(8, 1);
    FG_CUK_ATTN(8, 2);
    FG_CUK_ATTN(8, 4);
    FG_CUK_ATTN(16, 1);
    FG_CUK_ATTN(16, 2);

    default:
        return cudaErrorInvalidValue;
    }

#undef FG_CUK_ATTN

    return cudaGetLastError();
}
