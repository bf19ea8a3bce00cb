
/*
 * fairgate: MuxServe's decisions (engine/mux/fg_mux.c) worked by hand: the
 * initial quotas, the adaptation, the fits and ADBS's picks.
 */


#include <string.h>

#include "fg_tap.h"
#include "fg_mux.h"


/* three models: a big popular one, a small popular one, a big rare one */
static void
three(fg_mux_t *mx, fg_mux_mode_e mode)
{
    memset(mx, 0, sizeof(fg_mux_t));
    mx->mode = mode;
    mx->pool = 1000;
    mx->n = 3;
    mx->adapt_s = FG_MUX_ADAPT_S;
    mx->m[0].unit = 20;
    mx->m[0].rate = 4.0;
    mx->m[1].unit = 5;
    mx->m[1].rate = 4.0;
    mx->m[2].unit = 20;
    mx->m[2].rate = 1.0;
    fg_mux_init(mx, 0.0);
}


static void
test_conf(void)
{
    fg_mux_t  mx;

    three(&mx, FG_MUX_MUXSERVE);
    ok(fg_mux_conf_error(&mx) == NULL, "three models: fine");

    mx.m[1].unit = 0;
    ok(fg_mux_conf_error(&mx) != NULL, "a unit of 0 refused");

    three(&mx, FG_MUX_MUXSERVE);
    mx.m[2].rate = 0.0;
    ok(fg_mux_conf_error(&mx) != NULL, "a rate of 0 refused");

    three(&mx, FG_MUX_MUXSERVE);
    mx.pool = 40;
    ok(fg_mux_conf_error(&mx) != NULL, "a pool under a block of each "
       "refused");

    three(&mx, FG_MUX_MUXSERVE);
    mx.n = 0;
    ok(fg_mux_conf_error(&mx) != NULL, "no model refused");
}


static void
test_init(void)
{
    fg_mux_t  mx;

    /* rate x unit: 80, 20, 20 of 120: 666.7, 166.7, 166.7 */
    three(&mx, FG_MUX_MUXSERVE);
    ok(mx.m[0].quota == 660 && mx.m[1].quota == 165 && mx.m[2].quota == 160,
       "quotas by rate x unit in whole token blocks: %llu %llu %llu",
       (unsigned long long) mx.m[0].quota,
       (unsigned long long) mx.m[1].quota,
       (unsigned long long) mx.m[2].quota);

    /* by unit alone: 20, 5, 20 of 45: 444.4, 111.1, 444.4 */
    three(&mx, FG_MUX_SPATIAL);
    ok(mx.m[0].quota == 440 && mx.m[1].quota == 110 && mx.m[2].quota == 440,
       "spatial: by size alone, whatever the rates");

    three(&mx, FG_MUX_TEMPORAL);
    ok(mx.m[0].quota == 1000 && mx.m[2].quota == 1000,
       "temporal: the whole pool to each");

    mx.mode = FG_MUX_MUXSERVE;
    mx.m[2].rate = 1e-6;
    fg_mux_init(&mx, 0.0);
    ok(mx.m[2].quota == 20, "a rare model keeps one token block");
}


static void
test_adapt(void)
{
    fg_mux_t  mx;

    three(&mx, FG_MUX_MUXSERVE);

    /* model 1 busy (its whole quota, 7 waiting); 0 and 2 spare */
    mx.m[0].peak = 300;
    mx.m[1].peak = 165;
    mx.m[1].waiting = 7;
    mx.m[2].peak = 0;
    mx.m[0].used = 100;
    mx.m[1].used = 165;

    ok(fg_mux_adapt(&mx, 7.9) == 0 && mx.m[1].quota == 165,
       "no adaptation before 8 s");

    /*
     * Model 1 wants a tenth of 165: 15 (3 blocks of 5).  Spare: 0 has
     * 360, 2 has 160 (of 520); 0 gives 15 * 360 / 520 = 10.4: none in
     * its blocks of 20; 2 gives 4.6: none.  The largest spare, 0, gives
     * a whole block: 20, all to 1 (640 185 160); the leftover, 1000 -
     * 985 = 15, to the longest queue, model 1 again.
     */
    ok(fg_mux_adapt(&mx, 8.0) == 1, "adapts at 8 s");
    ok(mx.m[0].quota == 640 && mx.m[1].quota == 200 && mx.m[2].quota == 160,
       "blocks too coarse to give in proportion: a whole one from the "
       "largest spare; the leftover goes to the longest queue: "
       "%llu %llu %llu", (unsigned long long) mx.m[0].quota,
       (unsigned long long) mx.m[1].quota,
       (unsigned long long) mx.m[2].quota);
    ok(mx.m[1].peak == 165 && mx.m[0].peak == 100, "peaks start again "
       "from use");

    /* now model 0 busy with 3 waiting, 1 and 2 spare */
    mx.m[0].peak = 660;
    mx.m[0].waiting = 3;
    mx.m[1].peak = 30;
    mx.m[1].waiting = 0;
    mx.m[2].peak = 0;

    /*
     * 0 wants 64 -> 60 (3 blocks).  Spare: 1 has 170, 2 has 160 (330);
     * 1 gives 60 * 170 / 330 = 30.9 -> 30, 2 gives 29.1 -> 20: 50; the
     * 10 short, whole blocks from the largest spare: 5 from 1 (135 then
     * left, 140 to 2), 20 from 2: 75 collected, 60 to 0 in its blocks
     * of 20; 15 left over, less than a block of the longest queue's.
     */
    ok(fg_mux_adapt(&mx, 16.0) == 1, "adapts at 16 s");
    ok(mx.m[0].quota == 700 && mx.m[1].quota == 165
       && mx.m[2].quota == 120,
       "the busy take from the spare in proportion: %llu %llu %llu",
       (unsigned long long) mx.m[0].quota,
       (unsigned long long) mx.m[1].quota,
       (unsigned long long) mx.m[2].quota);

    /*
     * Model 2 holds nothing, its next request needs 200 of its quota of
     * 120: busy though its peak is 0, it wants the 80 it lacks (more than
     * a tenth, 20); 0 (peak 100) and 1 (peak 0) are spare: 600 and 165
     * of 765; 0 gives 80 * 600 / 765 = 62.7 -> 60, 1 gives 17.3 -> 15;
     * the 5 short, the largest spare (0) gives one block more: 2 gets
     * 80 of the 95 in its blocks of 20, all it lacks, and 20 of the 30
     * left over as the longest queue.
     */
    mx.m[0].peak = 100;
    mx.m[0].used = 100;
    mx.m[0].waiting = 0;
    mx.m[1].peak = 0;
    mx.m[1].used = 0;
    mx.m[2].used = 0;
    mx.m[2].waiting = 1;
    mx.m[2].next_need = 200;
    ok(fg_mux_adapt(&mx, 24.0) == 1, "adapts at 24 s");
    ok(mx.m[2].quota == 220 && mx.m[0].quota == 620
       && mx.m[1].quota == 150,
       "a model whose next request exceeds its quota is busy and takes "
       "what it lacks: %llu %llu %llu",
       (unsigned long long) mx.m[0].quota,
       (unsigned long long) mx.m[1].quota,
       (unsigned long long) mx.m[2].quota);

    /* a model whose next request is larger than its quota, holding
     * nothing: it still gets what it lacks (or it would starve) */
    three(&mx, FG_MUX_MUXSERVE);
    mx.m[2].waiting = 1;
    mx.m[2].next_need = 200;        /* its quota is 160 */
    mx.m[0].peak = 0;
    mx.m[1].peak = 0;
    ok(fg_mux_adapt(&mx, 8.0) == 1, "adapts");
    ok(mx.m[2].quota >= 200,
       "a queue blocked by its quota gets what its request lacks (%llu)",
       (unsigned long long) mx.m[2].quota);

    /*
     * A small model's lack below one token block of each spare model
     * (12 x 4 = 48 head blocks, against blocks of 128 and 40): the
     * proportional shares round to nothing, and it waited for good (the
     * engine's gateway stalled on it); a whole block of the largest
     * spare gives it what it lacks.
     */
    memset(&mx, 0, sizeof(fg_mux_t));
    mx.mode = FG_MUX_MUXSERVE;
    mx.pool = 12000;
    mx.n = 3;
    mx.adapt_s = FG_MUX_ADAPT_S;
    mx.m[0].unit = 128;
    mx.m[0].quota = 87 * 128;
    mx.m[1].unit = 40;
    mx.m[1].quota = 18 * 40;
    mx.m[2].unit = 12;
    mx.m[2].quota = 12 * 12;
    mx.m[2].waiting = 64;
    mx.m[2].next_need = 16 * 12;
    ok(fg_mux_adapt(&mx, 8.0) == 1, "adapts");
    ok(mx.m[2].quota >= 16 * 12 && mx.m[0].quota == 86 * 128
       && mx.m[1].quota == 18 * 40,
       "a lack smaller than the spare models' blocks is still given, from "
       "the largest spare: %llu %llu %llu",
       (unsigned long long) mx.m[0].quota,
       (unsigned long long) mx.m[1].quota,
       (unsigned long long) mx.m[2].quota);

    three(&mx, FG_MUX_SPATIAL);
    mx.m[1].peak = 110;
    mx.m[1].waiting = 7;
    ok(fg_mux_adapt(&mx, 100.0) == 0 && mx.m[1].quota == 110,
       "spatial never adapts");
}


static void
test_fits(void)
{
    fg_mux_t  mx;

    three(&mx, FG_MUX_MUXSERVE);
    mx.m[1].used = 160;
    ok(fg_mux_fits(&mx, 1, 5) && !fg_mux_fits(&mx, 1, 10),
       "within the model's quota");

    three(&mx, FG_MUX_TEMPORAL);
    mx.m[0].used = 900;
    ok(fg_mux_fits(&mx, 1, 100) && !fg_mux_fits(&mx, 1, 105),
       "temporal: within what the others leave of the pool");
}


static void
test_adbs(void)
{
    int       a, b, c;
    fg_mux_t  mx;
    uint32_t  order[FG_MUX_MAX_MODELS], n;

    three(&mx, FG_MUX_MUXSERVE);
    mx.m[0].waiting = 1;
    mx.m[0].next_need = 40;
    mx.m[2].waiting = 1;
    mx.m[2].next_need = 400;        /* over its quota of 160 */
    mx.m[1].waiting = 2;
    mx.m[1].next_need = 10;

    a = fg_mux_next_prefill(&mx);
    b = fg_mux_next_prefill(&mx);
    c = fg_mux_next_prefill(&mx);
    ok(a == 0 && b == 1 && c == 0, "prefill round-robin, passing one that "
       "does not fit its quota (%d %d %d)", a, b, c);

    mx.m[0].waiting = 0;
    mx.m[1].waiting = 0;
    ok(fg_mux_next_prefill(&mx) == -1, "none fits: -1");

    mx.m[0].decoding = 3;
    mx.m[1].decoding = 1;
    mx.m[2].decoding = 2;
    mx.m[2].used = 180;             /* over its quota */
    mx.rr_decode = 1;

    n = fg_mux_decode_order(&mx, order);
    ok(n == 2 && order[0] == 1 && order[1] == 0,
       "decode: round-robin from the cursor, not a model over its quota");
    n = fg_mux_decode_order(&mx, order);
    ok(n == 2 && order[0] == 0 && order[1] == 1, "the cursor moves on");
}


int
main(void)
{
    test_conf();
    test_init();
    test_adapt();
    test_fits();
    test_adbs();

    return fg_tap_done();
}
