
/*
 * fairgate: the memory the unified KV pool saves (docs/multi-model.md).
 *
 * Two models of different shapes (generated: 4 layers x 4 KV heads and 6
 * layers x 4, heads of 32) on the cpu backend, their load in turn as a
 * popularity shift has it: model a's sequences fill the pool (prompts
 * computed, held), end; then model b's do.  Two ways, each in a process
 * of its own:
 *
 *   own      each model a cache of its own, as large as the pool (the
 *            engine's way before the arena, the cuda backend's still)
 *   arena    one arena of the pool's head blocks both take from
 *
 * The figure: how much the process's anonymous resident memory (RssAnon)
 * grew over the two phases, against the pool's size.  A cache keeps the
 * pages once written, so caches of their own end up holding what each
 * model held at its most; the arena, what the models held at once.
 *
 * Usage: bench_kv_arena [--dir DIR] [--pool HEAD_BLOCKS]
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fg_backend.h"
#include "fg_gguf_gen.h"
#include "fg_kv.h"

#include "../unit/fg_test_backend.h"


#define N_MODELS   2
#define SEQ_LEN    1024         /* positions a sequence holds */
#define CHUNK      128          /* prompt positions a step */
#define HEAD_DIM   32


typedef struct {
    char            path[512];
    uint32_t        layers;
    uint32_t        unit;
    fg_backend_t   *backend;
    fg_kv_t        *kv;
} model_t;


static long
rss_anon_kib(void)
{
    char   line[256];
    long   kib;
    FILE  *f;

    kib = -1;
    f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "RssAnon: %ld", &kib) == 1) {
            break;
        }
    }

    if (f) {
        fclose(f);
    }

    return kib;
}


static int
model_gen(model_t *m)
{
    char                err[512];
    fg_gguf_gen_conf_t  c;

    fg_gguf_gen_defaults(&c);
    c.n_layer = m->layers;
    c.n_head = 4;
    c.n_head_kv = 4;
    c.n_embd = 4 * HEAD_DIM;
    c.n_ff = 256;
    c.n_vocab = 512;
    c.n_ctx = SEQ_LEN;
    c.seed = m->layers;

    if (access(m->path, R_OK) == 0) {
        return 0;
    }

    if (fg_gguf_gen_file(&c, m->path, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_kv_arena: %s: %s\n", m->path, err);
        return -1;
    }

    return 0;
}


static int
model_open(model_t *m, uint32_t pool, fg_kv_arena_t *arena)
{
    char               err[512];
    uint32_t           blocks;
    fg_backend_conf_t  conf;

    blocks = pool / m->unit;
    m->kv = fg_kv_create(blocks, FG_KV_BLOCK_SIZE, err, sizeof(err));

    if (m->kv == NULL
        || (arena && fg_kv_set_arena(m->kv, arena, m->unit) != 0))
    {
        fprintf(stderr, "bench_kv_arena: %s\n", m->kv ? "map" : err);
        return -1;
    }

    fg_test_backend_conf(&conf, m->path, blocks, FG_KV_BLOCK_SIZE, 1, CHUNK, 1);

    if (arena) {
        fg_kv_arena_conf(arena, fg_kv_map(m->kv), &conf);
    }

    m->backend = fg_backend_cpu.create(&conf, err, sizeof(err));

    if (m->backend == NULL) {
        fprintf(stderr, "bench_kv_arena: %s\n", err);
        return -1;
    }

    return 0;
}


/* a sequence's first n positions computed, CHUNK a step */
static int
seq_fill(model_t *m, fg_kv_seq_t *s, uint32_t n, float *logits)
{
    char                err[512];
    int32_t             tokens[CHUNK];
    uint32_t            pos, i, k;
    fg_backend_seq_t    sq;
    fg_backend_batch_t  b;

    if (fg_kv_grow(m->kv, s, n) != 0) {
        return -1;
    }

    for (pos = 0; pos < n; pos += k) {
        k = n - pos < CHUNK ? n - pos : CHUNK;

        for (i = 0; i < k; i++) {
            tokens[i] = (int32_t) (1 + (pos + i) * 7 % 500);
        }

        fg_test_backend_one(&b, &sq, tokens, k, pos, s->blocks, s->n_blocks);

        if (fg_backend_cpu.forward(m->backend, &b, logits, err,
                                   sizeof(err))
            != 0)
        {
            fprintf(stderr, "bench_kv_arena: %s\n", err);
            return -1;
        }
    }

    return 0;
}


/* as many sequences of SEQ_LEN as the pool holds of the model, then free */
static uint32_t
phase(model_t *m, float *logits)
{
    uint32_t     n, i;
    fg_kv_seq_t  s[256];

    for (n = 0; n < 256; n++) {
        fg_kv_seq_init(&s[n]);

        if (seq_fill(m, &s[n], SEQ_LEN, logits) != 0) {
            break;
        }
    }

    for (i = 0; i <= n && i < 256; i++) {
        fg_kv_seq_free(m->kv, &s[i]);
    }

    return n;
}


/* one way, in this (child) process: prints its JSON line */
static int
run(model_t *models, uint32_t pool, int shared)
{
    char            err[512];
    long            base, after;
    float          *logits;
    uint32_t        k, seqs[N_MODELS];
    fg_kv_seq_t     warm;
    fg_kv_arena_t  *arena;

    arena = shared ? fg_kv_arena_create(pool, FG_KV_BLOCK_SIZE * HEAD_DIM
                                        * sizeof(uint16_t), err, sizeof(err))
                   : NULL;
    logits = malloc(512 * sizeof(float));

    for (k = 0; k < N_MODELS; k++) {
        if ((shared && arena == NULL)
            || model_open(&models[k], pool, arena) != 0)
        {
            return 1;
        }

        /* a first step touches the scratch both ways have alike */
        fg_kv_seq_init(&warm);
        seq_fill(&models[k], &warm, CHUNK, logits);
        fg_kv_seq_free(models[k].kv, &warm);
    }

    base = rss_anon_kib();

    for (k = 0; k < N_MODELS; k++) {
        seqs[k] = phase(&models[k], logits);
    }

    after = rss_anon_kib();

    printf("{\"bench\":\"kv_arena\",\"cache\":\"%s\",\"pool_mib\":%.1f,"
           "\"seqs\":[%u,%u],\"kv_resident_mib\":%.1f}\n",
           shared ? "arena" : "own",
           (double) pool * FG_KV_BLOCK_SIZE * HEAD_DIM * sizeof(uint16_t)
           / 1048576.0, seqs[0], seqs[1], (double) (after - base) / 1024.0);
    fflush(stdout);

    return 0;
}


int
main(int argc, char **argv)
{
    int          i, status, rc;
    pid_t        pid;
    uint32_t     pool;
    const char  *dir;
    model_t      models[N_MODELS];

    dir = "build/bench";
    pool = 65536;

    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--dir") == 0) {
            dir = argv[i + 1];

        } else if (strcmp(argv[i], "--pool") == 0) {
            pool = (uint32_t) strtoul(argv[i + 1], NULL, 10);
        }
    }

    memset(models, 0, sizeof(models));
    models[0].layers = 4;
    models[1].layers = 6;

    for (i = 0; i < N_MODELS; i++) {
        models[i].unit = 2 * models[i].layers * 4;
        snprintf(models[i].path, sizeof(models[i].path),
                 "%s/kv-arena-%u.gguf", dir, models[i].layers);

        if (model_gen(&models[i]) != 0) {
            return 1;
        }
    }

    rc = 0;

    for (i = 0; i < 2; i++) {
        pid = fork();

        if (pid == 0) {
            _exit(run(models, pool, i));
        }

        if (pid < 0 || waitpid(pid, &status, 0) != pid
            || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        {
            rc = 1;
        }
    }

    return rc;
}
