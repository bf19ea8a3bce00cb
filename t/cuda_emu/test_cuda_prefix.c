
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


#include "fg_test_emu.h"


int
main(void)
{
    return fg_test_emu_run("cuda_prefix", "prefix-q8_0.gguf", 17, px_suite);
}
