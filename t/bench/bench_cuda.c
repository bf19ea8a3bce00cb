
/*
 * fairgate: speed of the cuda backend (make bench-gpu; docs/cuda.md),
 * through its table of functions as the engine drives it.
 *
 *   copy       device-to-device cudaMemcpy of 2 GiB (--copy-mb): the
 *              bandwidth that batch-1 decode can reach at best (read +
 *              write bytes)
 *   gemm       cublasGemmEx 8192^3 (--gemm), fp16 inputs, fp32
 *              accumulation: the tensor cores' measured throughput beside
 *              their data-sheet peak (by GPU name, or --peak-tflops)
 *   decode     B sequences (B = 1, 16, 64, 256), each with --ctx tokens
 *              (512) prefilled, then --steps (32) steps of one token each,
 *              logits copied back as the engine needs them
 *   prefill    one --prefill-token prompt (2048) in steps of --chunk
 *              (512) tokens, as the engine's --step-tokens cuts it
 *
 * on a Llama-3-8B-shaped model with random F16 weights (embedding 4096,
 * 32 layers, 32 heads, 8 kv heads, feed-forward 14336, vocabulary
 * 128256, untied; --embd, --layers, --ff, --heads, --kv-heads and
 * --vocab change it; --type q4_K, q8_0... another weight type), written
 * by the generator to
 * $TMPDIR/fg-bench-f16-e4096-l32-f14336-h32-k8-v128256.gguf (about 16 GB)
 * the first time, or read from --model.
 *
 * Batch-1 decode against the bandwidth roofline: the bytes a token reads
 * (every matrix once, the KV cache of its context) over the copy
 * bandwidth, divided by the measured step time.  Prefill against the
 * tensor cores: 2 flops per weight per token (the output matrix once per
 * step: only the last row's logits), plus attention's 4 * pos * q_dim per
 * token and layer, per second, over the peak.
 *
 * Usage: bench_cuda [--model PATH] [--layers N] [--embd N] [--ff N]
 *                   [--heads N] [--kv-heads N] [--vocab N] [--ctx N]
 *                   [--steps N] [--prefill N] [--chunk N]
 *                   [--batches 1,16,64,256] [--peak-tflops X] [--gemm N]
 *                   [--copy-mb N]
 *
 * Built against the CPU emulation (build/t/bench_cuda_emu) with a tiny
 * shape, it runs in make test so that the program itself is checked.
 */


#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "fg_bench.h"
#include "fg_backend.h"
#include "fg_ggml_types.h"
#include "fg_gguf_gen.h"
#include "fg_rand.h"


#define FG_BENCH_BLOCK     16
#define FG_BENCH_MAX_B     1024
#define FG_BENCH_N_U32     12


typedef struct {
    const char  *model;
    uint32_t     type;              /* of the generated model's matrices */
    uint32_t     layers;
    uint32_t     embd;
    uint32_t     ff;
    uint32_t     heads;
    uint32_t     kv_heads;
    uint32_t     vocab;
    uint32_t     gemm;
    uint32_t     copy_mb;
    uint32_t     ctx;
    uint32_t     steps;
    uint32_t     prefill;
    uint32_t     chunk;
    uint32_t     batches[16];
    uint32_t     n_batches;
    double       peak;
} fg_bench_args_t;


typedef struct {
    int32_t     *table;
    uint32_t     n_blocks;
    uint32_t     len;
} fg_bench_seq_t;


static fg_rand_t  fg_bench_rng = { 0x853c49e6748fea9bULL };


static int32_t
fg_bench_token(uint32_t vocab)
{
    return (int32_t) (fg_rand_next(&fg_bench_rng) % vocab);
}


/* the data sheet's dense fp16 tensor-core peak, fp32 accumulation */
static double
fg_bench_peak(const struct cudaDeviceProp *p)
{
    size_t  i;

    static const struct {
        const char  *name;
        double       tflops;
    }  peaks[] = {
        { "H200", 989.4 },
        { "H100 NVL", 835.0 },
        { "H100 PCIe", 756.0 },
        { "H100", 989.4 },
        { "H800", 989.4 },
        { "A100", 312.0 },
        { "A800", 312.0 },
        { "L40S", 362.1 },
        { "L4", 121.0 },
        { "RTX 4090", 165.2 },
        { "A10G", 70.0 },
        { "A10", 125.0 },
    };

    for (i = 0; i < sizeof(peaks) / sizeof(peaks[0]); i++) {
        if (strstr(p->name, peaks[i].name)) {
            return peaks[i].tflops;
        }
    }

    return 0.0;
}


/* device-to-device copy bandwidth, bytes read and written per second */
static double
fg_bench_copy(uint32_t mb)
{
    int          i;
    void        *a, *b;
    float        ms, best;
    size_t       bytes;
    cudaEvent_t  e0, e1;

    bytes = (size_t) mb << 20;

    if (cudaMalloc(&a, bytes) != cudaSuccess
        || cudaMalloc(&b, bytes) != cudaSuccess)
    {
        return 0.0;
    }

    cudaMemset(a, 1, bytes);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);

    best = 1e30f;

    for (i = 0; i < 10; i++) {
        cudaEventRecord(e0, 0);
        cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        best = ms < best ? ms : best;
    }

    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);

    return 2.0 * (double) bytes / (best / 1e3);
}


/* cublasGemmEx m = n = k, fp16 in, fp32 accumulate: flops/s */
static double
fg_bench_gemm(int n)
{
    int             i;
    void           *a, *b, *c;
    float           ms, best, alpha, beta;
    cudaEvent_t     e0, e1;
    cublasHandle_t  h;

    alpha = 1.0f;
    beta = 0.0f;

    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        return 0.0;
    }

    if (cudaMalloc(&a, (size_t) n * n * 2) != cudaSuccess
        || cudaMalloc(&b, (size_t) n * n * 2) != cudaSuccess
        || cudaMalloc(&c, (size_t) n * n * 4) != cudaSuccess)
    {
        cublasDestroy(h);
        return 0.0;
    }

    /* small values: zeros would let nothing be measured differently, but
     * keep the inputs finite and the same every run */
    cudaMemset(a, 0x11, (size_t) n * n * 2);
    cudaMemset(b, 0x11, (size_t) n * n * 2);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);

    best = 1e30f;

    for (i = 0; i < 10; i++) {
        cudaEventRecord(e0, 0);
        cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a,
                     CUDA_R_16F, n, b, CUDA_R_16F, n, &beta, c, CUDA_R_32F,
                     n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        best = i > 0 && ms < best ? ms : best;
    }

    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cublasDestroy(h);

    return 2.0 * (double) n * n * n / (best / 1e3);
}


static int
fg_bench_u32(const char *s, uint32_t *out)
{
    char          *end;
    unsigned long  v;

    v = strtoul(s, &end, 10);

    if (end == s || *end || v == 0 || v > UINT32_MAX) {
        return -1;
    }

    *out = (uint32_t) v;

    return 0;
}


/* --batches 1,16,64,256: up to 16 sizes of 1 to FG_BENCH_MAX_B */
static int
fg_bench_batches(char *list, fg_bench_args_t *a)
{
    char  *tok, *save;

    a->n_batches = 0;

    for (tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
    {
        if (a->n_batches == 16
            || fg_bench_u32(tok, &a->batches[a->n_batches]) != 0
            || a->batches[a->n_batches] > FG_BENCH_MAX_B)
        {
            return -1;
        }

        a->n_batches++;
    }

    return 0;
}


/* bytes a weight of type takes (2 for F16, 0.5625 for Q4_K) */
static double
fg_bench_wsize(uint32_t type)
{
    return (double) fg_ggml_row_size(type, 8192) / 8192.0;
}


static void
fg_bench_defaults(fg_bench_args_t *a)
{
    /* Llama 3 8B's shape; the rest 0 */
    *a = (fg_bench_args_t) {
        .layers = 32, .embd = 4096, .ff = 14336, .heads = 32, .kv_heads = 8,
        .vocab = 128256, .gemm = 8192, .copy_mb = 2048, .ctx = 512,
        .steps = 32, .prefill = 2048, .chunk = 512,
        .batches = { 1, 16, 64, 256 }, .n_batches = 4, .type = FG_GGML_F16
    };
}


/* a weight type by its ggml name (f16, q8_0, q4_K...), one the engine runs */
static int
fg_bench_type(const char *s, uint32_t *type)
{
    uint32_t     t;
    const char  *name;

    for (t = 0; t < FG_GGML_NTYPES; t++) {
        name = fg_ggml_type_name(t);

        if (name != NULL && strcasecmp(name, s) == 0
            && fg_ggml_type_supported(t))
        {
            *type = t;
            return 0;
        }
    }

    return -1;
}


static int
fg_bench_parse(int argc, char **argv, fg_bench_args_t *a)
{
    int            c, i;
    struct option  opts[FG_BENCH_N_U32 + 5];

    /* the options of a positive number: getopt_long returns their index */
    static const struct {
        const char  *name;
        size_t       off;
    }  u32s[FG_BENCH_N_U32] = {
        { "layers", offsetof(fg_bench_args_t, layers) },
        { "embd", offsetof(fg_bench_args_t, embd) },
        { "ff", offsetof(fg_bench_args_t, ff) },
        { "heads", offsetof(fg_bench_args_t, heads) },
        { "kv-heads", offsetof(fg_bench_args_t, kv_heads) },
        { "vocab", offsetof(fg_bench_args_t, vocab) },
        { "gemm", offsetof(fg_bench_args_t, gemm) },
        { "copy-mb", offsetof(fg_bench_args_t, copy_mb) },
        { "ctx", offsetof(fg_bench_args_t, ctx) },
        { "steps", offsetof(fg_bench_args_t, steps) },
        { "prefill", offsetof(fg_bench_args_t, prefill) },
        { "chunk", offsetof(fg_bench_args_t, chunk) },
    };

    fg_bench_defaults(a);

    for (i = 0; i < FG_BENCH_N_U32; i++) {
        opts[i] = (struct option) { u32s[i].name, required_argument, NULL, i };
    }

    opts[i++] = (struct option) { "model", required_argument, NULL, 'm' };
    opts[i++] = (struct option) { "peak-tflops", required_argument, NULL,
                                  'p' };
    opts[i++] = (struct option) { "batches", required_argument, NULL, 'b' };
    opts[i++] = (struct option) { "type", required_argument, NULL, 't' };
    opts[i] = (struct option) { NULL, 0, NULL, 0 };

    opterr = 0;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c >= 0 && c < FG_BENCH_N_U32) {
            if (fg_bench_u32(optarg, (uint32_t *) ((char *) a + u32s[c].off))
                != 0)
            {
                goto usage;
            }

        } else if (c == 'm') {
            a->model = optarg;

        } else if (c == 'p') {
            a->peak = atof(optarg);

        } else if (c == 't') {
            if (fg_bench_type(optarg, &a->type) != 0) {
                goto usage;
            }

        } else if (c != 'b' || fg_bench_batches(optarg, a) != 0) {
            goto usage;
        }
    }

    if (optind < argc) {
        goto usage;
    }

    if (a->embd % a->heads || a->heads % a->kv_heads
        || (a->embd / a->heads) % 2)
    {
        fprintf(stderr, "bench_cuda: --embd must be a multiple of --heads "
                "(an even head size), --heads of --kv-heads\n");
        return -1;
    }

    return 0;

usage:

    fprintf(stderr, "usage: bench_cuda [--model PATH] [--layers N] "
            "[--embd N] [--ff N] [--heads N] [--kv-heads N] [--vocab N] "
            "[--ctx N] [--steps N] [--prefill N] [--chunk N] "
            "[--batches 1,16,64,256] [--peak-tflops X] [--gemm N] "
            "[--copy-mb N] [--type f16|q8_0|q4_K|...]\n");

    return -1;
}


/* the Llama-3-8B shape, or the one asked for, random F16 weights */
static int
fg_bench_model(fg_bench_args_t *a, char *path, size_t size)
{
    char                err[512];
    double              t0;
    fg_gguf_gen_conf_t  c;

    if (a->model) {
        snprintf(path, size, "%s", a->model);
        return 0;
    }

    fg_gguf_gen_defaults(&c);
    c.type = a->type;
    c.name = "llama-3-8b-shaped, random";
    c.n_ctx = 8192;
    c.n_embd = a->embd;
    c.n_layer = a->layers;
    c.n_ff = a->ff;
    c.n_head = a->heads;
    c.n_head_kv = a->kv_heads;
    c.n_vocab = a->vocab;
    c.rope_base = 500000.0f;
    c.seed = 8;

    snprintf(path, size, "%s/fg-bench-%s-e%u-l%u-f%u-h%u-k%u-v%u.gguf",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             fg_ggml_type_name(c.type), c.n_embd, c.n_layer, c.n_ff,
             c.n_head, c.n_head_kv, c.n_vocab);

    if (access(path, R_OK) == 0) {
        return 0;
    }

    fprintf(stderr, "bench_cuda: writing %s (%.1f GB)...\n", path,
            (double) fg_gguf_gen_params(&c) * fg_bench_wsize(a->type) / 1e9);
    t0 = fg_bench_now();

    if (fg_gguf_gen_file(&c, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_cuda: %s\n", err);
        unlink(path);
        return -1;
    }

    fprintf(stderr, "bench_cuda: written in %.0f s\n", fg_bench_now() - t0);

    return 0;
}


/* the backend and a benchmark's sequences on it */
typedef struct {
    const fg_backend_ops_t  *ops;
    fg_backend_t            *b;
    fg_backend_info_t        info;
    fg_bench_seq_t          *seqs;
    fg_backend_seq_t        *bs;
    int32_t                 *toks;
    float                   *logits;
    size_t                   max_b;
    int32_t                  next;          /* the next free KV block */
} fg_bench_run_t;


/* what the GPU's memory and tensor cores can do, measured and rated */
typedef struct {
    double                   bw;            /* copy, bytes/s */
    double                   gemm;          /* cuBLAS, flops/s */
    double                   peak;          /* data sheet, flops/s */
} fg_bench_roof_t;


/*
 * One step: seqs [0, n) each feed cnt tokens at their len; logits wanted
 * for each.  Blocks come from r->next.
 */
static int
fg_bench_step(fg_bench_run_t *r, fg_bench_seq_t *seqs, size_t n,
    uint32_t cnt)
{
    char                 err[512];
    size_t               i, j;
    fg_backend_seq_t    *bs;
    fg_backend_batch_t   batch;

    bs = r->bs;

    for (i = 0; i < n; i++) {
        while (seqs[i].n_blocks * FG_BENCH_BLOCK < seqs[i].len + cnt) {
            seqs[i].table[seqs[i].n_blocks++] = r->next++;
        }

        for (j = 0; j < cnt; j++) {
            r->toks[i * cnt + j] = fg_bench_token(r->info.vocab);
        }

        bs[i].tokens = r->toks + i * cnt;
        bs[i].n_tokens = cnt;
        bs[i].pos = seqs[i].len;
        bs[i].block_table = seqs[i].table;
        bs[i].n_blocks = seqs[i].n_blocks;
        bs[i].want_logits = 1;
    }

    batch.seqs = bs;
    batch.n_seqs = (uint32_t) n;

    if (r->ops->forward(r->b, &batch, r->logits, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_cuda: forward: %s\n", err);
        return -1;
    }

    for (i = 0; i < n; i++) {
        seqs[i].len += cnt;
    }

    return 0;
}


/* a sequence's prompt of len tokens, in steps of the chunk */
static int
fg_bench_prompt(fg_bench_run_t *r, fg_bench_seq_t *seq, uint32_t len,
    uint32_t chunk)
{
    uint32_t  pos, s;

    for (pos = 0; pos < len; pos += s) {
        s = len - pos < chunk ? len - pos : chunk;

        if (fg_bench_step(r, seq, 1, s) != 0) {
            return -1;
        }
    }

    return 0;
}


/* the copy bandwidth and cuBLAS's throughput, printed beside the GPU */
static void
fg_bench_roof(const fg_bench_args_t *a, fg_bench_roof_t *roof)
{
    struct cudaDeviceProp  prop;

    cudaGetDeviceProperties(&prop, 0);

    roof->bw = fg_bench_copy(a->copy_mb);
    roof->gemm = fg_bench_gemm((int) a->gemm);
    roof->peak = a->peak > 0.0 ? a->peak * 1e12
                               : fg_bench_peak(&prop) * 1e12;

    printf("GPU: %s, sm_%d%d, %zu MiB, %d SMs\n", prop.name, prop.major,
           prop.minor, prop.totalGlobalMem >> 20, prop.multiProcessorCount);
    printf("copy bandwidth (D2D, read + write): %.0f GB/s\n",
           roof->bw / 1e9);
    printf("cublasGemmEx %u^3 fp16 -> fp32: %.0f TFLOPS measured; "
           "data-sheet peak %s%.0f TFLOPS\n", a->gemm, roof->gemm / 1e12,
           roof->peak > 0.0 ? "" : "unknown, using measured ",
           (roof->peak > 0.0 ? roof->peak : roof->gemm) / 1e12);

    if (roof->peak <= 0.0) {
        roof->peak = roof->gemm;
    }

    /* before the model's progress lines on stderr */
    fflush(stdout);
}


/* the backend on the model, its cache checked against what is asked */
static int
fg_bench_open(fg_bench_run_t *r, const fg_bench_args_t *a, const char *path)
{
    char               err[512];
    double             t0;
    size_t             k, per_seq, need;
    fg_backend_conf_t  conf;

    r->max_b = 1;

    for (k = 0; k < a->n_batches; k++) {
        r->max_b = a->batches[k] > r->max_b ? a->batches[k] : r->max_b;
    }

    memset(&conf, 0, sizeof(conf));
    conf.model_path = path;
    conf.block_size = FG_BENCH_BLOCK;
    conf.max_batch = (uint32_t) r->max_b;
    conf.max_tokens = a->chunk > r->max_b ? a->chunk : (uint32_t) r->max_b;
    conf.kv_blocks = 0;

    t0 = fg_bench_now();
    r->b = r->ops->create(&conf, err, sizeof(err));

    if (r->b == NULL) {
        fprintf(stderr, "bench_cuda: %s\n", err);
        return -1;
    }

    memset(&r->info, 0, sizeof(r->info));
    r->ops->info(r->b, &r->info);

    printf("model: %s, %u layers, vocabulary %u; loaded in %.1f s; KV "
           "cache %u blocks of %u\n", path, r->info.n_layer, r->info.vocab,
           fg_bench_now() - t0, r->info.kv_blocks, FG_BENCH_BLOCK);

    per_seq = (a->ctx + a->steps + FG_BENCH_BLOCK) / FG_BENCH_BLOCK + 1;
    need = r->max_b * per_seq;

    if (need > r->info.kv_blocks
        || (a->prefill + FG_BENCH_BLOCK) / FG_BENCH_BLOCK > r->info.kv_blocks)
    {
        fprintf(stderr, "bench_cuda: %zu sequences of %u tokens need %zu "
                "KV blocks, the cache has %u: --ctx or --batches less\n",
                r->max_b, a->ctx + a->steps, need, r->info.kv_blocks);
        r->ops->destroy(r->b);
        return -1;
    }

    return 0;
}


/* the sequences' tables, tokens, batch and logits for the largest batch */
static void
fg_bench_alloc(fg_bench_run_t *r, const fg_bench_args_t *a)
{
    size_t  i, len;

    len = a->prefill > a->ctx + a->steps ? a->prefill : a->ctx + a->steps;

    r->seqs = calloc(r->max_b, sizeof(fg_bench_seq_t));
    r->bs = calloc(r->max_b, sizeof(fg_backend_seq_t));
    r->toks = malloc((a->chunk > r->max_b ? a->chunk : r->max_b)
                     * sizeof(int32_t)
                     + (size_t) a->prefill * sizeof(int32_t));
    r->logits = malloc(r->max_b * (size_t) r->info.vocab * sizeof(float));

    for (i = 0; i < r->max_b; i++) {
        r->seqs[i].table = malloc((len / FG_BENCH_BLOCK + 2)
                                  * sizeof(int32_t));
    }
}


static void
fg_bench_close(fg_bench_run_t *r)
{
    size_t  i;

    for (i = 0; i < r->max_b; i++) {
        free(r->seqs[i].table);
    }

    free(r->seqs);
    free(r->bs);
    free(r->toks);
    free(r->logits);
    r->ops->destroy(r->b);
}


/* the bytes one decode token reads: every matrix, no embeddings */
static double
fg_bench_wbytes(const fg_bench_args_t *a, const fg_backend_info_t *info)
{
    double  embd, q, kv, ff, vocab;

    if (a->model) {
        return 0.0;
    }

    embd = a->embd;
    q = (double) a->heads * info->head_dim;
    kv = (double) info->n_kv_head * info->head_dim;
    ff = a->ff;
    vocab = info->vocab;

    return fg_bench_wsize(a->type)
           * (info->n_layer * (embd * (q + 2 * kv) + q * embd
                               + 3 * embd * ff)
              + embd * vocab);
}


/* b_n sequences of --ctx tokens decoding --steps tokens: a table row */
static int
fg_bench_decode(fg_bench_run_t *r, const fg_bench_args_t *a, uint32_t b_n,
    double bw, double wbytes)
{
    double    t0, t, kvtok, ideal;
    size_t    i;
    uint32_t  s;

    r->next = 0;

    /* a fresh cache for each batch size: blocks from 0 again */
    for (i = 0; i < b_n; i++) {
        r->seqs[i].n_blocks = 0;
        r->seqs[i].len = 0;
    }

    for (i = 0; i < b_n; i++) {
        if (fg_bench_prompt(r, &r->seqs[i], a->ctx, a->chunk) != 0) {
            return -1;
        }
    }

    /* one step unmeasured: the graph of this batch size is recorded */
    if (fg_bench_step(r, r->seqs, b_n, 1) != 0) {
        return -1;
    }

    t0 = fg_bench_now();

    for (s = 0; s < a->steps; s++) {
        if (fg_bench_step(r, r->seqs, b_n, 1) != 0) {
            return -1;
        }
    }

    t = (fg_bench_now() - t0) / a->steps;

    /* batch 1: the roofline, weights and the mean context's KV */
    kvtok = (double) r->info.kv_bytes_per_block / FG_BENCH_BLOCK;
    ideal = (wbytes + kvtok * (a->ctx + 1 + a->steps / 2.0)) / bw;

    printf("| %u | %u | %u | %.1f | %.2f | %s",
           b_n, a->ctx, a->steps, b_n / t, t * 1e3,
           b_n == 1 && wbytes > 0.0 ? "" : "- |\n");

    if (b_n == 1 && wbytes > 0.0) {
        printf("%.0f%% (%.2f ms ideal) |\n", 100.0 * ideal / t,
               ideal * 1e3);
    }

    fflush(stdout);

    return 0;
}


/* one prompt of --prefill tokens in chunks, a fresh sequence */
static int
fg_bench_prefill(fg_bench_run_t *r, const fg_bench_args_t *a,
    const fg_bench_roof_t *roof, double wbytes)
{
    double    t0, t, attn, flops;
    uint32_t  pos;

    r->next = 0;
    r->seqs[0].n_blocks = 0;
    r->seqs[0].len = 0;

    /* warm-up chunk on a second sequence, for cuBLAS's first calls */
    r->seqs[1 % r->max_b].n_blocks = 0;
    r->seqs[1 % r->max_b].len = 0;

    if (r->max_b > 1 && fg_bench_step(r, &r->seqs[1], 1, a->chunk) != 0) {
        return -1;
    }

    t0 = fg_bench_now();

    if (fg_bench_prompt(r, &r->seqs[0], a->prefill, a->chunk) != 0) {
        return -1;
    }

    t = fg_bench_now() - t0;

    /* weights but the output matrix per token, it per step; attention */
    attn = 0.0;

    for (pos = 0; pos < a->prefill; pos++) {
        attn += 4.0 * (pos + 1) * r->info.head_dim * a->heads
                * r->info.n_layer;
    }

    flops = (wbytes / 2.0 - (double) a->embd * r->info.vocab) * 2.0
            * a->prefill
            + (double) a->embd * r->info.vocab * 2.0
              * ((a->prefill + a->chunk - 1) / a->chunk)
            + attn;

    printf("\nprefill: %u tokens in steps of %u: %.0f tokens/s, %.1f s",
           a->prefill, a->chunk, a->prefill / t, t);

    if (wbytes > 0.0) {
        printf(", %.0f TFLOPS: %.0f%% of the %.0f TFLOPS peak, %.0f%% of "
               "cuBLAS's measured %.0f", flops / t / 1e12,
               100.0 * flops / t / roof->peak, roof->peak / 1e12,
               100.0 * flops / t / roof->gemm, roof->gemm / 1e12);
    }

    printf("\n");

    return 0;
}


int
main(int argc, char **argv)
{
    int                count;
    char               path[1024], err[512];
    double             wbytes;
    size_t             k;
    fg_bench_run_t     r;
    fg_bench_args_t    a;
    fg_bench_roof_t    roof;

    if (fg_bench_parse(argc, argv, &a) != 0) {
        return 2;
    }

    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "bench_cuda: no usable GPU: make bench-gpu runs "
                "where one is\n");
        return 1;
    }

    memset(&r, 0, sizeof(r));
    r.ops = fg_backend_load("cuda", err, sizeof(err));

    if (r.ops == NULL) {
        fprintf(stderr, "bench_cuda: %s\n", err);
        return 1;
    }

    fg_bench_roof(&a, &roof);

    if (fg_bench_model(&a, path, sizeof(path)) != 0
        || fg_bench_open(&r, &a, path) != 0)
    {
        return 1;
    }

    fg_bench_alloc(&r, &a);
    wbytes = fg_bench_wbytes(&a, &r.info);

    printf("\n| batch | context | steps | tokens/s | ms/step |"
           " vs roofline |\n|---|---|---|---|---|---|\n");

    for (k = 0; k < a.n_batches; k++) {
        if (fg_bench_decode(&r, &a, a.batches[k], roof.bw, wbytes) != 0) {
            return 1;
        }
    }

    if (fg_bench_prefill(&r, &a, &roof, wbytes) != 0) {
        return 1;
    }

    fg_bench_close(&r);

    return 0;
}
