
/*
 * fairgate: a batcher over a backend and a KV pool of its own, for the
 * batcher's tests that drive one directly.
 */

#ifndef _FG_TEST_RIG_H_INCLUDED_
#define _FG_TEST_RIG_H_INCLUDED_


#include "fg_tap.h"
#include "fg_batch.h"
#include "fg_kv.h"


/* a batcher over a backend of ops and a KV pool of its own */
typedef struct {
    const fg_backend_ops_t  *ops;
    fg_backend_t            *backend;
    fg_kv_t                 *kv;
    fg_batch_t              *batch;
} fg_test_rig_t;


/* 0, or -1 said */
static inline int
fg_test_rig_open(fg_test_rig_t *rig, const fg_backend_ops_t *ops,
    const fg_backend_conf_t *conf, const fg_batch_conf_t *bc)
{
    char  err[256];

    rig->ops = ops;
    rig->backend = ops->create(conf, err, sizeof(err));
    rig->kv = rig->backend
              ? fg_kv_create(conf->kv_blocks, conf->block_size, err,
                             sizeof(err))
              : NULL;
    rig->batch = rig->kv
                 ? fg_batch_create(bc, ops, rig->backend, rig->kv, err,
                                   sizeof(err))
                 : NULL;

    if (rig->batch == NULL) {
        diag("%s", err);
        return -1;
    }

    return 0;
}


static inline void
fg_test_rig_close(fg_test_rig_t *rig)
{
    fg_batch_destroy(rig->batch);
    fg_kv_destroy(rig->kv);
    rig->ops->destroy(rig->backend);
}


#endif /* _FG_TEST_RIG_H_INCLUDED_ */
