
/*
 * fairgate: swap preemption on the cpu backend, a generated model (GQA,
 * f32): fg_test_swap.h's suite (a request swapped out mid-answer and in
 * gives its tokens alone with no prefill at its resume; a pool for one
 * swaps the younger of two; swap_bytes and a backend without kv_save
 * fall back to recompute), over the default cache of halves and over one
 * of floats (a block's swapped bytes twice as many).
 */


#include "fg_test_file.h"
#include "fg_test_swap.h"
#include "fg_ggml_types.h"


int
main(void)
{
    char               path[512];
    fg_backend_conf_t  conf;

    fg_test_dir_make("swap");
    snprintf(path, sizeof(path), "%s/swap-f32.gguf", dir);

    if (px_model(FG_GGML_F32, 18, path) == 0) {
        conf = px_conf(path);
        conf.threads = 1;
        sw_suite("cpu, generated f32", &fg_backend_cpu, &conf, 300);

        conf.kv_type = FG_BACKEND_KV_F32;
        sw_suite("cpu, generated f32, F32 cache", &fg_backend_cpu, &conf,
                 300);
    }

    fg_test_dir_remove();

    return fg_tap_done();
}
