
/*
 * fairgate: where a CPU model's matrices live.  At load every matrix the
 * kernels multiply moves into one region of the model's own, asked for
 * in huge pages: Q4_0, Q8_0 and Q4_K packed for their kernels (fg_k_pack():
 * groups of 8 rows in the lanes of a vector, docs/kernels.md), the others
 * copied as they are.  A token at a time, the products stream every
 * weight once per token (a 1B model's gigabyte); in the file's 4 KiB
 * pages they waited on address translation, in 2 MiB pages a Q6_K model
 * decoded 11% faster, F16 9%, BF16 20%, packed Q8_0 and Q4_K 3-4%
 * (docs/engine-speed.md, "Huge pages").  The file's pages are let go as
 * each matrix moves (read again, they would come from the file), so the
 * resident size stays about the same, private now rather than the file's
 * cache.  An output tied to the embeddings moves once for both: the
 * lookups read its rows where it went.
 */


#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "fg_model.h"


#define FG_MODEL_HUGE       ((size_t) 2 << 20)
#define FG_MODEL_ALIGN      64


typedef struct {
    int                     pack;
    int                     copy;
} fg_model_place_opts_t;


/* the whole pages of [p, p + size) given back: read again, the file's */
static void
fg_model_place_release(const void *p, size_t size)
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


/* the bytes mat takes in the region, packed or as it is; 0: it stays */
static size_t
fg_model_place_size(const fg_model_mat_t *mat,
    const fg_model_place_opts_t *o, int *packed)
{
    size_t  size;

    *packed = 0;
    size = o->pack ? fg_k_pack_size(mat->type, mat->in, mat->out) : 0;

    if (size != 0) {
        *packed = 1;

    } else if (o->copy) {
        size = fg_k_row_size(mat->type, mat->in) * mat->out;
    }

    return (size + FG_MODEL_ALIGN - 1) / FG_MODEL_ALIGN * FG_MODEL_ALIGN;
}


/* the matrices the products read: the output first, then the layers' */
static size_t
fg_model_place_list(fg_model_t *m, fg_model_mat_t **mats)
{
    size_t             n;
    uint32_t           l;
    fg_model_layer_t  *ml;

    n = 0;
    mats[n++] = &m->output;

    for (l = 0; l < m->hp->n_layer; l++) {
        ml = &m->layers[l];

        mats[n++] = &ml->wq;
        mats[n++] = &ml->wk;
        mats[n++] = &ml->wv;
        mats[n++] = &ml->wo;
        mats[n++] = &ml->w_gate;
        mats[n++] = &ml->w_up;
        mats[n++] = &ml->w_down;
    }

    return n;
}


/*
 * The region, aligned to a huge page and asked for in them (where the
 * kernel has transparent huge pages; ordinary pages otherwise).
 */
static char *
fg_model_place_region(fg_model_t *m, size_t size)
{
    char       *p;
    uintptr_t   a;

    m->wmem_size = size + FG_MODEL_HUGE;
    m->wmem = mmap(NULL, m->wmem_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (m->wmem == MAP_FAILED) {
        m->wmem = NULL;
        return NULL;
    }

    a = ((uintptr_t) m->wmem + FG_MODEL_HUGE - 1) & ~(FG_MODEL_HUGE - 1);
    p = (char *) a;

#ifdef MADV_HUGEPAGE
    (void) madvise(p, (size_t) ((char *) m->wmem + m->wmem_size - p),
                   MADV_HUGEPAGE);
#endif

    return p;
}


/* mat moved to p, packed or as it is, and its mapped pages let go */
static void
fg_model_place_mat(fg_model_t *m, fg_model_mat_t *mat, char *p, int packed)
{
    size_t  size;

    if (packed) {
        size = fg_k_pack_size(mat->type, mat->in, mat->out);
        fg_k_pack(mat->type, p, mat->data, mat->in, mat->out);
        m->n_packed++;
        m->packed_bytes += size;

    } else {
        size = fg_k_row_size(mat->type, mat->in) * mat->out;
        memcpy(p, mat->data, size);
        m->copied_bytes += size;
    }

    if (m->gguf->mapped) {
        fg_model_place_release(mat->data, size);
    }

    mat->data = p;
    mat->packed = packed;
}


static void
fg_model_place_opts(const fg_model_t *m, fg_model_place_opts_t *o)
{
    const char  *env;

    env = getenv("FAIRGATE_CPU_PACK");
    o->pack = env == NULL || strcmp(env, "0") != 0;

    /* a file read into memory is not given back: copied, held twice */
    env = getenv("FAIRGATE_CPU_COPY");
    o->copy = m->gguf->mapped && (env == NULL || strcmp(env, "0") != 0);
}


void
fg_model_place(fg_model_t *m)
{
    int                     tied, packed;
    char                   *region;
    size_t                  n, i, size, off;
    fg_model_mat_t        **mats;
    fg_model_place_opts_t   o;

    fg_model_place_opts(m, &o);

    mats = malloc((7 * (size_t) m->hp->n_layer + 1) * sizeof(*mats));

    if (mats == NULL) {
        return;
    }

    n = fg_model_place_list(m, mats);
    size = 0;

    for (i = 0; i < n; i++) {
        size += fg_model_place_size(mats[i], &o, &packed);
    }

    region = size ? fg_model_place_region(m, size) : NULL;

    if (region == NULL) {
        free(mats);
        return;
    }

    tied = m->output.data == m->tok_embd.data;
    off = 0;

    for (i = 0; i < n; i++) {
        size = fg_model_place_size(mats[i], &o, &packed);

        if (size != 0) {
            fg_model_place_mat(m, mats[i], region + off, packed);
            off += size;
        }
    }

    /* tied, the embeddings' lookups read the moved rows too */
    if (tied) {
        m->tok_embd = m->output;
    }

    /* written once: a stray store faults rather than changing a weight */
    (void) mprotect(m->wmem, m->wmem_size, PROT_READ);

    free(mats);
}
