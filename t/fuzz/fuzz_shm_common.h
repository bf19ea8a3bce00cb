
/*
 * fairgate: what the two shared-memory fuzz targets share: an engine's
 * segment created in the fuzzing process itself, small, under a name of
 * its own (unlinked at exit).
 */

#ifndef FUZZ_SHM_COMMON_H
#define FUZZ_SHM_COMMON_H


#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fg_shm_engine.h"


#define FUZZ_SHM_WORKERS   4
#define FUZZ_SHM_SLOTS     8
#define FUZZ_SHM_CONTEXT   1024


static fg_shm_engine_t  *fuzz_shm_e;
static char              fuzz_shm_name[64];


static void
fuzz_shm_destroy(void)
{
    fg_shm_engine_destroy(fuzz_shm_e);
}


static fg_shm_engine_t *
fuzz_shm_engine(void)
{
    char                  err[256];
    fg_shm_engine_conf_t  conf = { 0 };

    if (fuzz_shm_e != NULL) {
        return fuzz_shm_e;
    }

    snprintf(fuzz_shm_name, sizeof(fuzz_shm_name), "/fg-fuzz-%d",
             (int) getpid());

    conf.name = fuzz_shm_name;
    conf.max_workers = FUZZ_SHM_WORKERS;
    conf.sub_slots = FUZZ_SHM_SLOTS;
    conf.cancel_slots = FUZZ_SHM_SLOTS;
    conf.comp_slots = FUZZ_SHM_SLOTS;
    conf.shape.vocab = 512;
    conf.shape.context = FUZZ_SHM_CONTEXT;
    conf.shape.eos = 2;
    conf.shape.bos = 1;
    conf.shape.block_size = 16;
    conf.shape.kv_blocks = 64;
    conf.shape.max_batch = 4;
    conf.shape.max_seqs = 8;
    conf.shape.step_tokens = 256;
    conf.model = "fuzz";
    conf.backend = "cpu";

    fuzz_shm_e = fg_shm_engine_create(&conf, err, sizeof(err));

    if (fuzz_shm_e == NULL) {
        fprintf(stderr, "fuzz_shm: %s\n", err);
        abort();
    }

    atexit(fuzz_shm_destroy);

    return fuzz_shm_e;
}


#endif /* FUZZ_SHM_COMMON_H */
