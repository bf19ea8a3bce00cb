
/*
 * fairgate: what the simulator's tests share: a step model from its
 * spec, or the test stops there with the reason.
 */

#ifndef _FG_TEST_SIM_H_INCLUDED_
#define _FG_TEST_SIM_H_INCLUDED_


#include <stdlib.h>

#include "fg_tap.h"
#include "fg_sim_run.h"


static inline fg_step_model_t *
fg_test_sim_model(const char *spec)
{
    char              err[256];
    fg_step_model_t  *m;

    m = fg_step_model_create(spec, err, sizeof(err));
    if (m == NULL) {
        diag("%s", err);
        exit(1);
    }

    return m;
}


#endif /* _FG_TEST_SIM_H_INCLUDED_ */
