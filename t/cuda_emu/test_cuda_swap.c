
/*
 * fairgate: swap preemption on the cuda backend over the CPU emulation
 * of CUDA (make test): its kv_save and kv_load (a 2D copy a block, fp16
 * halves) in t/unit/batch/fg_test_swap.h's suite, as the cpu backend
 * runs it: a request swapped out mid-answer and loaded into other blocks
 * gives its tokens alone, with no prefill at its resume.
 */


#include <stdio.h>

#include "fg_test_file.h"
#include "fg_test_swap.h"
#include "fg_ggml_types.h"
#include "fg_kernels.h"


int
main(void)
{
    char               path[512];
    fg_backend_conf_t  conf;

    /* the backend's one line at create, at every rig */
    if (freopen("/dev/null", "w", stderr) == NULL) {
        diag("stderr stays");
    }

    fg_k_init();
    fg_test_dir_make("cuda_swap");
    snprintf(path, sizeof(path), "%s/swap-q8_0.gguf", dir);

    if (px_model(FG_GGML_Q8_0, 19, path) == 0) {
        conf = px_conf(path);
        sw_suite("cuda emulated, generated q8_0", &fg_backend_cuda, &conf,
                 300);
    }

    fg_test_dir_remove();

    return fg_tap_done();
}
