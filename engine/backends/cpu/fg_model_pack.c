
/*
 * fairgate: a model's Q4_0 and Q4_K matrices packed at load for the CPU
 * kernels (fg_k_pack(): groups of 8 rows whose same blocks lie together,
 * docs/kernels.md), which multiply them faster, with the plain layout's
 * result bits, by one or two rows of x (a decode step of one or two
 * sequences).  Larger batches go faster through the plain kernels and
 * layout: they keep the mapped matrix, and the packed copy, the model's
 * own memory, comes beside it.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_model.h"


/* one matrix packed where the kernels pack its type and shape */
static void
fg_model_pack_mat(fg_model_t *m, fg_model_mat_t *mat)
{
    void    *p;
    size_t   size;

    size = fg_k_pack_size(mat->type, mat->in, mat->out);

    if (size == 0 || mat->packed != NULL) {
        return;
    }

    p = aligned_alloc(64, (size + 63) / 64 * 64);

    if (p == NULL) {
        return;
    }

    fg_k_pack(mat->type, p, mat->data, mat->in, mat->out);

    m->packs[m->n_packs++] = p;
    m->packed_bytes += size;
    mat->packed = p;
}


void
fg_model_pack(fg_model_t *m)
{
    uint32_t           l;
    const char        *env;
    fg_model_layer_t  *ml;

    env = getenv("FAIRGATE_CPU_PACK");

    if (env != NULL && strcmp(env, "0") == 0) {
        return;
    }

    m->packs = calloc(7 * (size_t) m->hp->n_layer + 1, sizeof(void *));

    if (m->packs == NULL) {
        return;
    }

    fg_model_pack_mat(m, &m->output);

    for (l = 0; l < m->hp->n_layer; l++) {
        ml = &m->layers[l];

        fg_model_pack_mat(m, &ml->wq);
        fg_model_pack_mat(m, &ml->wk);
        fg_model_pack_mat(m, &ml->wv);
        fg_model_pack_mat(m, &ml->wo);
        fg_model_pack_mat(m, &ml->w_gate);
        fg_model_pack_mat(m, &ml->w_up);
        fg_model_pack_mat(m, &ml->w_down);
    }
}
