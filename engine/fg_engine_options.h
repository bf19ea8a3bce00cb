
/*
 * fairgate: fairgate-engine's command line: what it sets and how it is
 * read.  fg_engine_main.c starts the engine from it.
 */

#ifndef _FG_ENGINE_OPTIONS_H_INCLUDED_
#define _FG_ENGINE_OPTIONS_H_INCLUDED_


#include <stdint.h>

#include "fg_sample.h"


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
