
/*
 * fairgate: tests of the cost functions.
 */


#include "fg_tap.h"
#include "fg_cost.h"


int
main(void)
{
    double     sum;
    uint32_t   t;
    fg_cost_t  cost;

    fg_cost_linear(&cost, 1.0, 2.0);
    is_num(fg_cost_eval(&cost, 256, 256), 768, 1e-9, "linear h(256, 256)");
    is_num(fg_cost_input(&cost, 100), 100, 1e-9, "linear input charge");
    is_num(fg_cost_output(&cost, 100, 3, 7), 8, 1e-9,
           "linear output tokens 4..7 cost 2 each");

    fg_cost_profiled(&cost);
    is_num(fg_cost_eval(&cost, 10, 20),
           2.1 * 10 + 20 + 0.04 * 200 + 0.032 * 400 + 11.46, 1e-9,
           "profiled h(10, 20)");
    is_num(fg_cost_input(&cost, 10), 2.1 * 10 + 11.46, 1e-9,
           "profiled admission charge is h(x, 0)");

    /* per-token increments must add up to h(x, y) - h(x, 0) */
    sum = 0;
    for (t = 1; t <= 50; t++) {
        sum += fg_cost_output(&cost, 33, t - 1, t);
    }

    is_num(sum, fg_cost_eval(&cost, 33, 50) - fg_cost_eval(&cost, 33, 0),
           1e-6, "profiled per-token charges telescope to h");
    ok(fg_cost_output(&cost, 33, 40, 41) > fg_cost_output(&cost, 33, 0, 1),
       "profiled: a late token costs more than an early one");

    ok(fg_cost_parse(&cost, "linear") == 0 && cost.in == 1 && cost.out == 2,
       "parse linear");
    ok(fg_cost_parse(&cost, "linear:3,0.5") == 0 && cost.in == 3
       && cost.out == 0.5 && cost.base == 0, "parse linear:3,0.5");
    ok(fg_cost_parse(&cost, "profiled") == 0 && cost.out2 > 0,
       "parse profiled");
    ok(fg_cost_parse(&cost, "linear:1") == -1, "reject linear:1");
    ok(fg_cost_parse(&cost, "linear:1,2x") == -1, "reject trailing junk");
    ok(fg_cost_parse(&cost, "linear:-1,2") == -1, "reject negative weight");
    ok(fg_cost_parse(&cost, "linear:1,0") == -1, "reject zero weight");
    ok(fg_cost_parse(&cost, "quadratic") == -1, "reject unknown name");

    return done_testing();
}
