
/*
 * fairgate: fairgate-engine, the colocated inference engine.
 *
 *   fairgate-engine --model PATH [--backend cpu|cuda|sim] [--kv-blocks N]
 *       [--max-batch N] [--threads N] [--shm NAME] [--step-model SPEC]
 *       [--speedup X] ...
 *           serves the gateway over the shared-memory segment NAME until
 *           SIGTERM or SIGINT (the segment is then removed);
 *
 *   fairgate-engine --model PATH --prompt TEXT [-n N] [--temperature T]
 *       [--seed S] ...
 *           one request through the batcher alone: prints the
 *           continuation as it is generated.
 *
 * Bad arguments exit with status 2 and a sentence naming the argument;
 * a failure to start exits with 1.
 */


#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fg_backend.h"
#include "fg_batch.h"
#include "fg_engine_serve.h"
#include "fg_gguf.h"
#include "fg_kv.h"
#include "fg_shm_engine.h"
#include "fg_tokenizer.h"


#define FG_MAIN_SHM         "/fairgate"
#define FG_MAIN_BACKEND     "cpu"
#define FG_MAIN_KV_BLOCKS   1024
#define FG_MAIN_MAX_BATCH   32
#define FG_MAIN_STEP_TOKENS 512
#define FG_MAIN_MAX_SEQS    1024
#define FG_MAIN_N           128
#define FG_MAIN_MAX_EOG     64


typedef struct {
    const char         *model;
    const char         *backend;
    const char         *shm;
    const char         *group;
    const char         *step_model;
    const char         *prompt;
    uint32_t            kv_blocks;
    uint32_t            max_batch;
    uint32_t            step_tokens;
    uint32_t            max_seqs;
    uint32_t            threads;
    uint32_t            vocab;
    uint32_t            worker_timeout;
    uint32_t            n;
    double              speedup;
    fg_sample_params_t  sp;
    unsigned            seeded:1;
    unsigned            ignore_eos:1;
    unsigned            kv_blocks_set:1;
} fg_main_args_t;


/* the one-shot mode's output */
typedef struct {
    const fg_tokenizer_t  *tok;
    fg_tok_stream_t        stream;
    char                  *out;
    size_t                 out_size;
    uint32_t               finish;
    uint32_t               generated;
} fg_main_print_t;


static volatile sig_atomic_t  fg_main_stop;


static void
fg_main_signal(int signo)
{
    (void) signo;

    fg_main_stop = 1;
}


static void
fg_main_usage(FILE *f)
{
    fprintf(f,
"usage: fairgate-engine --model PATH [options]           serve the gateway\n"
"       fairgate-engine --model PATH --prompt TEXT [...]  one continuation\n"
"\n"
"  --model PATH         GGUF model (sim: optional, for its vocabulary)\n"
"  --backend NAME       cpu (default), cuda or sim\n"
"  --kv-blocks N        KV cache blocks of 16 positions (%d; cuda: what\n"
"                       free GPU memory holds)\n"
"  --max-batch N        sequences in one step (%d)\n"
"  --step-tokens N      tokens in one step, prefill chunks included (%d)\n"
"  --max-seqs N         requests held, running and waiting (%d)\n"
"  --threads N          cpu: threads (0: one per core)\n"
"  --shm NAME           shared-memory segment (%s)\n"
"  --shm-group GROUP    the segment's group: nginx's workers' (0660)\n"
"  --worker-timeout MS  a worker silent this long with tokens unread is\n"
"                       lost (5000)\n"
"  --step-model SPEC    sim: linear:PREFILL,DECODE or profile:FILE\n"
"  --speedup X          sim: divide step times by X (1)\n"
"  --vocab N            sim without --model: vocabulary size (32000)\n"
"  --prompt TEXT        one-shot: continue TEXT and print the continuation\n"
"  -n N                 one-shot: tokens to generate (%d)\n"
"  --temperature T      one-shot: 0 (default) is greedy\n"
"  --top-k N, --top-p P one-shot: sampling cuts\n"
"  --seed S             one-shot: the sampler's seed\n"
"  --ignore-eos         one-shot: generate all N tokens\n",
            FG_MAIN_KV_BLOCKS, FG_MAIN_MAX_BATCH, FG_MAIN_STEP_TOKENS,
            FG_MAIN_MAX_SEQS, FG_MAIN_SHM, FG_MAIN_N);
}


static int
fg_main_bad(const char *fmt, const char *opt, const char *val)
{
    fprintf(stderr, "fairgate-engine: ");
    fprintf(stderr, fmt, opt, val);
    fprintf(stderr, "\n(fairgate-engine --help lists the options)\n");

    return -1;
}


static int
fg_main_u32(const char *opt, const char *val, uint32_t min, uint32_t max,
    uint32_t *out)
{
    char           *end;
    unsigned long   v;

    errno = 0;
    v = strtoul(val, &end, 10);

    if (val[0] < '0' || val[0] > '9' || *end != '\0' || errno != 0
        || v < min || v > max)
    {
        fprintf(stderr, "fairgate-engine: %s \"%s\": expected a whole "
                "number from %u to %u\n", opt, val, min, max);
        return -1;
    }

    *out = (uint32_t) v;

    return 0;
}


static int
fg_main_double(const char *opt, const char *val, double min, double max,
    double *out)
{
    char    *end;
    double   v;

    errno = 0;
    v = strtod(val, &end);

    if (end == val || *end != '\0' || errno != 0 || !(v >= min && v <= max))
    {
        fprintf(stderr, "fairgate-engine: %s \"%s\": expected a number from "
                "%g to %g\n", opt, val, min, max);
        return -1;
    }

    *out = v;

    return 0;
}


static int
fg_main_parse(int argc, char **argv, fg_main_args_t *a)
{
    int                  c, idx;
    double               d;
    uint32_t             u;
    unsigned long long   seed;
    char                *end;

    static const struct option  opts[] = {
        { "model",          required_argument, NULL, 'm' },
        { "backend",        required_argument, NULL, 'b' },
        { "kv-blocks",      required_argument, NULL, 'k' },
        { "max-batch",      required_argument, NULL, 'B' },
        { "step-tokens",    required_argument, NULL, 'T' },
        { "max-seqs",       required_argument, NULL, 'S' },
        { "threads",        required_argument, NULL, 't' },
        { "shm",            required_argument, NULL, 's' },
        { "shm-group",      required_argument, NULL, 'g' },
        { "worker-timeout", required_argument, NULL, 'w' },
        { "step-model",     required_argument, NULL, 'M' },
        { "speedup",        required_argument, NULL, 'x' },
        { "vocab",          required_argument, NULL, 'V' },
        { "prompt",         required_argument, NULL, 'p' },
        { "temperature",    required_argument, NULL, 'e' },
        { "top-k",          required_argument, NULL, 'K' },
        { "top-p",          required_argument, NULL, 'P' },
        { "seed",           required_argument, NULL, 'r' },
        { "ignore-eos",     no_argument,       NULL, 'i' },
        { "help",           no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    memset(a, 0, sizeof(fg_main_args_t));
    a->backend = FG_MAIN_BACKEND;
    a->shm = FG_MAIN_SHM;
    a->kv_blocks = FG_MAIN_KV_BLOCKS;
    a->max_batch = FG_MAIN_MAX_BATCH;
    a->step_tokens = FG_MAIN_STEP_TOKENS;
    a->max_seqs = FG_MAIN_MAX_SEQS;
    a->n = FG_MAIN_N;
    a->speedup = 1.0;
    fg_sample_params_init(&a->sp);

    opterr = 0;

    while ((c = getopt_long(argc, argv, ":n:h", opts, &idx)) != -1) {
        switch (c) {

        case 'm':
            a->model = optarg;
            break;

        case 'b':
            a->backend = optarg;
            break;

        case 'k':
            if (fg_main_u32("--kv-blocks", optarg, 1, 1u << 24,
                            &a->kv_blocks) != 0)
            {
                return -1;
            }

            a->kv_blocks_set = 1;
            break;

        case 'B':
            if (fg_main_u32("--max-batch", optarg, 1, 4096, &a->max_batch)
                != 0)
            {
                return -1;
            }
            break;

        case 'T':
            if (fg_main_u32("--step-tokens", optarg, 1, 1u << 20,
                            &a->step_tokens) != 0)
            {
                return -1;
            }
            break;

        case 'S':
            if (fg_main_u32("--max-seqs", optarg, 1, 1u << 20, &a->max_seqs)
                != 0)
            {
                return -1;
            }
            break;

        case 't':
            if (fg_main_u32("--threads", optarg, 0, 1024, &a->threads) != 0) {
                return -1;
            }
            break;

        case 's':
            if (!fg_shm_name_valid(optarg)) {
                return fg_main_bad("%s \"%s\": expected a slash and a name "
                                   "without another slash, as /fairgate",
                                   "--shm", optarg);
            }

            a->shm = optarg;
            break;

        case 'g':
            a->group = optarg;
            break;

        case 'w':
            if (fg_main_u32("--worker-timeout", optarg, 10, 3600000,
                            &a->worker_timeout) != 0)
            {
                return -1;
            }
            break;

        case 'M':
            a->step_model = optarg;
            break;

        case 'x':
            if (fg_main_double("--speedup", optarg, 1e-3, 1e12, &a->speedup)
                != 0)
            {
                return -1;
            }
            break;

        case 'V':
            if (fg_main_u32("--vocab", optarg, 4, 1u << 24, &a->vocab) != 0) {
                return -1;
            }
            break;

        case 'p':
            a->prompt = optarg;
            break;

        case 'n':
            if (fg_main_u32("-n", optarg, 1, 1u << 24, &a->n) != 0) {
                return -1;
            }
            break;

        case 'e':
            if (fg_main_double("--temperature", optarg, 0.0,
                               FG_SAMPLE_MAX_TEMPERATURE, &d) != 0)
            {
                return -1;
            }

            a->sp.temperature = (float) d;
            break;

        case 'K':
            if (fg_main_u32("--top-k", optarg, 0, 1u << 24, &u) != 0) {
                return -1;
            }

            a->sp.top_k = u;
            break;

        case 'P':
            if (fg_main_double("--top-p", optarg, 1e-6, 1.0, &d) != 0) {
                return -1;
            }

            a->sp.top_p = (float) d;
            break;

        case 'r':
            errno = 0;
            seed = strtoull(optarg, &end, 10);

            if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno)
            {
                return fg_main_bad("%s \"%s\": expected a whole number from "
                                   "0 to 2^64 - 1", "--seed", optarg);
            }

            a->sp.seed = seed;
            a->seeded = 1;
            break;

        case 'i':
            a->ignore_eos = 1;
            break;

        case 'h':
            fg_main_usage(stdout);
            exit(0);

        case ':':
            return fg_main_bad("%s needs a value%s",
                               argv[optind - 1], "");

        default:
            return fg_main_bad("unknown option \"%s\"%s",
                               argv[optind - 1], "");
        }
    }

    if (optind < argc) {
        return fg_main_bad("unexpected argument \"%s\"%s", argv[optind], "");
    }

    if (strcmp(a->backend, "cpu") != 0 && strcmp(a->backend, "sim") != 0
        && strcmp(a->backend, "cuda") != 0)
    {
        return fg_main_bad("%s \"%s\": expected cpu, cuda or sim",
                           "--backend", a->backend);
    }

    if (a->model == NULL && (strcmp(a->backend, "sim") != 0 || a->prompt)) {
        return fg_main_bad("%s is required%s", "--model PATH",
                           strcmp(a->backend, "sim") == 0
                           ? " (the one-shot mode needs its tokenizer)" : "");
    }

    if (a->step_tokens < a->max_batch) {
        fprintf(stderr, "fairgate-engine: --step-tokens must be at least "
                "--max-batch (%u < %u): every sequence of a step needs a "
                "token\n", a->step_tokens, a->max_batch);
        return -1;
    }

    if (a->max_seqs < a->max_batch) {
        a->max_seqs = a->max_batch;
    }

    if (!a->seeded) {
        a->sp.seed = (uint64_t) time(NULL) ^ ((uint64_t) getpid() << 32);
    }

    return 0;
}


static double
fg_main_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}


static void
fg_main_print(void *ctx, const fg_batch_event_t *ev)
{
    ssize_t           n;
    fg_main_print_t  *p;

    p = ctx;
    p->finish = ev->finish;
    p->generated = ev->n_generated;

    /* a stop token ends the text; it is not part of it */
    if (ev->token < 0 || ev->finish == FG_FINISH_STOP) {
        return;
    }

    n = fg_tok_stream_push(p->tok, &p->stream, ev->token, 0, p->out,
                           p->out_size);

    if (n > 0) {
        fwrite(p->out, 1, (size_t) n, stdout);
        fflush(stdout);
    }
}


/* the end-of-generation ids of a tokenizer */
static uint32_t
fg_main_eog(const fg_tokenizer_t *tok, int32_t *eog, uint32_t max)
{
    int32_t   id;
    uint32_t  n;

    n = 0;

    for (id = 0; (uint32_t) id < fg_tokenizer_n_vocab(tok) && n < max; id++) {
        if (fg_tokenizer_is_eog(tok, id)) {
            eog[n++] = id;
        }
    }

    return n;
}


static int
fg_main_oneshot(const fg_main_args_t *a, const fg_backend_ops_t *ops,
    fg_backend_t *backend, fg_kv_t *kv, const fg_tokenizer_t *tok)
{
    int               rc;
    char              err[512];
    double            t0, t1;
    int32_t          *ids, eog[FG_MAIN_MAX_EOG];
    ssize_t           n;
    size_t            len, cap;
    fg_batch_t       *batch;
    fg_batch_req_t    req;
    fg_batch_conf_t   bc;
    fg_main_print_t   pr;

    len = strlen(a->prompt);
    cap = 3 * len + 8;
    ids = malloc(cap * sizeof(int32_t));

    memset(&pr, 0, sizeof(pr));
    pr.tok = tok;
    pr.out_size = FG_TOK_STREAM_OUT(fg_tokenizer_max_piece(tok));
    pr.out = malloc(pr.out_size);

    if (ids == NULL || pr.out == NULL) {
        fprintf(stderr, "fairgate-engine: out of memory\n");
        return 1;
    }

    n = fg_tokenizer_encode(tok, a->prompt, len, 0, ids, cap);

    if (n <= 0) {
        fprintf(stderr, "fairgate-engine: the prompt makes no tokens\n");
        return 2;
    }

    memset(&bc, 0, sizeof(bc));
    bc.max_batch = a->max_batch;
    bc.max_tokens = a->step_tokens;
    bc.max_seqs = a->max_batch;
    bc.eog = eog;
    bc.n_eog = fg_main_eog(tok, eog, FG_MAIN_MAX_EOG);
    bc.emit = fg_main_print;
    bc.ctx = &pr;

    batch = fg_batch_create(&bc, ops, backend, kv, err, sizeof(err));

    if (batch == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        return 1;
    }

    memset(&req, 0, sizeof(req));
    req.prompt = ids;
    req.n_prompt = (uint32_t) n;
    req.max_tokens = a->n;
    req.sampling = a->sp;
    req.ignore_eos = a->ignore_eos;

    if (fg_batch_submit(batch, &req, err, sizeof(err)) != FG_BATCH_OK) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        fg_batch_destroy(batch);
        return 2;
    }

    fg_tok_stream_init(&pr.stream);
    t0 = fg_main_now();
    rc = 0;

    while (!fg_main_stop && fg_batch_held(batch)) {
        if (fg_batch_step(batch, err, sizeof(err)) < 0) {
            fprintf(stderr, "\nfairgate-engine: %s\n", err);
            rc = 1;
            break;
        }
    }

    t1 = fg_main_now();

    n = fg_tok_stream_flush(&pr.stream, pr.out, pr.out_size);

    if (n > 0) {
        fwrite(pr.out, 1, (size_t) n, stdout);
    }

    printf("\n");
    fflush(stdout);

    fprintf(stderr, "fairgate-engine: %u prompt tokens, %u generated in "
            "%.3f s (%.1f tokens/s), finish: %s\n", req.n_prompt,
            pr.generated, t1 - t0,
            t1 > t0 ? pr.generated / (t1 - t0) : 0.0,
            fg_finish_name(pr.finish));

    fg_batch_destroy(batch);
    free(ids);
    free(pr.out);

    return rc;
}


static int
fg_main_serve(const fg_main_args_t *a, const fg_backend_ops_t *ops,
    fg_backend_t *backend, fg_kv_t *kv, const fg_tokenizer_t *tok,
    const fg_backend_info_t *info)
{
    char                   err[512];
    int32_t                eog[FG_MAIN_MAX_EOG];
    fg_batch_t            *batch;
    fg_batch_conf_t        bc;
    fg_shm_engine_t       *shm;
    fg_shm_engine_conf_t   sc;

    memset(&sc, 0, sizeof(sc));
    sc.name = a->shm;
    sc.group = a->group;
    sc.worker_timeout_ms = a->worker_timeout;
    sc.vocab = info->vocab;
    sc.context = info->context;
    sc.eos = tok ? fg_tokenizer_eos(tok) : -1;
    sc.bos = tok ? fg_tokenizer_bos(tok) : -1;
    sc.block_size = fg_kv_block_size(kv);
    sc.kv_blocks = fg_kv_n_blocks(kv);
    sc.max_batch = a->max_batch;
    sc.max_seqs = a->max_seqs;
    sc.step_tokens = a->step_tokens;
    sc.model = a->model ? a->model : "sim";
    sc.backend = ops->name;

    shm = fg_shm_engine_create(&sc, err, sizeof(err));

    if (shm == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        return 1;
    }

    memset(&bc, 0, sizeof(bc));
    bc.max_batch = a->max_batch;
    bc.max_tokens = a->step_tokens;
    bc.max_seqs = a->max_seqs;
    bc.eog = eog;
    bc.n_eog = tok ? fg_main_eog(tok, eog, FG_MAIN_MAX_EOG) : 0;
    bc.emit = fg_engine_serve_emit;
    bc.ctx = shm;

    batch = fg_batch_create(&bc, ops, backend, kv, err, sizeof(err));

    if (batch == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        fg_shm_engine_destroy(shm);
        return 1;
    }

    fprintf(stderr, "fairgate-engine: serving %s on the %s backend at shm "
            "%s: vocabulary %u, context %u, %u KV blocks of %u, batch %u, "
            "%u tokens per step\n", a->model ? a->model : "(no model)",
            ops->name, a->shm, info->vocab, info->context,
            fg_kv_n_blocks(kv), fg_kv_block_size(kv), a->max_batch,
            a->step_tokens);

    fg_engine_serve(shm, batch, &fg_main_stop);

    fg_batch_destroy(batch);
    fg_shm_engine_destroy(shm);

    fprintf(stderr, "fairgate-engine: stopped; shm %s removed\n", a->shm);

    return 0;
}


int
main(int argc, char **argv)
{
    int                      rc;
    char                     err[512];
    fg_kv_t                 *kv;
    fg_gguf_t               *g;
    fg_backend_t            *backend;
    fg_main_args_t           a;
    fg_tokenizer_t          *tok;
    struct sigaction         sa;
    fg_backend_conf_t        conf;
    fg_backend_info_t        info;
    const fg_backend_ops_t  *ops;

    if (fg_main_parse(argc, argv, &a) != 0) {
        return 2;
    }

    ops = fg_backend_load(a.backend, err, sizeof(err));

    if (ops == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        return 1;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fg_main_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    tok = NULL;
    g = NULL;

    if (a.model) {
        g = fg_gguf_open(a.model, err, sizeof(err));

        if (g == NULL) {
            fprintf(stderr, "fairgate-engine: %s\n", err);
            return 1;
        }

        tok = fg_tokenizer_load(g, err, sizeof(err));
        fg_gguf_close(g);

        if (tok == NULL) {
            fprintf(stderr, "fairgate-engine: %s: %s\n", a.model, err);
            return 1;
        }
    }

    memset(&conf, 0, sizeof(conf));
    conf.model_path = a.model;
    conf.kv_blocks = a.kv_blocks;

    /* the cuda backend sizes its cache from free memory unless told */
    if (strcmp(a.backend, "cuda") == 0 && !a.kv_blocks_set) {
        conf.kv_blocks = 0;
    }
    conf.block_size = FG_KV_BLOCK_SIZE;
    conf.max_batch = a.max_batch;
    conf.max_tokens = a.step_tokens;
    conf.threads = a.threads;
    conf.step_model = a.step_model;
    conf.speedup = a.speedup;
    conf.vocab = a.vocab;

    backend = ops->create(&conf, err, sizeof(err));

    if (backend == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        fg_tokenizer_free(tok);
        return 1;
    }

    memset(&info, 0, sizeof(info));
    ops->info(backend, &info);

    if (info.kv_blocks) {
        a.kv_blocks = info.kv_blocks;
    }

    if (tok && fg_tokenizer_n_vocab(tok) > info.vocab) {
        fprintf(stderr, "fairgate-engine: the tokenizer has %u tokens, the "
                "model's output %u\n", fg_tokenizer_n_vocab(tok), info.vocab);
        ops->destroy(backend);
        fg_tokenizer_free(tok);
        return 1;
    }

    kv = fg_kv_create(a.kv_blocks, FG_KV_BLOCK_SIZE, err, sizeof(err));

    if (kv == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        ops->destroy(backend);
        fg_tokenizer_free(tok);
        return 1;
    }

    if (a.prompt) {
        rc = fg_main_oneshot(&a, ops, backend, kv, tok);

    } else {
        rc = fg_main_serve(&a, ops, backend, kv, tok, &info);
    }

    fg_kv_destroy(kv);
    ops->destroy(backend);
    fg_tokenizer_free(tok);

    return rc;
}
