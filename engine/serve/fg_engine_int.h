
/*
 * fairgate: fairgate-engine's command, inside engine/serve: its command
 * line (what it sets and how fg_engine_options.c reads it), the start-up
 * that one model's path (fg_engine_main.c) and several models' path
 * (fg_engine_main_mux.c) share (fg_engine_start.c), and the latter's
 * entry.
 */

#ifndef _FG_ENGINE_INT_H_INCLUDED_
#define _FG_ENGINE_INT_H_INCLUDED_


#include <signal.h>
#include <stdint.h>

#include "fg_backend.h"
#include "fg_batch.h"
#include "fg_kv.h"
#include "fg_shm_engine.h"
#include "fg_tokenizer.h"


/* several models in one engine: --model and --shm in pairs */
#define FG_MAIN_MAX_MODELS  8


typedef struct {
    const char         *model;
    const char         *backend;
    const char         *shm;
    const char         *group;
    const char         *step_model;
    const char         *prompt;
    uint32_t            kv_blocks;
    uint32_t            kv_mib;         /* cpu, kv_blocks not set: the
                                           cache's MiB; 0: kv_blocks */
    uint32_t            max_batch;
    uint32_t            step_tokens;
    uint32_t            max_seqs;
    uint32_t            sub_slots;      /* submission ring; 0: default */
    uint32_t            threads;
    uint32_t            vocab;
    uint32_t            worker_timeout;
    uint32_t            n;
    uint32_t            prefix_cache;   /* 1: on (default) */
    uint32_t            kv_window;      /* 1: on (default) */
    uint32_t            sched;          /* FG_SCHED_FCFS (default), ANDES */
    uint32_t            preempt;        /* FG_PREEMPT_RECOMPUTE (default),
                                           SWAP */
    uint32_t            swap_mib;       /* swap: host memory, MiB */
    uint32_t            kv_type;        /* fg_backend_kv_type_e: F16 */
    double              qoe_ttft;       /* s, for requests with none */
    double              qoe_speed;      /* tokens/s, for requests with none */
    double              speedup;
    fg_sample_params_t  sp;

    /* several models (fg_engine_mux.h): models[0] and shms[0] are also
     * model and shm; rates[i] 1 unless --model-rate says; step_models[]
     * one for all (step_model) or one a model */
    const char         *models[FG_MAIN_MAX_MODELS];
    const char         *shms[FG_MAIN_MAX_MODELS];
    double              rates[FG_MAIN_MAX_MODELS];
    const char         *step_models[FG_MAIN_MAX_MODELS];   /* sim */
    uint32_t            n_models;
    uint32_t            n_shms;
    uint32_t            n_rates;
    uint32_t            n_step_models;
    uint32_t            mux;            /* fg_mux_mode_e */
    uint32_t            kv_head_blocks; /* the shared pool; 0: kv_blocks
                                           of the largest model */

    unsigned            mux_set:1;      /* --mux given */
    unsigned            seeded:1;
    unsigned            ignore_eos:1;
    unsigned            kv_blocks_set:1;
} fg_main_args_t;


/*
 * The options, defaults first: 0, or -1 with a sentence on stderr that
 * names the bad argument.  --help prints the usage and exits.
 */
int fg_main_parse(int argc, char **argv, fg_main_args_t *a);


/* the start-up both paths share (fg_engine_start.c) */

#define FG_MAIN_MAX_EOG     64


/* the end-of-generation ids of a tokenizer */
uint32_t fg_main_eog(const fg_tokenizer_t *tok, int32_t *eog, uint32_t max);

/* the model file's tokenizer: NULL with the reason on stderr */
fg_tokenizer_t *fg_main_tokenizer(const char *model);

/*
 * the backend of a->model, a->kv_blocks blocks, in arena's head blocks
 * that map says (several models on the cpu backend) or, arena NULL, a
 * cache of its own; NULL, reason on stderr
 */
fg_backend_t *fg_main_backend(fg_main_args_t *a, const fg_backend_ops_t *ops,
    const fg_tokenizer_t *tok, fg_kv_arena_t *arena, const uint32_t *map,
    fg_backend_info_t *info);

/*
 * The KV cache's size on stderr, once the batcher set the pool up: its
 * bytes, positions and bytes a position, and what sliding-window layers
 * keep (engine/kv/fg_kv.h)
 */
void fg_main_kv_report(const fg_backend_info_t *info, const fg_kv_t *kv);

/* the segment's conf for a model (its name left to the caller) */
void fg_main_shm_conf(const fg_main_args_t *a, const fg_backend_ops_t *ops,
    fg_kv_t *kv, const fg_tokenizer_t *tok, const fg_backend_info_t *info,
    fg_shm_engine_conf_t *sc);

/* the batcher's conf for serving a segment; eog: FG_MAIN_MAX_EOG room */
void fg_main_batch_conf(const fg_main_args_t *a, const fg_tokenizer_t *tok,
    int32_t *eog, fg_shm_engine_t *shm, fg_batch_conf_t *bc);

/*
 * Several models (--model and --shm in pairs, --mux): each model's
 * tokenizer, backend, KV pool, segment and batcher, then
 * fg_engine_mux_serve() until *stop.  The exit status.
 */
int fg_main_mux(fg_main_args_t *a, const fg_backend_ops_t *ops,
    volatile sig_atomic_t *stop);


#endif /* _FG_ENGINE_INT_H_INCLUDED_ */
