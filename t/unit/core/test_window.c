
/*
 * fairgate: tests of the sliding-window counter.
 */


#include "fg_tap.h"
#include "fg_window.h"


int
main(void)
{
    int          i;
    fg_window_t  w;

    fg_window_init(&w, 60.0);

    is_int(fg_window_sum(&w, 1000.0), 0, "empty window");

    for (i = 0; i < 10; i++) {
        fg_window_add(&w, 1000.0 + i, 1);
    }

    is_int(fg_window_sum(&w, 1009.5), 10, "ten events in 10 s");
    is_int(fg_window_sum(&w, 1059.5), 10, "all still in at +59.5 s");
    is_int(fg_window_sum(&w, 1060.0), 9, "the first slides out at +60 s");
    is_int(fg_window_sum(&w, 1065.2), 4, "five more gone at +65 s");
    is_int(fg_window_sum(&w, 1069.0), 0, "all gone at +69 s");

    /* no fixed-window burst: 10 at the end of one minute, 10 at the start */
    fg_window_init(&w, 60.0);
    for (i = 0; i < 10; i++) {
        fg_window_add(&w, 59.5, 1);
    }

    is_int(fg_window_sum(&w, 60.5), 10,
           "events just before a minute boundary still count after it");

    /* slot granularity: the 59.5 s burst leaves with its slot, at 119 s */
    is_num(fg_window_wait(&w, 60.5, 10, 1), 58.5, 1e-9,
           "one more fits when the burst's slot leaves at 119 s");
    is_num(fg_window_wait(&w, 60.5, 20, 5), 0, 1e-9,
           "fits now under a higher limit");
    is_num(fg_window_wait(&w, 60.5, 4, 5), 60, 1e-9,
           "never fits: needs more than the limit");

    /* a long gap resets everything; a backwards clock loses nothing */
    fg_window_add(&w, 500.0, 3);
    is_int(fg_window_sum(&w, 500.0), 3, "long gap clears old slots");
    fg_window_add(&w, 499.0, 2);
    is_int(fg_window_sum(&w, 500.0), 5, "a clock step back still counts");

    /* negative times (a simulator may start below zero) */
    fg_window_init(&w, 60.0);
    fg_window_add(&w, -30.0, 4);
    is_int(fg_window_sum(&w, -1.0), 4, "negative times count");
    is_int(fg_window_sum(&w, 31.0), 0, "and slide out");

    /* a 10 s window has 1/6 s slots */
    fg_window_init(&w, 10.0);
    fg_window_add(&w, 0.0, 7);
    is_int(fg_window_sum(&w, 9.9), 7, "10 s window holds at 9.9 s");
    is_int(fg_window_sum(&w, 10.01), 0, "and is empty at 10.01 s");

    /* taking back an estimate that was too high */
    fg_window_init(&w, 60.0);
    fg_window_add(&w, 100.2, 50);
    fg_window_add(&w, 101.5, 30);
    fg_window_remove(&w, 102.0, 100.2, 20);
    is_int(fg_window_sum(&w, 102.0), 60, "remove takes back from the sum");
    is_int(fg_window_sum(&w, 160.5), 30, "and from the slot it was added to");
    fg_window_remove(&w, 161.0, 101.5, 100);
    is_int(fg_window_sum(&w, 161.0), 0, "never more than the slot holds");
    fg_window_add(&w, 161.0, 5);
    fg_window_remove(&w, 170.0, 100.2, 5);
    is_int(fg_window_sum(&w, 170.0), 5,
           "nothing is taken back once the slot left the window");
    fg_window_remove(&w, 170.0, 175.0, 2);
    is_int(fg_window_sum(&w, 170.0), 5,
           "a time ahead of now finds nothing in an empty newest slot");
    fg_window_remove(&w, 161.5, 161.0, 2);
    is_int(fg_window_sum(&w, 161.5), 3, "a slot still in is found");

    fg_window_init(&w, 60.0);
    fg_window_remove(&w, 10.0, 9.0, 1);
    is_int(fg_window_sum(&w, 10.0), 0, "removing from an empty window");

    return done_testing();
}
