
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
 * The options are read by fg_engine_options.c; here the engine starts:
 * the model's tokenizer, the backend (fg_engine_start.c), the KV pool,
 * then one of the two modes.  Bad arguments exit with status 2 and a
 * sentence naming the argument; a failure to start exits with 1.
 */


#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fg_engine_int.h"
#include "fg_engine_serve.h"


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
    bc.prefix_cache = a->prefix_cache ? 1 : 0;
    bc.eog = eog;
    bc.n_eog = fg_main_eog(tok, eog, FG_MAIN_MAX_EOG);
    bc.emit = fg_main_print;
    bc.ctx = &pr;

    batch = fg_batch_create(&bc, ops, backend, kv, err, sizeof(err));

    if (batch == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        return 1;
    }

    fg_main_kv_report(fg_batch_info(batch), kv);

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


/* what the prefix cache did, at the end of serving */
static void
fg_main_cache_stats(fg_batch_t *batch)
{
    fg_batch_stats_t  st;

    fg_batch_stats(batch, &st);

    fprintf(stderr, "fairgate-engine: prefix cache: %llu of %llu prompt "
            "tokens reused (%.1f%%), %llu blocks held, %llu evictions\n",
            (unsigned long long) st.cache_hit_tokens,
            (unsigned long long) st.cache_query_tokens,
            st.cache_query_tokens
            ? 100.0 * st.cache_hit_tokens / st.cache_query_tokens : 0.0,
            (unsigned long long) st.cache_blocks,
            (unsigned long long) st.cache_evictions);
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

    fg_main_shm_conf(a, ops, kv, tok, info, &sc);
    sc.name = a->shm;

    shm = fg_shm_engine_create(&sc, err, sizeof(err));

    if (shm == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        return 1;
    }

    fg_main_batch_conf(a, tok, eog, shm, &bc);

    batch = fg_batch_create(&bc, ops, backend, kv, err, sizeof(err));

    if (batch == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        fg_shm_engine_destroy(shm);
        return 1;
    }

    if (a->preempt == FG_PREEMPT_SWAP
        && (ops->kv_save == NULL || ops->kv_load == NULL))
    {
        fprintf(stderr, "fairgate-engine: the %s backend cannot swap KV "
                "to host memory: --preempt swap recomputes\n", ops->name);
    }

    /* the segment's index follows what the prefix cache holds */
    fg_kv_set_index(kv, fg_shm_engine_index, shm);

    fprintf(stderr, "fairgate-engine: serving %s on the %s backend%s%s at "
            "shm %s: vocabulary %u, context %u, %u KV blocks of %u, batch %u, "
            "%u tokens per step, prefix cache %s, scheduler %s, preemption "
            "%s\n",
            a->model ? a->model : "(no model)", ops->name,
            info->kernels ? ", kernels " : "",
            info->kernels ? info->kernels : "", a->shm,
            info->vocab, info->context, fg_kv_n_blocks(kv),
            fg_kv_block_size(kv), a->max_batch, a->step_tokens,
            a->prefix_cache ? "on" : "off",
            a->sched == FG_SCHED_ANDES ? "andes" : "fcfs",
            a->preempt == FG_PREEMPT_SWAP ? "swap" : "recompute");

    fg_main_kv_report(info, kv);
    fg_engine_serve(shm, batch, &fg_main_stop);

    if (a->prefix_cache) {
        fg_main_cache_stats(batch);
    }

    fg_batch_destroy(batch);
    fg_kv_set_index(kv, NULL, NULL);
    fg_shm_engine_destroy(shm);

    fprintf(stderr, "fairgate-engine: stopped; shm %s removed\n", a->shm);

    return 0;
}


static void
fg_main_signals(void)
{
    struct sigaction  sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fg_main_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}


int
main(int argc, char **argv)
{
    int                      rc;
    char                     err[512];
    fg_kv_t                 *kv;
    fg_backend_t            *backend;
    fg_main_args_t           a;
    fg_tokenizer_t          *tok;
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

    fg_main_signals();

    if (a.n_models > 1 || a.mux_set) {
        return fg_main_mux(&a, ops, &fg_main_stop);
    }

    tok = NULL;

    if (a.model) {
        tok = fg_main_tokenizer(a.model);

        if (tok == NULL) {
            return 1;
        }
    }

    backend = fg_main_backend(&a, ops, tok, NULL, NULL, &info);

    if (backend == NULL) {
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
