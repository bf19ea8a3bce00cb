
/*
 * fairgate: what every backend refuses of a batch, in one place: the cpu
 * and cuda backends (the latter a shared object of its own, which links
 * this file alone) give the same errors for the same mistakes.
 */


#include <stdio.h>

#include "fg_backend.h"


int
fg_backend_check_seq(const fg_backend_seq_t *sq, size_t s,
    uint32_t block_size, char *err, size_t errlen)
{
    uint64_t  end;

    end = (uint64_t) sq->pos + sq->n_tokens;

    if (sq->n_tokens == 0 && sq->want_logits) {
        snprintf(err, errlen, "sequence %zu wants logits but has no "
                 "new tokens", s);
        return -1;
    }

    if (sq->n_tokens && (sq->tokens == NULL || sq->block_table == NULL)) {
        snprintf(err, errlen, "sequence %zu has no %s", s,
                 sq->tokens == NULL ? "tokens" : "block table");
        return -1;
    }

    if (end > (uint64_t) sq->n_blocks * block_size) {
        snprintf(err, errlen, "sequence %zu: positions up to %llu need "
                 "%llu blocks of %u, its table has %u", s,
                 (unsigned long long) end,
                 (unsigned long long) ((end + block_size - 1) / block_size),
                 block_size, sq->n_blocks);
        return -1;
    }

    return 0;
}
