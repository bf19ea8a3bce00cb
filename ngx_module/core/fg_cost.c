
/*
 * fairgate: cost of service h(input, output).
 */


#include <stdlib.h>
#include <string.h>

#include "fg_cost.h"


void
fg_cost_linear(fg_cost_t *cost, double w_p, double w_q)
{
    memset(cost, 0, sizeof(fg_cost_t));

    cost->in = w_p;
    cost->out = w_q;
}


void
fg_cost_profiled(fg_cost_t *cost)
{
    /* h(x, y) = 2.1x + y + 0.04xy + 0.032y^2 + 11.46, from the profile */
    cost->in = 2.1;
    cost->out = 1.0;
    cost->in_out = 0.04;
    cost->out2 = 0.032;
    cost->base = 11.46;
}


int
fg_cost_parse(fg_cost_t *cost, const char *text)
{
    char    *end;
    double   w_p, w_q;

    if (strcmp(text, "linear") == 0) {
        fg_cost_linear(cost, 1.0, 2.0);
        return 0;
    }

    if (strcmp(text, "profiled") == 0) {
        fg_cost_profiled(cost);
        return 0;
    }

    if (strncmp(text, "linear:", 7) != 0) {
        return -1;
    }

    w_p = strtod(text + 7, &end);
    if (end == text + 7 || *end != ',') {
        return -1;
    }

    text = end + 1;
    w_q = strtod(text, &end);
    if (end == text || *end != '\0') {
        return -1;
    }

    /* a negative or zero weight would let a client be served for free */
    if (!(w_p > 0.0 && w_q > 0.0 && w_p < 1e9 && w_q < 1e9)) {
        return -1;
    }

    fg_cost_linear(cost, w_p, w_q);

    return 0;
}


double
fg_cost_eval(const fg_cost_t *cost, double input, double output)
{
    return cost->in * input + cost->out * output
           + cost->in_out * input * output + cost->out2 * output * output
           + cost->base;
}


double
fg_cost_input(const fg_cost_t *cost, uint32_t input)
{
    return fg_cost_eval(cost, input, 0);
}


double
fg_cost_output(const fg_cost_t *cost, uint32_t input, uint32_t from,
    uint32_t to)
{
    double  x, d;

    /* h(x, to) - h(x, from) without the terms that cancel */
    x = input;
    d = (double) to - (double) from;

    return cost->out * d + cost->in_out * x * d
           + cost->out2 * ((double) to * to - (double) from * from);
}
