
/*
 * fairgate: the prefix cache on the cuda backend, over the CPU emulation
 * of CUDA (make test): the batcher hands the backend only a prompt's
 * uncached tokens at pos = cached, with a block table whose first blocks
 * were written by other sequences in other steps (prefill passes, decode
 * graphs), and the greedy output is token for token what the cache off
 * gives: prompts sharing no block, some, all but the last token, the same
 * prompt, a chat's next turn, and requests sharing a prefix in a pool too
 * small for them (t/unit/batch/fg_test_prefix.h's suite, as the sim and
 * cpu backends run it).  On a generated model only: stories260K adds 10 s
 * of emulation and nothing the cpu backend's run of it does not show.
 */


#include <stdio.h>

#include "fg_test_file.h"
#include "fg_test_prefix.h"
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
    fg_test_dir_make("cuda_prefix");

    /* GQA, q8_0: the cache in fp16, products through the GEMV paths */
    snprintf(path, sizeof(path), "%s/prefix-q8_0.gguf", dir);

    if (px_model(FG_GGML_Q8_0, 17, path) == 0) {
        conf = px_conf(path);
        px_suite("cuda emulated, generated q8_0", &fg_backend_cuda, &conf,
                 300);
    }

    fg_test_dir_remove();

    return fg_tap_done();
}
