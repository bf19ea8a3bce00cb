
/*
 * fairgate: swap preemption on the cuda backend over the CPU emulation
 * of CUDA (make test): its kv_save and kv_load (a 2D copy a block, fp16
 * halves) in t/unit/batch/fg_test_swap.h's suite, as the cpu backend
 * runs it: a request swapped out mid-answer and loaded into other blocks
 * gives its tokens alone, with no prefill at its resume.
 */


#include "fg_test_emu.h"
#include "fg_test_swap.h"


int
main(void)
{
    return fg_test_emu_run("cuda_swap", "swap-q8_0.gguf", 19, sw_suite);
}
