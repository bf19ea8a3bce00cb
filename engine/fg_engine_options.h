
/*
 * fairgate: fairgate-engine's command line: what it sets and how it is
 * read.  fg_engine_main.c starts the engine from it.
 */

#ifndef _FG_ENGINE_OPTIONS_H_INCLUDED_
#define _FG_ENGINE_OPTIONS_H_INCLUDED_


#include <stdint.h>

#include "fg_sample.h"


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
    uint32_t            max_batch;
    uint32_t            step_tokens;
    uint32_t            max_seqs;
    uint32_t            threads;
    uint32_t            vocab;
    uint32_t            worker_timeout;
    uint32_t            n;
    uint32_t            prefix_cache;   /* 1: on (default) */
    uint32_t            sched;          /* FG_SCHED_FCFS (default), ANDES */
    uint32_t            preempt;        /* FG_PREEMPT_RECOMPUTE (default),
                                           SWAP */
    uint32_t            swap_mib;       /* swap: host memory, MiB */
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


#endif /* _FG_ENGINE_OPTIONS_H_INCLUDED_ */
