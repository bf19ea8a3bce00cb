
/*
 * fairgate: test_cuda's quantized models (make test-gpu; t/gpu/test_cuda.c
 * includes this after its own helpers, which the suite uses: gen_model,
 * test_compare, test_batched, cuda_ops, dir, rng, N_GEN, N_BLOCKS,
 * TOL_BATCH).
 */

#ifndef _FG_TEST_CUDA_QMODELS_H_INCLUDED_
#define _FG_TEST_CUDA_QMODELS_H_INCLUDED_


#include "fg_gguf_mix.h"
#include "fg_test_qfile.h"


/* a matrix of a type the engine does not run: one line, naming it */
static void
test_quant_refused(const char *base)
{
    char                err[512], path[512];
    fg_backend_t       *b;
    fg_backend_conf_t   conf;

    snprintf(path, sizeof(path), "%s/quant-q8_k.gguf", dir);

    if (fg_test_qfile(base, path, fg_test_pick_q8_k) != 0) {
        ok(0, "a Q8_K matrix written");
        return;
    }

    fg_test_backend_conf(&conf, path, N_BLOCKS, 16, 32, 0, 2);
    b = cuda_ops()->create(&conf, err, sizeof(err));

    ok(b == NULL && strstr(err, "blk.1.ffn_up.weight") != NULL
       && strstr(err, "q8_K") != NULL && strchr(err, '\n') == NULL,
       "a Q8_K matrix: refused in one line naming the tensor (%s)", err);

    if (b != NULL) {
        cuda_ops()->destroy(b);
    }

    unlink(path);
}


/*
 * Quantized models, mixed as llama.cpp's files are: Q4_K_M and Q5_K_M as
 * the generator writes them (llama.cpp's rules: Q4_K, Q6_K and F32
 * vectors; Q5_K and Q6_K), and one with every quantized type, a matrix
 * each (the embedding Q5_K, the output Q8_0), made from a generated F32
 * model; the cpu backend runs their F32 twins (every weight the
 * quantized one dequantized), so that the comparison is of the cuda
 * kernels alone: the GEMV in float, the prompt's cuBLAS products on fp16
 * tiles, the fp16 KV cache.  Then the Q4_K_M one batched = unbatched.
 */
static void
test_quant_models(void)
{
    int                   rc, cpu_runs;
    char                  base[512], one[80], path[512], twin[512], what[64];
    size_t                k, i;
    int32_t               prompt[40];
    fg_gguf_gen_conf_t    c;
    const fg_gguf_mix_t  *mix;

    static const fg_k_type_e  quant_types[] = {
        FG_K_Q4_0, FG_K_Q4_1, FG_K_Q5_0, FG_K_Q5_1, FG_K_Q8_0, FG_K_Q2_K,
        FG_K_Q3_K, FG_K_Q4_K, FG_K_Q5_K, FG_K_Q6_K
    };

    /* NULL: the generator's own mixture (llama.cpp's rules) */
    static const struct {
        const char        *name;
        fg_test_qpick_pt   pick;
    }  mixes[] = {
        { "q4_k_m", NULL },
        { "q5_k_m", NULL },
        { "every quantized type", fg_test_pick_every },
    };

    cpu_runs = 1;

    for (k = 0; k < sizeof(quant_types) / sizeof(quant_types[0]); k++) {
        cpu_runs &= fg_test_cpu_runs(quant_types[k]);
    }

    fg_gguf_gen_defaults(&c);
    c.seed = 90;
    c.n_embd = 256;
    c.n_layer = 2;
    c.n_ff = 512;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.n_vocab = 300;

    snprintf(base, sizeof(base), "%s/quant-base.gguf", dir);

    if (gen_model(&c, base) != 0) {
        return;
    }

    for (k = 0; k < sizeof(mixes) / sizeof(mixes[0]); k++) {
        snprintf(path, sizeof(path), "%s/quant-%zu.gguf", dir, k);
        snprintf(twin, sizeof(twin), "%s/quant-%zu-f32.gguf", dir, k);
        snprintf(what, sizeof(what), "llama %s", mixes[k].name);

        mix = fg_gguf_mix_find(mixes[k].name);
        rc = -1;

        if (mixes[k].pick != NULL) {
            rc = fg_test_qfile(base, path, mixes[k].pick);

        } else if (mix != NULL) {
            c.type = mix->type;
            c.mix = mix->mix;
            rc = gen_model(&c, path);
            c.type = FG_GGML_F32;
            c.mix = 0;
        }

        if (rc != 0 || fg_test_qfile(path, twin, fg_test_pick_f32) != 0) {
            ok(0, "%s: the model and its F32 twin written", what);
            continue;
        }

        for (i = 0; i < 40; i++) {
            prompt[i] = (int32_t) (fg_rand_next(&rng) % c.n_vocab);
        }

        test_compare(what, path, twin, prompt, 21, N_GEN, 2e-2);

        /* and on the same file, where the cpu backend runs these types:
         * its products round x to 8 bits, as for Q8_0 */
        if (cpu_runs) {
            snprintf(one, sizeof(one), "%s, one file", what);
            test_compare(one, path, path, prompt, 21, N_GEN, 5e-2);

        } else {
            ok(1, "%s, one file # SKIP the cpu kernels do not run the "
               "types", what);
        }

        if (k == 0) {
            test_batched(what, path, c.n_vocab, TOL_BATCH);
        }

        unlink(path);
        unlink(twin);
    }

    test_quant_refused(base);
    unlink(base);
}


#endif /* _FG_TEST_CUDA_QMODELS_H_INCLUDED_ */
