
/*
 * fairgate: the cpu backend's cache mapped into a pool of head blocks
 * several models share (fg_backend_conf_t kv_arena, kv_map), against
 * the same model with a cache of its own: a generated GQA model (3
 * layers, 2 KV heads of 12) whose head blocks sit at shuffled places of
 * an arena of a larger head size.  The same prompt gives the same logits
 * both ways; kv_save gives the same bytes both ways (the swap format
 * does not depend on the layout); what one saved, loaded into other
 * blocks of the mapped cache, decodes on as the own cache does.  A head
 * block too small for the model's heads is refused at create.
 */


#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_test_backend.h"
#include "fg_test_file.h"
#include "fg_test_gguf.h"
#include "fg_backend.h"
#include "fg_gguf_gen.h"
#include "fg_rand.h"


#define BLOCKS      8
#define UNIT        (2 * 3 * 2)         /* 2 x layers x KV heads */
#define HEADS       (BLOCKS * UNIT + 5) /* the arena, a few to spare */
#define STRIDE      (16 * 16 * 2)       /* bytes: head blocks of a head of
                                           16 in halves, the default */
#define VOCAB       512
#define PROMPT      32                  /* two full blocks */


static fg_rand_t  rng = { 0x5eedf00d12345678ULL };


static fg_backend_t *
create(const char *path, void *arena, size_t stride, const uint32_t *map,
    char *err, size_t errlen)
{
    fg_backend_conf_t  conf;

    fg_test_backend_conf(&conf, path, BLOCKS, 16, 1, 64, 1);
    conf.kv_arena = arena;
    conf.kv_head_bytes = stride;
    conf.kv_map = map;

    return fg_backend_cpu.create(&conf, err, errlen);
}


/* n tokens from pos in the blocks of table; the last one's logits */
static int
forward(fg_backend_t *b, const int32_t *tokens, uint32_t n, uint32_t pos,
    const int32_t *table, float *logits)
{
    char                err[256];
    fg_backend_seq_t    sq;
    fg_backend_batch_t  batch;

    fg_test_backend_one(&batch, &sq, tokens, n, pos, table, 3);

    if (fg_backend_cpu.forward(b, &batch, logits, err, sizeof(err)) != 0) {
        diag("forward: %s", err);
        return -1;
    }

    return 0;
}


static float
diff(const float *a, const float *b, size_t n)
{
    size_t  i;
    float   d;

    d = 0.0f;

    for (i = 0; i < n; i++) {
        d = fmaxf(d, fabsf(a[i] - b[i]));
    }

    return d;
}


static void
test_mapped(const char *path, void *arena, const uint32_t *map)
{
    char           err[256];
    int32_t        prompt[PROMPT], next;
    float          la[VOCAB], lb[VOCAB], *sa, *sb;
    size_t         bytes;
    uint32_t       i;
    fg_backend_t  *own, *mapped;

    static const int32_t  at[3] = { 0, 1, 2 }, moved[3] = { 6, 3, 5 };

    fg_backend_info_t     info;

    own = create(path, NULL, 0, NULL, err, sizeof(err));
    mapped = create(path, arena, STRIDE, map, err, sizeof(err));

    if (!ok(own && mapped, "both caches created: %s", own && mapped ? "ok"
                                                                     : err))
    {
        return;
    }

    fg_backend_cpu.info(own, &info);
    bytes = 2 * info.kv_bytes_per_block;
    sa = malloc(bytes);
    sb = malloc(bytes);

    for (i = 0; i < PROMPT; i++) {
        prompt[i] = (int32_t) fg_rand_range(&rng, 1, VOCAB - 1);
    }

    ok(forward(own, prompt, PROMPT, 0, at, la) == 0
       && forward(mapped, prompt, PROMPT, 0, at, lb) == 0
       && diff(la, lb, VOCAB) == 0.0f,
       "a prompt of %u: the same logits from the mapped cache", PROMPT);

    ok(fg_backend_cpu.kv_save(own, at, 2, sa, err, sizeof(err)) == 0
       && fg_backend_cpu.kv_save(mapped, at, 2, sb, err, sizeof(err)) == 0
       && memcmp(sa, sb, bytes) == 0,
       "kv_save: the same %zu bytes either way", bytes);

    next = 7;

    ok(fg_backend_cpu.kv_load(mapped, moved, 2, sa, err, sizeof(err)) == 0
       && forward(own, &next, 1, PROMPT, at, la) == 0
       && forward(mapped, &next, 1, PROMPT, moved, lb) == 0
       && diff(la, lb, VOCAB) == 0.0f,
       "the own cache's save loaded into blocks 6 and 3 of the mapped one "
       "decodes on (into block 5) as the own does");

    free(sa);
    free(sb);
    fg_backend_cpu.destroy(own);
    fg_backend_cpu.destroy(mapped);
}


int
main(void)
{
    char                err[256], path[512];
    void               *arena;
    uint32_t           *map, i, j, t;
    fg_backend_t       *b;
    fg_gguf_gen_conf_t  c;

    fg_test_dir_make("backend_cpu_map");
    snprintf(path, sizeof(path), "%s/gqa.gguf", dir);

    fg_test_gguf_shape(&c, FG_GGML_F32, 48, 3, 96, 4, 2);
    c.n_vocab = VOCAB;
    c.seed = 3;

    if (fg_gguf_gen_file(&c, path, err, sizeof(err)) != 0) {
        ok(0, "a GQA model generated: %s", err);
        return done_testing();
    }

    /* every head block at a shuffled place, NaN until written (all ones:
     * a NaN in halves and in floats) */
    arena = malloc((size_t) HEADS * STRIDE);
    map = malloc((size_t) HEADS * sizeof(uint32_t));
    memset(arena, 0xff, (size_t) HEADS * STRIDE);

    for (i = 0; i < HEADS; i++) {
        map[i] = i;
    }

    for (i = HEADS - 1; i > 0; i--) {
        j = (uint32_t) fg_rand_range(&rng, 0, i);
        t = map[i];
        map[i] = map[j];
        map[j] = t;
    }

    test_mapped(path, arena, map);

    b = create(path, arena, 16 * 8 * 2, map, err, sizeof(err));
    ok(b == NULL && strstr(err, "head blocks of 256 bytes") != NULL,
       "head blocks too small for heads of 12 are refused: %s", err);

    free(arena);
    free(map);
    fg_test_dir_remove();

    return done_testing();
}
