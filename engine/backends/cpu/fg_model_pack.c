
/*
 * fairgate: a model's Q4_0, Q8_0 and Q4_K matrices packed at load for the
 * CPU kernels (fg_k_pack(): groups of 8 rows in the lanes of a vector,
 * docs/kernels.md), which multiply them faster, each row's sums in one
 * order whatever the batch.  The packed copy is the model's own memory;
 * the mapped pages it came from are let go (they would come back from
 * the file if read again), so resident memory stays about the same,
 * private now rather than the file's cache.  An output tied to the
 * embeddings is packed once for both: the lookups read its rows through
 * fg_k_pack_dequant_row().
 */


#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "fg_model.h"


/* the whole pages of [p, p + size) given back: read again, the file's */
static void
fg_model_pack_release(const void *p, size_t size)
{
    long       page;
    uintptr_t  a, b;

    page = sysconf(_SC_PAGESIZE);

    if (page <= 0) {
        return;
    }

    a = ((uintptr_t) p + (uintptr_t) page - 1) / (uintptr_t) page
        * (uintptr_t) page;
    b = ((uintptr_t) p + size) / (uintptr_t) page * (uintptr_t) page;

    if (b > a) {
        (void) madvise((void *) a, b - a, MADV_DONTNEED);
    }
}


/* one matrix packed where the kernels pack its type and shape */
static void
fg_model_pack_mat(fg_model_t *m, fg_model_mat_t *mat)
{
    void    *p;
    size_t   size;

    size = fg_k_pack_size(mat->type, mat->in, mat->out);

    if (size == 0 || mat->packed) {
        return;
    }

    p = aligned_alloc(64, (size + 63) / 64 * 64);

    if (p == NULL) {
        return;
    }

    fg_k_pack(mat->type, p, mat->data, mat->in, mat->out);

    if (m->gguf->mapped) {
        fg_model_pack_release(mat->data, size);
    }

    m->packs[m->n_packs++] = p;
    m->packed_bytes += size;
    mat->data = p;
    mat->packed = 1;
}


void
fg_model_pack(fg_model_t *m)
{
    int                tied;
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

    /* tied, the embeddings' lookups read the packed rows too */
    tied = m->output.data == m->tok_embd.data;
    fg_model_pack_mat(m, &m->output);

    if (tied && m->output.packed) {
        m->tok_embd = m->output;
    }

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
