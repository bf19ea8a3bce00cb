
/*
 * fairgate: fairgate-engine's start-up that one model's path
 * (fg_engine_main.c) and several models' (fg_engine_main_mux.c) share:
 * the tokenizer, the backend, and the segment's and the batcher's confs
 * from the options.
 */


#include <stdio.h>
#include <string.h>

#include "fg_engine_int.h"
#include "fg_engine_serve.h"
#include "fg_gguf.h"


/* the end-of-generation ids of a tokenizer */
uint32_t
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


/* the segment's conf for a model (name left to the caller) */
void
fg_main_shm_conf(const fg_main_args_t *a, const fg_backend_ops_t *ops,
    fg_kv_t *kv, const fg_tokenizer_t *tok, const fg_backend_info_t *info,
    fg_shm_engine_conf_t *sc)
{
    memset(sc, 0, sizeof(fg_shm_engine_conf_t));
    sc->group = a->group;
    sc->worker_timeout_ms = a->worker_timeout;
    sc->sub_slots = a->sub_slots;
    sc->shape.vocab = info->vocab;
    sc->shape.context = info->context;
    sc->shape.eos = tok ? fg_tokenizer_eos(tok) : -1;
    sc->shape.bos = tok ? fg_tokenizer_bos(tok) : -1;
    sc->shape.block_size = fg_kv_block_size(kv);
    sc->shape.kv_blocks = fg_kv_n_blocks(kv);
    sc->shape.max_batch = a->max_batch;
    sc->shape.max_seqs = a->max_seqs;
    sc->shape.step_tokens = a->step_tokens;
    sc->embd = info->n_embd;
    sc->model = a->model ? a->model : "sim";
    sc->backend = ops->name;
}


/* the batcher's conf for serving a segment; eog: FG_MAIN_MAX_EOG room */
void
fg_main_batch_conf(const fg_main_args_t *a, const fg_tokenizer_t *tok,
    int32_t *eog, fg_shm_engine_t *shm, fg_batch_conf_t *bc)
{
    memset(bc, 0, sizeof(fg_batch_conf_t));
    bc->max_batch = a->max_batch;
    bc->max_tokens = a->step_tokens;
    bc->max_seqs = a->max_seqs;
    bc->prefix_cache = a->prefix_cache ? 1 : 0;
    bc->sched = a->sched;
    bc->qoe_ttft = a->qoe_ttft;
    bc->qoe_speed = a->qoe_speed;
    bc->preempt = a->preempt;
    bc->swap_bytes = (uint64_t) a->swap_mib << 20;
    bc->eog = eog;
    bc->n_eog = tok ? fg_main_eog(tok, eog, FG_MAIN_MAX_EOG) : 0;
    bc->tokenizer = tok;
    bc->emit = fg_engine_serve_emit;
    bc->ctx = shm;
}


/* the model file's tokenizer: NULL with the reason on stderr */
fg_tokenizer_t *
fg_main_tokenizer(const char *model)
{
    char             err[512];
    fg_gguf_t       *g;
    fg_tokenizer_t  *tok;

    g = fg_gguf_open(model, err, sizeof(err));

    if (g == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        return NULL;
    }

    tok = fg_tokenizer_load(g, err, sizeof(err));
    fg_gguf_close(g);

    if (tok == NULL) {
        fprintf(stderr, "fairgate-engine: %s: %s\n", model, err);
        return NULL;
    }

    return tok;
}


/*
 * The backend, made from the options and checked against the tokenizer;
 * what it says of itself in info.  NULL with the reason on stderr.
 */
fg_backend_t *
fg_main_backend(fg_main_args_t *a, const fg_backend_ops_t *ops,
    const fg_tokenizer_t *tok, fg_kv_arena_t *arena, const uint32_t *map,
    fg_backend_info_t *info)
{
    char               err[512];
    fg_backend_t      *backend;
    fg_backend_conf_t  conf;

    memset(&conf, 0, sizeof(conf));
    conf.model_path = a->model;
    conf.kv_blocks = a->kv_blocks;

    /* the cuda backend sizes its cache from free memory unless told */
    if (strcmp(a->backend, "cuda") == 0 && !a->kv_blocks_set) {
        conf.kv_blocks = 0;
    }

    /* the cpu backend's from a budget of memory, when given one */
    if (strcmp(a->backend, "cpu") == 0 && !a->kv_blocks_set && a->kv_mib
        && arena == NULL)
    {
        conf.kv_blocks = 0;
        conf.kv_bytes = (uint64_t) a->kv_mib << 20;
    }
    conf.block_size = FG_KV_BLOCK_SIZE;
    conf.max_batch = a->max_batch;
    conf.max_tokens = a->step_tokens;
    conf.threads = a->threads;
    conf.step_model = a->step_model;
    conf.speedup = a->speedup;
    conf.vocab = a->vocab;
    conf.kv_type = (fg_backend_kv_type_e) a->kv_type;
    conf.kv_window = a->kv_window;

    if (arena) {
        fg_kv_arena_conf(arena, map, &conf);
    }

    backend = ops->create(&conf, err, sizeof(err));

    if (backend == NULL) {
        fprintf(stderr, "fairgate-engine: %s\n", err);
        return NULL;
    }

    memset(info, 0, sizeof(fg_backend_info_t));
    ops->info(backend, info);

    if (info->kv_blocks) {
        a->kv_blocks = info->kv_blocks;
    }

    if (tok && fg_tokenizer_n_vocab(tok) > info->vocab) {
        fprintf(stderr, "fairgate-engine: the tokenizer has %u tokens, the "
                "model's output %u\n", fg_tokenizer_n_vocab(tok),
                info->vocab);
        ops->destroy(backend);
        return NULL;
    }

    return backend;
}


void
fg_main_kv_report(const fg_backend_info_t *info, const fg_kv_t *kv)
{
    uint64_t  positions, bytes, slots;

    positions = (uint64_t) fg_kv_n_blocks(kv) * fg_kv_block_size(kv);
    slots = fg_kv_window(kv) ? fg_kv_window_slots(kv) : 0;
    bytes = (uint64_t) (info->kv_bytes_per_block
                        - (slots ? info->kv_window_bytes : 0))
            * fg_kv_n_blocks(kv)
            + (uint64_t) info->kv_window_bytes * slots;

    if (bytes == 0) {
        return;
    }

    fprintf(stderr, "fairgate-engine: KV cache %.2f MiB for %llu positions "
            "(%llu bytes a position)", (double) bytes / 1048576.0,
            (unsigned long long) positions,
            (unsigned long long) (bytes / positions));

    if (slots) {
        fprintf(stderr, "; sliding layers keep a window of %u positions, "
                "in %llu slots of %u", fg_kv_window(kv),
                (unsigned long long) slots, fg_kv_block_size(kv));
    }

    fprintf(stderr, "\n");
}
