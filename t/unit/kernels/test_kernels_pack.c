
/*
 * fairgate: tests of packed Q4_0, Q8_0 and Q4_K matrices (fg_k_pack(),
 * fg_k_matmul_packed()): Q4_0 and Q8_0, packed in lanes, give each row's
 * bits alone on the portable path at every n and on every path, and the
 * plain product's within rounding; Q4_K gives the plain product's bits,
 * batch invariance off (the path by n, sgemm's tiles beyond the direct
 * kernels' bound) and on (the direct kernels at every n), on every path
 * (portable C, AVX2, the best), for rows
 * of x 1 to 40, alone and over 3 threads, for odd block counts and
 * several groups; inside the work buffer the engine sizes; its rows
 * read back (fg_k_pack_dequant_row()) as the plain ones; and what is not
 * packed (a type, rows not in whole groups) says so.
 */


#include <math.h>
#include <stdint.h>

#include "fg_tap.h"
#include "fg_kernels.h"
#include "fg_kernels_simd.h"
#include "fg_kernels_qdot.h"
#include "fg_rand.h"


#define MAX_N  40
#define GUARD  256


typedef struct {
    fg_k_type_e  type;
    const char  *name;
    size_t       in;
    size_t       out;
} pcase_t;


static const pcase_t  cases[] = {
    { FG_K_Q4_0, "Q4_0", 32, 8 },
    { FG_K_Q4_0, "Q4_0", 96, 24 },
    { FG_K_Q4_0, "Q4_0", 736, 136 },
    { FG_K_Q4_K, "Q4_K", 256, 8 },
    { FG_K_Q4_K, "Q4_K", 768, 40 },
    { FG_K_Q4_K, "Q4_K", 1280, 136 },
    { FG_K_Q8_0, "Q8_0", 32, 8 },
    { FG_K_Q8_0, "Q8_0", 96, 24 },
    { FG_K_Q8_0, "Q8_0", 736, 136 }
};

#define N_CASES  (sizeof(cases) / sizeof(cases[0]))


static const int    simds[] = { 0, FG_K_SIMD_AVX2, 1 };
static const char  *simd_names[] = { "generic", "avx2", "best" };

static fg_rand_t  rng = { 0x51ab5eed2b7c9d13ULL };


static void
rand_floats(float *x, size_t n, double scale)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        x[i] = (float) ((fg_rand_double(&rng) * 2 - 1) * scale
                        * (i / 64 % 3 == 0 ? 1e-3 : 1.0));
    }
}


static int
same_bits(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}


/* within float rounding of the plain product: 1e-4 of its largest */
static int
near(const float *a, const float *b, size_t n)
{
    float   most;
    size_t  i;

    most = 0.0f;

    for (i = 0; i < n; i++) {
        most = fabsf(a[i]) > most ? fabsf(a[i]) : most;
    }

    for (i = 0; i < n; i++) {
        if (!(fabsf(a[i] - b[i]) <= 1e-4f * most)) {
            return 0;
        }
    }

    return 1;
}


/*
 * A case on one path: every n, 1 and 3 threads, against the plain.  A
 * matrix packed in lanes has its own sums, the same on every path and
 * for every batch: each row of x alone on the portable path (yref),
 * bit for bit, and within rounding of the plain product.
 */
static int
pack_case(const pcase_t *c, const void *w, const void *wp, const float *x,
    const float *yref, fg_pool_t *pool3, size_t *ys)
{
    int         bad, p, inv;
    float      *y, *yp;
    size_t      ni, n, size;
    uint8_t    *work;
    fg_pool_t  *pool;

    static const size_t  ns[] = { 1, 2, 3, 4, 5, 8, 9, 17, 33, 40 };

    bad = 0;
    y = malloc(MAX_N * c->out * sizeof(float));
    yp = malloc(MAX_N * c->out * sizeof(float));

    /*
     * the engine's size, batch invariance off, and a guard past it; with
     * invariance on, whose size is that of its n rows quantized, within
     */
    size = fg_k_matmul_work_size(c->type, MAX_N, c->in, 3);
    work = aligned_alloc(64, (size + GUARD + 63) / 64 * 64);

    if (y == NULL || yp == NULL || work == NULL) {
        return -1;
    }

    memset(work + size, 0xa5, GUARD);

    for (p = 0; p < 2; p++) {
        pool = p ? pool3 : NULL;

        for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
            n = ns[ni];

            for (inv = 0; inv < 2; inv++) {
                fg_k_set_batch_invariant(inv);
                fg_k_matmul(pool, y, x, w, c->type, n, c->in, c->out, work);

                memset(yp, 0xff, n * c->out * sizeof(float));
                fg_k_matmul_packed(pool, yp, x, wp, c->type, n, c->in,
                                   c->out, work);
                fg_k_set_batch_invariant(0);

                bad += fg_k_lanes_type(c->type)
                       ? !same_bits(yref, yp, n * c->out)
                         + !near(y, yp, n * c->out)
                       : !same_bits(y, yp, n * c->out);
                (*ys)++;
            }
        }
    }

    for (n = 0; n < GUARD; n++) {
        bad += work[size + n] != 0xa5;
    }

    free(work);
    free(yp);
    free(y);

    return bad;
}


/* each row of x alone, portable C: the bits every lanes product gives */
static void
lanes_ref(const pcase_t *c, const void *wp, const float *x, float *yref)
{
    size_t    t, size;
    uint8_t  *work;

    size = fg_k_matmul_work_size(c->type, 1, c->in, 1);
    work = aligned_alloc(64, (size + 63) / 64 * 64);

    if (work == NULL) {
        return;
    }

    fg_k_set_simd(0);

    for (t = 0; t < MAX_N; t++) {
        fg_k_matmul_packed(NULL, yref + t * c->out, x + t * c->in, wp,
                           c->type, 1, c->in, c->out, work);
    }

    fg_k_set_simd(1);
    free(work);
}


static void
test_packed(void)
{
    int             bad, si;
    float          *f, *x, *yref;
    size_t          k, r, rs, size, ys;
    uint8_t        *w, *wp;
    fg_pool_t      *pool3;
    const pcase_t  *c;

    pool3 = fg_pool_create(3);

    for (k = 0; k < N_CASES; k++) {
        c = &cases[k];
        rs = fg_k_row_size(c->type, c->in);
        size = fg_k_pack_size(c->type, c->in, c->out);
        is_int((int) size, (int) (rs * c->out), "%s %zu x %zu: packed, "
               "its plain size", c->name, c->out, c->in);

        f = malloc(c->in * sizeof(float));
        x = malloc(MAX_N * c->in * sizeof(float));
        w = malloc(rs * c->out);
        wp = aligned_alloc(64, (size + 63) / 64 * 64);
        yref = malloc(MAX_N * c->out * sizeof(float));

        if (pool3 == NULL || f == NULL || x == NULL || w == NULL
            || wp == NULL || yref == NULL)
        {
            ok(0, "memory");
            return;
        }

        for (r = 0; r < c->out; r++) {
            rand_floats(f, c->in, 0.5);
            fg_k_quant_row(c->type, f, w + r * rs, c->in);
        }

        fg_k_pack(c->type, wp, w, c->in, c->out);
        rand_floats(x, MAX_N * c->in, 2.0);

        /* each row back from the packed matrix: the plain row's values */
        bad = 0;

        for (r = 0; r < c->out; r++) {
            fg_k_dequant_row(c->type, w + r * rs, x, c->in);
            fg_k_pack_dequant_row(c->type, wp, c->in, r, f);
            bad += !same_bits(x, f, c->in);
        }

        is_int(bad, 0, "... every row read back from it as from the plain");
        rand_floats(x, MAX_N * c->in, 2.0);
        lanes_ref(c, wp, x, yref);

        for (si = 0; si < 3; si++) {
            fg_k_set_simd(simds[si]);
            ys = 0;
            bad = pack_case(c, w, wp, x, yref, pool3, &ys);
            is_int(bad, 0, "... %s: %zu products (n 1..40, 1 and 3 "
                   "threads, batch invariance off and on) with %s, in the "
                   "work buffer", simd_names[si], ys,
                   fg_k_lanes_type(c->type)
                   ? "each row's bits alone on the portable path, near the "
                     "plain product" : "the plain product's bits");
        }

        fg_k_set_simd(1);
        free(yref);
        free(wp);
        free(w);
        free(x);
        free(f);
    }

    fg_pool_destroy(pool3);
}


static void
test_not_packed(void)
{
    is_int((int) fg_k_pack_size(FG_K_Q4_0, 64, 12), 0,
           "rows not in whole groups of 8 stay plain");
    is_int((int) fg_k_pack_size(FG_K_Q4_1, 64, 16), 0,
           "Q4_1 stays plain");
    is_int((int) fg_k_pack_size(FG_K_Q6_K, 256, 16), 0,
           "Q6_K stays plain");
    is_int((int) fg_k_pack_size(FG_K_Q4_0, 33, 16), 0,
           "a partial block: nothing packed");

    fg_k_set_simd(0);
    is_int((int) fg_k_pack_size(FG_K_Q4_0, 64, 16), 0,
           "portable C packs nothing");
    fg_k_set_simd(1);
}


int
main(void)
{
    const char  *path;

    path = fg_k_init();
    diag("kernels: %s", path);

    /* without SIMD nothing is packed: the last test says so */
    if (strcmp(path, "generic") != 0) {
        test_packed();
    }

    test_not_packed();

    return done_testing();
}
