
/*
 * fairgate: tests of Andes's QoE (fg_qoe.h) against timelines worked by
 * hand from equations 1-3.
 */


#include "fg_tap.h"
#include "fg_qoe.h"


static double
test_qoe(double ttft, double speed, double submit, const double *at,
    int n)
{
    int              i;
    fg_qoe_t         q;
    fg_qoe_expect_t  e = { ttft, speed };

    fg_qoe_init(&q, &e, submit);

    for (i = 0; i < n; i++) {
        fg_qoe_token(&q, submit + at[i]);
    }

    return fg_qoe_value(&q);
}


static void
test_qoe_long(void)
{
    int              i;
    double           t;
    fg_qoe_t         q;
    fg_qoe_expect_t  e = { 1.0, 1 / 0.31 };

    /* 10,000 tokens on time from an absolute clock stay at 1 */
    fg_qoe_init(&q, &e, 1.7e9);
    for (i = 0; i < 10000; i++) {
        fg_qoe_token(&q, 1.7e9 + 1.0 + i * 0.31);
    }
    is_num(fg_qoe_value(&q), 1.0, 1e-6, "10,000 tokens on time: 1");

    /* the same answer after a 100 s first token, then at 100 tokens/s:
     * consumed at 100 + 0.31 i against 1 + 0.31 i, each 99 s late;
     * S_delay = 99 n, S_whole = sum (99 + 0.31 (n - 1 - i)) */
    fg_qoe_init(&q, &e, 0);
    for (i = 0; i < 10000; i++) {
        fg_qoe_token(&q, 100.0 + i * 0.01);
    }
    t = 99.0 * 10000 + 0.31 * 9999 * 10000 / 2;
    is_num(fg_qoe_value(&q), 1 - 99.0 * 10000 / t, 1e-9,
           "10,000 tokens after a 100 s wait");
}


int
main(void)
{
    double  on_time[] = { 1.0, 1.5, 2.0, 2.5 };
    double  late[] = { 3.0, 4.0, 5.0 };
    double  stall[] = { 1.0, 2.0, 6.0, 7.0 };
    double  fast[] = { 0.5, 0.6, 0.7, 0.8 };
    double  late_fast[] = { 2.0, 2.1, 2.2 };
    double  late_paced[] = { 2.0, 3.0, 4.0 };
    double  one_late[] = { 3.0 };

    /* ideal 1, 1.5, 2, 2.5 at 2 tokens/s: consumed as delivered */
    is_num(test_qoe(1.0, 2.0, 10.0, on_time, 4), 1.0, 1e-12,
           "on time at the reading speed: 1");

    /* ideal 1, 2, 3; consumed 3, 4, 5: S_delay 6, S_whole 4+3+2 = 9 */
    is_num(test_qoe(1.0, 1.0, 0.0, late, 3), 1.0 / 3, 1e-12,
           "first token 2 s late: 1/3");

    /* ideal 1..4; consumed 1, 2, 6, 7: S_delay 6, S_whole 6+5+4+3 = 18 */
    is_num(test_qoe(1.0, 1.0, 0.0, stall, 4), 2.0 / 3, 1e-12,
           "a 3 s stall after two tokens: 2/3");
    is_num(test_qoe(1.0, 1.0, 0.0, stall, 2), 1.0, 1e-12,
           "the tokens before the stall: 1");

    /* early tokens are held: consumed at 1, 2, 3, 4, never above 1 */
    is_num(test_qoe(1.0, 1.0, 0.0, fast, 4), 1.0, 1e-12,
           "tokens faster than the reader: 1, no more");

    /* late then fast: consumed 2, 3, 4 as if delivered at 2, 3, 4:
     * S_delay 3, S_whole 3+2+1 = 6 */
    is_num(test_qoe(1.0, 1.0, 0.0, late_fast, 3), 0.5, 1e-12,
           "catching up faster than the reader gains nothing");
    is_num(test_qoe(1.0, 1.0, 0.0, late_fast, 3),
           test_qoe(1.0, 1.0, 0.0, late_paced, 3), 1e-12,
           "the same as delivered at the reading speed after that wait");

    /* one token, late: all of S_whole is delay */
    is_num(test_qoe(1.0, 1.0, 0.0, one_late, 1), 0.0, 1e-12,
           "a single late token: 0");
    is_num(test_qoe(1.0, 1.0, 0.0, on_time, 1), 1.0, 1e-12,
           "a single token on time: 1");

    is_num(test_qoe(1.0, 1.0, 0.0, NULL, 0), 1.0, 1e-12, "0 tokens: 1");

    /* no reading speed: an infinitely fast reader, only TTFT counts;
     * consumed 3, 4, 5 against ideal 1, 1, 1: S_delay 9, S_whole 12 */
    is_num(test_qoe(1.0, 0.0, 0.0, late, 3), 0.25, 1e-12,
           "no reading speed: lateness against the TTFT target");

    test_qoe_long();

    return done_testing();
}
