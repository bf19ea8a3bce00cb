
/*
 * fairgate: what every backend refuses of a batch, and of a model too
 * large for the memory, in one place: the cpu and cuda backends (the
 * latter a shared object of its own, which links this file alone) give
 * the same errors for the same mistakes.
 */


#include <stdio.h>
#include <string.h>

#include "fg_backend.h"


int
fg_backend_check_seq(const fg_backend_seq_t *sq, size_t s,
    uint32_t block_size, const float *hidden, char *err, size_t errlen)
{
    uint64_t  end;

    end = (uint64_t) sq->pos + sq->n_tokens;

    if (sq->n_tokens == 0 && sq->want_logits) {
        snprintf(err, errlen, "sequence %zu wants logits but has no "
                 "new tokens", s);
        return -1;
    }

    if (sq->want_hidden && (sq->n_tokens == 0 || hidden == NULL)) {
        snprintf(err, errlen, "sequence %zu wants hidden states but has %s",
                 s, hidden == NULL ? "no room for them" : "no new tokens");
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


/* the first number of a file such as memory.max or a meminfo line's: 0 when
 * it has none ("max") */
static uint64_t
fg_backend_read_num(const char *path, const char *key)
{
    char                 line[256];
    FILE                *f;
    size_t               klen;
    unsigned long long   v;

    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }

    v = 0;
    klen = key ? strlen(key) : 0;

    while (fgets(line, sizeof(line), f) != NULL) {
        if (key != NULL && strncmp(line, key, klen) != 0) {
            continue;
        }

        if (sscanf(line + klen, " %llu", &v) != 1) {
            v = 0;
        }

        break;
    }

    fclose(f);

    return v;
}


uint64_t
fg_backend_mem_limit(const char **where)
{
    uint64_t  total, cgroup;

    /* MemTotal is in kB; the cgroup (v2) limit in bytes, "max" if none */
    total = fg_backend_read_num("/proc/meminfo", "MemTotal:") * 1024;
    cgroup = fg_backend_read_num("/sys/fs/cgroup/memory.max", NULL);

    if (cgroup != 0 && (total == 0 || cgroup < total)) {
        *where = "the cgroup's memory.max";
        return cgroup;
    }

    *where = "the machine's memory";

    return total;
}


/* a size for a message: "1.50 GiB", "12.3 MiB" */
static void
fg_backend_size_str(char *buf, size_t len, uint64_t bytes)
{
    if (bytes >= (1ULL << 30)) {
        snprintf(buf, len, "%.2f GiB", (double) bytes / (1ULL << 30));

    } else {
        snprintf(buf, len, "%.1f MiB", (double) bytes / (1ULL << 20));
    }
}


int
fg_backend_check_memory(const char *path, uint64_t weights, uint64_t kv,
    uint64_t limit, const char *where, char *err, size_t errlen)
{
    char  w[32], k[32], l[32];

    if (limit == 0 || weights + kv <= limit) {
        return 0;
    }

    fg_backend_size_str(w, sizeof(w), weights);
    fg_backend_size_str(k, sizeof(k), kv);
    fg_backend_size_str(l, sizeof(l), limit);

    snprintf(err, errlen, "%s: its weights (%s) and its KV cache (%s) are "
             "more than %s (%s): give it fewer --kv-blocks or use a "
             "smaller file (a lower-bit quantization)", path, w, k, where,
             l);

    return -1;
}
