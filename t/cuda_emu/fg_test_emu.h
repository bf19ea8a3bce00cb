
/*
 * fairgate: a suite of the batcher's (t/unit/batch/fg_test_prefix.h's
 * px_suite, fg_test_swap.h's sw_suite) over the cuda backend on the CPU
 * emulation of CUDA, on a generated q8_0 model with GQA: the cache in
 * fp16, the products through the GEMV paths.
 */

#ifndef _FG_TEST_EMU_H_INCLUDED_
#define _FG_TEST_EMU_H_INCLUDED_


#include <stdio.h>

#include "fg_test_file.h"
#include "fg_test_prefix.h"
#include "fg_ggml_types.h"
#include "fg_kernels.h"


typedef void (*fg_test_suite_pt)(const char *be, const fg_backend_ops_t *ops,
    const fg_backend_conf_t *conf, uint32_t vocab);


/* the whole of a test: name its directory, file the model's name in it */
static inline int
fg_test_emu_run(const char *name, const char *file, uint64_t seed,
    fg_test_suite_pt suite)
{
    char               path[512];
    fg_backend_conf_t  conf;

    /* the backend's one line at create, at every rig */
    if (freopen("/dev/null", "w", stderr) == NULL) {
        diag("stderr stays");
    }

    fg_k_init();
    fg_test_dir_make(name);
    snprintf(path, sizeof(path), "%s/%s", dir, file);

    if (px_model(FG_GGML_Q8_0, seed, path) == 0) {
        conf = px_conf(path);
        suite("cuda emulated, generated q8_0", &fg_backend_cuda, &conf, 300);
    }

    fg_test_dir_remove();

    return fg_tap_done();
}


#endif /* _FG_TEST_EMU_H_INCLUDED_ */
