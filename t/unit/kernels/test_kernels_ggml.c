
/*
 * fairgate: the quantized types against ggml itself.  ggml's reference
 * quantizers (ggml-quants.c's quantize_row_*_ref) and dequantizers, run
 * outside this tree on the rows below, gave the FNV-1a hashes of their
 * bytes and of the floats read back from them; fg_k_quant_row() and
 * fg_k_dequant_row() must give the same hashes, that is the same bytes and
 * the same floats, bit for bit, on both paths.
 *
 * The rows: 6 distributions of 16 super-blocks each (4,096 values), from
 * a fixed seed: uniform in (-1, 1), cubed and scaled by 10 (heavy tails),
 * sparse spikes of 50 among values of 0.01, positive values (no minimum
 * to subtract), zero sub-blocks and whole zero blocks, and values on a
 * grid of quarters (exact ties for the rounding rules).  ggml leaves the
 * bsums of an all-zero Q8_K block unwritten; the hashes were taken with
 * them zeroed, as fairgate writes them.  Bit for bit holds where the
 * compiler does not fuse a multiply and an add on its own (-ffp-contract:
 * the build targets plain x86-64, whose C code has no FMA instructions).
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_kernels.h"
#include "fg_rand.h"


#define ROW     (16 * FG_K_QK_K)
#define DISTS   6


/* ggml's hashes, for the rows below */
static const struct {
    fg_k_type_e  type;
    const char  *name;
    uint64_t     quant;
    uint64_t     dequant;           /* 0: ggml has no dequantizer */
} golden[] = {
    { FG_K_Q4_0, "q4_0", 0x25b24047e4a67006ULL,
      0x29fb7774133175e2ULL },
    { FG_K_Q4_1, "q4_1", 0xc30cde4e6918c0cbULL,
      0xb07179a428c37b98ULL },
    { FG_K_Q5_0, "q5_0", 0x2ac33a745a3aa9f8ULL,
      0x9f01695f5d426226ULL },
    { FG_K_Q5_1, "q5_1", 0x011c26b73d452ec4ULL,
      0xc3aec91eb5b16236ULL },
    { FG_K_Q8_0, "q8_0", 0x449484d323090fdcULL,
      0x3daeae4480ac280fULL },
    { FG_K_Q8_1, "q8_1", 0xce2757c90d13d260ULL,
      0 },
    { FG_K_Q2_K, "q2_k", 0xed244467cfb78025ULL,
      0x64f044ce62ed778cULL },
    { FG_K_Q3_K, "q3_k", 0x1fbca024d02e2143ULL,
      0xf3194d610202582bULL },
    { FG_K_Q4_K, "q4_k", 0x5425ace5f62dd531ULL,
      0x8a8905e8e3f87d37ULL },
    { FG_K_Q5_K, "q5_k", 0x2f1dfa3bb344c8c2ULL,
      0xacfda75252f19536ULL },
    { FG_K_Q6_K, "q6_k", 0xb46027b6dd1cc58bULL,
      0x895f978bfc7a9f1fULL },
    { FG_K_Q8_K, "q8_k", 0x6c6b9efa4809ba6bULL,
      0x73e5625fbe973d2bULL },
};


static float    x[DISTS][ROW], y[ROW];
static uint8_t  q[DISTS][ROW * 2];


static uint64_t
fnv1a(uint64_t h, const void *p, size_t n)
{
    size_t          i;
    const uint8_t  *b;

    for (b = p, i = 0; i < n; i++) {
        h = (h ^ b[i]) * 0x100000001b3ULL;
    }

    return h;
}


/* the rows, the same wherever they are drawn */
static void
make_rows(void)
{
    int        d;
    size_t     i;
    double     u, v;
    fg_rand_t  rng;

    fg_rand_seed(&rng, 20261129);

    for (d = 0; d < DISTS; d++) {
        for (i = 0; i < ROW; i++) {
            u = fg_rand_double(&rng) * 2 - 1;
            v = fg_rand_double(&rng);

            switch (d) {
            case 0:
                x[d][i] = (float) u;
                break;
            case 1:
                x[d][i] = (float) (u * u * u * 10);
                break;
            case 2:
                x[d][i] = (float) (v < 0.1 ? u * 50 : u * 0.01);
                break;
            case 3:
                x[d][i] = (float) (fabs(u) + 0.5);
                break;
            case 4:
                x[d][i] = i % 256 < 16 || i / 256 % 7 == 0 ? 0.0f : (float) u;
                break;
            default:
                x[d][i] = (float) (int) (u * 8) / 4;
                break;
            }
        }
    }
}


int
main(void)
{
    int       d, simd;
    size_t    k, size;
    uint64_t  hq, hd;

    fg_k_init();
    make_rows();

    for (k = 0; k < sizeof(golden) / sizeof(golden[0]); k++) {
        size = fg_k_row_size(golden[k].type, ROW);
        hq = 0xcbf29ce484222325ULL;

        for (d = 0; d < DISTS; d++) {
            fg_k_quant_row(golden[k].type, x[d], q[d], ROW);
            hq = fnv1a(hq, q[d], size);
        }

        if (!ok(hq == golden[k].quant, "%s: ggml's bytes", golden[k].name)) {
            diag("hash %016llx, ggml's %016llx", (unsigned long long) hq,
                 (unsigned long long) golden[k].quant);
        }

        for (simd = 0; golden[k].dequant && simd < 2; simd++) {
            fg_k_set_simd(simd);
            hd = 0xcbf29ce484222325ULL;

            for (d = 0; d < DISTS; d++) {
                fg_k_dequant_row(golden[k].type, q[d], y, ROW);
                hd = fnv1a(hd, y, sizeof(y));
            }

            if (!ok(hd == golden[k].dequant, "%s: ggml's floats read back, "
                    "%s path", golden[k].name, simd ? "best" : "portable"))
            {
                diag("hash %016llx, ggml's %016llx", (unsigned long long) hd,
                     (unsigned long long) golden[k].dequant);
            }
        }
    }

    return done_testing();
}
