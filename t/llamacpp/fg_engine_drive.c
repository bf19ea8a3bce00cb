
/*
 * fairgate: the engine's cpu backend behind a line protocol, the side of
 * fairgate in the comparison with llama.cpp on the same GGUF file
 * (t/node/llamacpp_drive.mjs is llama.cpp's side, speaking the same
 * protocol; t/lib/Fairgate/LlamaCpp.pm drives both).  Token ids in, token
 * ids and timings out: no tokenizer on either side.
 *
 * Usage: fg_engine_drive MODEL THREADS [KV_TYPE [window]]
 *
 * KV_TYPE: the cache's values, f16 (the engine's default, as llama.cpp's)
 * or f32.  window: a model's sliding-window layers keep only their
 * windows, in the slots the engine's KV pool (fg_kv) gives them step by
 * step, as the engine serves with --kv-window on; one sequence at a time
 * then (greedy, top, logits, prefill; decode refused).
 *
 * Commands on stdin, one a line, each answered by one JSON line on stdout
 * ({"error":"..."} when it fails):
 *
 *   greedy N T1 T2 ...   the prompt T1 T2 ... from position 0 in one
 *                        step, then N greedy tokens: {"tokens":[...]}
 *   decode B N           B sequences, each with a prompt of 32 tokens
 *                        (one step, not timed), then N steps of one new
 *                        token each (the greedy choice of the step
 *                        before), timed from the first generated token:
 *                        {"tok_s":...,"s":...,"cpu_s":...}, B x N tokens,
 *                        the seconds, and the CPU seconds the process had
 *                        meanwhile (its threads together)
 *   prefill N            a prompt of N tokens in one step, timed to its
 *                        last row's logits: {"tok_s":...,"s":...,"cpu_s":...}
 *   top K T1 T2 ...      the K (up to 8) best next tokens after the
 *                        prompt, best first, and the logits' standard
 *                        deviation (fairgate only: how near a tie a
 *                        divergence was): {"sd":...,"top":[[T,L],...]}
 *   logits R T1 T2 ...  every logit of the next token after the prompt,
 *                        by id (fairgate only: the reference that the
 *                        gateway's log-probabilities are checked
 *                        against): {"logits":[...]}; the prompt computed
 *                        in steps of R rows (0: one step), as the engine
 *                        computed it
 *   rowlogits K R T1 ... the logits of row K of the same (after T1 ..
 *                        T(K+1)), each step keeping every row's logits,
 *                        as the engine keeps a prompt's whose
 *                        log-probabilities it returns: row K gets the
 *                        bits it gets in the engine's step of R rows
 *   mem                  the process's resident size now and at its
 *                        peak, and the KV cache's bytes per position:
 *                        {"rss_kib":...,"hwm_kib":...,"kv_bytes_token":...}
 *
 * The prompts' tokens are fg_drive_token(s, i), the formula both sides
 * use.  The cache holds 32 sequences of 256 positions, or one of 8192;
 * a step, 1024 tokens.
 */


#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fg_bench.h"
#include "fg_backend.h"
#include "fg_kernels.h"
#include "fg_kv.h"


#define FG_DRIVE_BLOCK      16
#define FG_DRIVE_MAX_B      32
#define FG_DRIVE_SEQ_POS    256
#define FG_DRIVE_PROMPT     32
#define FG_DRIVE_MAX_STEP   1024        /* tokens of one step, all seqs */
#define FG_DRIVE_PER_SEQ    (FG_DRIVE_SEQ_POS / FG_DRIVE_BLOCK)
#define FG_DRIVE_BLOCKS     (FG_DRIVE_MAX_B * FG_DRIVE_PER_SEQ)
#define FG_DRIVE_LINE       16384
#define FG_DRIVE_TOP        8
#define FG_DRIVE_ALL_ROWS   64          /* rowlogits: rows of a step */


typedef struct {
    const fg_backend_ops_t  *ops;
    fg_backend_t            *b;
    fg_backend_info_t        info;
    int32_t                  tables[FG_DRIVE_BLOCKS];
    int32_t                  toks[FG_DRIVE_MAX_STEP];
    int32_t                  next[FG_DRIVE_MAX_B];
    float                   *logits;
    unsigned                 want_all:1;
    char                     err[256];

    /* window: the pool and its one sequence, NULL without */
    fg_kv_t                 *kv;
    fg_kv_seq_t              seq;
} fg_drive_t;


/* the i-th prompt token of sequence s, on both sides of the protocol */
static int32_t
fg_drive_token(fg_drive_t *d, uint32_t s, uint32_t i)
{
    return (int32_t) (3 + ((uint64_t) s * 7919 + (uint64_t) i * 104729)
                          % (d->info.vocab - 3));
}


/*
 * The window's slots for one sequence's step (fg_kv_seq_window(), as the
 * engine's batcher takes them): a prompt at 0 starts the sequence again,
 * with room for a whole step's positions; its blocks are the table's
 */
static int
fg_drive_window(fg_drive_t *d, uint32_t n, uint32_t len, uint32_t pos)
{
    if (n != 1) {
        snprintf(d->err, sizeof(d->err), "window: one sequence at a time");
        return -1;
    }

    if (pos == 0) {
        fg_kv_seq_free(d->kv, &d->seq);

        if (fg_kv_grow(d->kv, &d->seq, FG_DRIVE_MAX_STEP) != 0) {
            snprintf(d->err, sizeof(d->err), "window: no blocks");
            return -1;
        }
    }

    if (fg_kv_seq_window(d->kv, &d->seq, pos, len, pos) != 0) {
        snprintf(d->err, sizeof(d->err), "window: no slot at %u", pos);
        return -1;
    }

    memcpy(d->tables, d->seq.blocks, d->seq.n_blocks * sizeof(int32_t));

    return 0;
}


/*
 * One step of n sequences: sequence s feeds toks[s * stride ..] (len
 * tokens) from pos, in its own row of blocks (one sequence alone: all
 * rows), the greedy choice of its last row into next[s]
 */
static int
fg_drive_step(fg_drive_t *d, uint32_t n, uint32_t len, uint32_t stride,
    uint32_t pos)
{
    uint32_t            s, blocks;
    fg_backend_seq_t    seqs[FG_DRIVE_MAX_B];
    fg_backend_batch_t  batch;

    if (d->kv && fg_drive_window(d, n, len, pos) != 0) {
        return -1;
    }

    blocks = n == 1 ? FG_DRIVE_BLOCKS : FG_DRIVE_PER_SEQ;

    for (s = 0; s < n; s++) {
        seqs[s] = (fg_backend_seq_t) {
            .tokens = d->toks + s * stride, .n_tokens = len, .pos = pos,
            .block_table = d->tables + s * FG_DRIVE_PER_SEQ,
            .n_blocks = blocks, .want_logits = 1, .first = pos == 0,
            .want_all = d->want_all
        };
    }

    batch.seqs = seqs;
    batch.n_seqs = n;

    if (d->ops->forward(d->b, &batch, d->logits, d->err, sizeof(d->err))
        != 0)
    {
        return -1;
    }

    for (s = 0; s < n; s++) {
        d->next[s] = fg_k_argmax(d->logits + (size_t) s * d->info.vocab,
                                 d->info.vocab);
    }

    return 0;
}


/* "N T1 T2 ...": N, and the prompt into d->toks; its length, or 0 */
static uint32_t
fg_drive_prompt(fg_drive_t *d, char *args, uint32_t *n)
{
    long      v;
    char     *end;
    uint32_t  len;

    *n = (uint32_t) strtoul(args, &end, 10);

    for (len = 0; len < FG_DRIVE_MAX_STEP; len++) {
        v = strtol(end, &args, 10);
        if (args == end) {
            break;
        }

        if (v < 0 || v >= d->info.vocab) {
            snprintf(d->err, sizeof(d->err), "token %ld out of the vocabulary",
                     v);
            return 0;
        }

        d->toks[len] = (int32_t) v;
        end = args;
    }

    if (len == 0 || len + *n > FG_DRIVE_MAX_STEP) {
        snprintf(d->err, sizeof(d->err), "1 to %d positions in all",
                 FG_DRIVE_MAX_STEP);
        return 0;
    }

    return len;
}


/* "greedy N T1 T2 ...": the prompt, then N greedy tokens */
static int
fg_drive_greedy(fg_drive_t *d, char *args)
{
    uint32_t  n, len, i;

    len = fg_drive_prompt(d, args, &n);

    if (len == 0 || n == 0 || fg_drive_step(d, 1, len, 0, 0) != 0) {
        return -1;
    }

    printf("{\"tokens\":[%d", d->next[0]);

    for (i = 1; i < n; i++) {
        d->toks[0] = d->next[0];

        if (fg_drive_step(d, 1, 1, 0, len + i - 1) != 0) {
            printf("]}\n");
            return -1;
        }

        printf(",%d", d->next[0]);
    }

    printf("]}\n");

    return 0;
}


/*
 * "top K T1 T2 ...": the K best tokens after the prompt, best first, with
 * their logits and the logits' standard deviation: how near a tie was
 */
static int
fg_drive_top(fg_drive_t *d, char *args)
{
    float     *lg;
    double     sum, sq;
    int32_t    best[FG_DRIVE_TOP];
    uint32_t   k, len, i, j, t;

    len = fg_drive_prompt(d, args, &k);

    if (len == 0 || k == 0 || k > FG_DRIVE_TOP
        || fg_drive_step(d, 1, len, 0, 0) != 0)
    {
        return -1;
    }

    lg = d->logits;
    sum = sq = 0.0;

    for (t = 0; t < d->info.vocab; t++) {
        sum += lg[t];
        sq += (double) lg[t] * lg[t];

        for (i = 0; i < k && i < t && lg[t] <= lg[best[i]]; i++) {
            /* its place among the best so far */
        }

        if (i < k) {
            for (j = (t < k ? t : k - 1); j > i; j--) {
                best[j] = best[j - 1];
            }

            best[i] = (int32_t) t;
        }
    }

    sum /= d->info.vocab;

    printf("{\"sd\":%.9g,\"top\":[", sqrt(sq / d->info.vocab - sum * sum));

    for (i = 0; i < k; i++) {
        printf("%s[%d,%.9g]", i ? "," : "", best[i], lg[best[i]]);
    }

    printf("]}\n");

    return 0;
}


/*
 * "logits R T1 T2 ...": the next token's logits after the prompt, by id,
 * the prompt computed in steps of R rows (0: one step), as the engine
 * computed it: R 1 as it decodes token after token, R 64 as it computes
 * a long prompt whose logits it keeps, in steps of 64.  The rows of a
 * step of many go through sgemm, whose bits for a row depend on its
 * place in the step: the same steps on both sides give the same bits,
 * so that a near tie falls the same way.  "rowlogits K R T1 T2 ..." (all
 * set): row K's, every row's logits kept, so that a row inside a step
 * (the engine's prompt log-probabilities) gets its bits there too.
 */
static int
fg_drive_logits(fg_drive_t *d, char *args, int all)
{
    int32_t       prompt[FG_DRIVE_MAX_STEP];
    uint32_t      rows, len, pos, n, t, k;
    const float  *row;

    k = all ? (uint32_t) strtoul(args, &args, 10) : 0;
    len = fg_drive_prompt(d, args, &rows);

    if (len == 0) {
        return -1;
    }

    if (rows == 0 || rows > len) {
        rows = len;
    }

    if (all && (k >= len || rows > FG_DRIVE_ALL_ROWS || !d->info.all_logits))
    {
        snprintf(d->err, sizeof(d->err), "rowlogits: a row of the prompt, "
                 "steps of up to %d rows", FG_DRIVE_ALL_ROWS);
        return -1;
    }

    k = all ? k : len - 1;
    memcpy(prompt, d->toks, len * sizeof(int32_t));
    d->want_all = all;

    /* the steps up to row K's: the later ones change nothing before it */
    for (pos = 0; pos <= k; pos += n) {
        n = len - pos < rows ? len - pos : rows;
        memcpy(d->toks, prompt + pos, n * sizeof(int32_t));

        if (fg_drive_step(d, 1, n, 0, pos) != 0) {
            d->want_all = 0;
            return -1;
        }
    }

    d->want_all = 0;
    row = d->logits + (all ? (size_t) (k - (pos - n)) * d->info.vocab : 0);

    printf("{\"logits\":[");

    for (t = 0; t < d->info.vocab; t++) {
        printf("%s%.9g", t ? "," : "", row[t]);
    }

    printf("]}\n");

    return 0;
}


/* the process's CPU seconds, its threads' together */
static double
fg_drive_cpu(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


/* a timing's answer: tokens per second, seconds, CPU seconds */
static void
fg_drive_timed(double tokens, double start, double cpu0)
{
    double  elapsed;

    elapsed = fg_bench_now() - start;

    printf("{\"tok_s\":%.3f,\"s\":%.6f,\"cpu_s\":%.6f}\n",
           tokens / elapsed, elapsed, fg_drive_cpu() - cpu0);
}


/* "decode B N": B prompts in one step, then N timed steps of B tokens */
static int
fg_drive_decode(fg_drive_t *d, char *args)
{
    double    start, cpu0;
    uint32_t  nb, n, s, i;

    if (sscanf(args, "%u %u", &nb, &n) != 2 || nb == 0
        || nb > FG_DRIVE_MAX_B || n == 0
        || FG_DRIVE_PROMPT + n > FG_DRIVE_SEQ_POS)
    {
        snprintf(d->err, sizeof(d->err), "decode: 1 to %d sequences, 1 to %d"
                 " steps", FG_DRIVE_MAX_B, FG_DRIVE_SEQ_POS - FG_DRIVE_PROMPT);
        return -1;
    }

    for (s = 0; s < nb; s++) {
        for (i = 0; i < FG_DRIVE_PROMPT; i++) {
            d->toks[s * FG_DRIVE_PROMPT + i] = fg_drive_token(d, s, i);
        }
    }

    if (fg_drive_step(d, nb, FG_DRIVE_PROMPT, FG_DRIVE_PROMPT, 0) != 0) {
        return -1;
    }

    start = fg_bench_now();
    cpu0 = fg_drive_cpu();

    for (i = 0; i < n; i++) {
        memcpy(d->toks, d->next, nb * sizeof(int32_t));

        if (fg_drive_step(d, nb, 1, 1, FG_DRIVE_PROMPT + i) != 0) {
            return -1;
        }
    }

    fg_drive_timed((double) nb * n, start, cpu0);

    return 0;
}


/* "prefill N": one prompt of N tokens, to its logits */
static int
fg_drive_prefill(fg_drive_t *d, char *args)
{
    double    start, cpu0;
    uint32_t  n, i;

    if (sscanf(args, "%u", &n) != 1 || n == 0 || n > FG_DRIVE_MAX_STEP) {
        snprintf(d->err, sizeof(d->err), "prefill: 1 to %d tokens",
                 FG_DRIVE_MAX_STEP);
        return -1;
    }

    for (i = 0; i < n; i++) {
        d->toks[i] = fg_drive_token(d, 0, i);
    }

    start = fg_bench_now();
    cpu0 = fg_drive_cpu();

    if (fg_drive_step(d, 1, n, 0, 0) != 0) {
        return -1;
    }

    fg_drive_timed(n, start, cpu0);

    return 0;
}


/* a "VmRSS:" line's kB of /proc/self/status */
static long
fg_drive_status_kib(const char *key)
{
    long   kib;
    char   line[256];
    FILE  *f;

    kib = -1;

    f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }

    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, strlen(key)) == 0) {
            kib = strtol(line + strlen(key), NULL, 10);
            break;
        }
    }

    fclose(f);

    return kib;
}


static int
fg_drive_mem(fg_drive_t *d)
{
    size_t  kv;

    /* the pool's bytes a position, the window's slots counted */
    kv = d->info.kv_bytes_per_block * FG_DRIVE_BLOCKS;

    if (d->kv) {
        kv -= d->info.kv_window_bytes
              * (FG_DRIVE_BLOCKS - (size_t) d->info.kv_window_slots);
    }

    printf("{\"rss_kib\":%ld,\"hwm_kib\":%ld,\"kv_bytes_token\":%zu}\n",
           fg_drive_status_kib("VmRSS:"), fg_drive_status_kib("VmHWM:"),
           kv / FG_DRIVE_BLOCKS / FG_DRIVE_BLOCK);

    return 0;
}


/* one command line; -1 with d->err filled */
static int
fg_drive_command(fg_drive_t *d, char *line)
{
    size_t  n;

    n = strcspn(line, " \n");

    if (n == 6 && strncmp(line, "greedy", n) == 0) {
        return fg_drive_greedy(d, line + n);
    }

    if (n == 6 && strncmp(line, "decode", n) == 0) {
        return fg_drive_decode(d, line + n);
    }

    if (n == 3 && strncmp(line, "top", n) == 0) {
        return fg_drive_top(d, line + n);
    }

    if (n == 6 && strncmp(line, "logits", n) == 0) {
        return fg_drive_logits(d, line + n, 0);
    }

    if (n == 9 && strncmp(line, "rowlogits", n) == 0) {
        return fg_drive_logits(d, line + n, 1);
    }

    if (n == 7 && strncmp(line, "prefill", n) == 0) {
        return fg_drive_prefill(d, line + n);
    }

    if (n == 3 && strncmp(line, "mem", n) == 0) {
        return fg_drive_mem(d);
    }

    snprintf(d->err, sizeof(d->err), "unknown command: %.*s", (int) n, line);

    return -1;
}


/* window: the pool whose slots the backend's sliding layers take */
static int
fg_drive_open_window(fg_drive_t *d)
{
    if (d->info.kv_window == 0) {
        return 0;
    }

    d->kv = fg_kv_create(FG_DRIVE_BLOCKS, FG_DRIVE_BLOCK, d->err,
                         sizeof(d->err));

    if (d->kv == NULL
        || fg_kv_set_window(d->kv, d->info.kv_window,
                            d->info.kv_window_slots, d->err, sizeof(d->err))
           != 0)
    {
        return -1;
    }

    fg_kv_seq_init(&d->seq);
    d->ops->kv_window(d->b, fg_kv_slots(d->kv));

    return 0;
}


static int
fg_drive_open(fg_drive_t *d, const char *path, uint32_t threads,
    fg_backend_kv_type_e kv_type, int window)
{
    uint32_t           i;
    fg_backend_conf_t  conf;

    conf = (fg_backend_conf_t) {
        .model_path = path, .kv_blocks = FG_DRIVE_BLOCKS,
        .block_size = FG_DRIVE_BLOCK,
        .max_batch = window ? 1 : FG_DRIVE_MAX_B,
        .max_tokens = FG_DRIVE_MAX_STEP, .threads = threads,
        .kv_type = kv_type, .kv_window = window ? 1 : 0
    };

    d->ops = &fg_backend_cpu;
    d->b = d->ops->create(&conf, d->err, sizeof(d->err));
    if (d->b == NULL) {
        return -1;
    }

    d->ops->info(d->b, &d->info);

    if (fg_drive_open_window(d) != 0) {
        return -1;
    }

    d->logits = malloc((size_t) (FG_DRIVE_MAX_B > FG_DRIVE_ALL_ROWS
                                 ? FG_DRIVE_MAX_B : FG_DRIVE_ALL_ROWS)
                       * d->info.vocab * sizeof(float));
    if (d->logits == NULL || d->info.vocab <= 3) {
        snprintf(d->err, sizeof(d->err), "no memory, or a vocabulary of 3");
        return -1;
    }

    for (i = 0; i < FG_DRIVE_BLOCKS; i++) {
        d->tables[i] = (int32_t) i;
    }

    return 0;
}


int
main(int argc, char **argv)
{
    int                    rc, window;
    char                  *p, line[FG_DRIVE_LINE];
    fg_drive_t            *d;
    fg_backend_kv_type_e   kv_type;

    kv_type = FG_BACKEND_KV_F16;
    window = argc == 5 && strcmp(argv[4], "window") == 0;

    if (argc >= 4 && strcmp(argv[3], "f32") == 0) {
        kv_type = FG_BACKEND_KV_F32;

    } else if ((argc >= 4 && strcmp(argv[3], "f16") != 0)
               || (argc == 5 && !window))
    {
        argc = 0;
    }

    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: fg_engine_drive MODEL THREADS "
                "[f16|f32 [window]]\n");
        return 2;
    }

    d = calloc(1, sizeof(fg_drive_t));

    if (d == NULL
        || fg_drive_open(d, argv[1], atoi(argv[2]), kv_type, window) != 0)
    {
        fprintf(stderr, "fg_engine_drive: %s: %s\n", argv[1],
                d ? d->err : "no memory");
        return 1;
    }

    rc = 0;

    while (fgets(line, sizeof(line), stdin) != NULL) {
        if (strncmp(line, "quit", 4) == 0) {
            break;
        }

        if (fg_drive_command(d, line) != 0) {
            /* a JSON string without escapes */
            for (p = d->err; *p != '\0'; p++) {
                *p = (*p == '"' || *p == '\\' || *p < ' ') ? '\'' : *p;
            }

            printf("{\"error\":\"%s\"}\n", d->err);
            rc = 1;
        }

        fflush(stdout);
    }

    d->ops->destroy(d->b);
    free(d->logits);
    free(d);

    return rc;
}
