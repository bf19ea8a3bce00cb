
/*
 * fairgate: a step of the cuda backend (forward): checked as the cpu
 * backend checks it, its inputs (tokens, positions, block tables) staged
 * and copied in one transfer, cut into passes that fit the scratch, and
 * the wanted logits copied back.  Decode steps (one wanted token per
 * sequence) are captured once per batch size and table width as a CUDA
 * graph and replayed, which saves the launch cost of some 400 kernels a
 * token; FAIRGATE_CUDA_GRAPHS=0 turns that off.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_cuda_int.h"


void
fg_cuda_graphs_clear(fg_backend_t *b)
{
    size_t  i;

    for (i = 0; i < FG_CUDA_GRAPHS; i++) {
        if (b->graphs[i].exec) {
            cudaGraphExecDestroy(b->graphs[i].exec);
        }
    }

    memset(b->graphs, 0, sizeof(b->graphs));
}


/* the graph of a decode pass of n rows and tables of stride, recorded once */
static cudaGraphExec_t
fg_cuda_graph(fg_backend_t *b, const fg_cuda_step_t *st, size_t n)
{
    size_t            i, lru;
    cudaGraph_t       graph;
    cudaError_t       ce;
    cudaGraphExec_t   exec;
    fg_cuda_graph_t  *g;

    lru = 0;

    for (i = 0; i < FG_CUDA_GRAPHS; i++) {
        g = &b->graphs[i];

        if (g->exec && g->n == n && g->stride == st->stride) {
            g->used = ++b->clock;
            return g->exec;
        }

        if (g->used < b->graphs[lru].used) {
            lru = i;
        }
    }

    ce = cudaStreamBeginCapture(b->stream,
                                cudaStreamCaptureModeThreadLocal);
    if (ce != cudaSuccess) {
        goto failed;
    }

    b->cu_err = cudaSuccess;
    fg_cuda_pass(b, st, 0, n, 0, n);

    graph = NULL;
    ce = cudaStreamEndCapture(b->stream, &graph);

    if (ce != cudaSuccess || b->cu_err != cudaSuccess) {
        if (graph) {
            cudaGraphDestroy(graph);
        }

        goto failed;
    }

    ce = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);

    if (ce != cudaSuccess) {
        goto failed;
    }

    g = &b->graphs[lru];

    if (g->exec) {
        cudaGraphExecDestroy(g->exec);
    }

    g->exec = exec;
    g->n = (uint32_t) n;
    g->stride = (uint32_t) st->stride;
    g->used = ++b->clock;

    return exec;

failed:

    /* run eagerly from now on, and say so once */
    fprintf(stderr, "fairgate-engine: cuda: recording a decode graph "
            "failed (%s%s%s): running without graphs\n",
            cudaGetErrorString(ce != cudaSuccess ? ce : b->cu_err),
            b->cu_what ? ", " : "", b->cu_what ? b->cu_what : "");

    b->use_graphs = 0;
    b->cu_err = cudaSuccess;
    b->cu_what = NULL;
    (void) cudaGetLastError();

    return NULL;
}


/* the staging buffers hold at least words int32s; a move drops the graphs */
static int
fg_cuda_step_grow(fg_backend_t *b, size_t words, char *err, size_t errlen)
{
    cudaError_t  ce;

    if (words <= b->step_cap) {
        return 0;
    }

    words = words > 2 * b->step_cap ? words : 2 * b->step_cap;

    fg_cuda_graphs_clear(b);
    cudaStreamSynchronize(b->stream);

    cudaFree(b->d_step);
    b->d_step = NULL;

    if (b->h_step) {
        cudaFreeHost(b->h_step);
        b->h_step = NULL;
    }

    b->step_cap = 0;

    ce = cudaMalloc((void **) &b->d_step, words * sizeof(int32_t));

    if (ce == cudaSuccess) {
        ce = cudaMallocHost((void **) &b->h_step, words * sizeof(int32_t));
    }

    if (fg_cuda_fail(ce, "the step's buffers", err, errlen) != 0) {
        return -1;
    }

    b->step_cap = words;

    return 0;
}


/* room for a step's passes: at most one a row */
static int
fg_cuda_passes_grow(fg_backend_t *b, size_t rows)
{
    void  *p;

    if (rows <= b->passes_cap) {
        return 0;
    }

    p = realloc(b->passes, rows * sizeof(fg_cuda_pass_t));
    if (p == NULL) {
        return -1;
    }

    b->passes = p;
    b->passes_cap = rows;

    return 0;
}


/* what the cpu backend and fg_model_check() refuse, refused alike */
static int
fg_cuda_check_batch(fg_backend_t *b, const fg_backend_batch_t *batch,
    size_t *rows, size_t *outs, size_t *max_blocks, char *err, size_t errlen)
{
    size_t                   s, i, last;
    int32_t                  blk;
    uint64_t                 end;
    const fg_backend_seq_t  *sq;

    *rows = 0;
    *outs = 0;
    *max_blocks = 1;

    for (s = 0; s < batch->n_seqs; s++) {
        sq = &batch->seqs[s];
        end = (uint64_t) sq->pos + sq->n_tokens;

        if (fg_backend_check_seq(sq, s, b->block_size, batch->hidden, err,
                                 errlen)
            != 0)
        {
            return -1;
        }

        /* its info says n_embd 0: the batcher submits no embedding here */
        if (sq->want_hidden) {
            snprintf(err, errlen, "sequence %zu wants hidden states: the "
                     "cuda backend computes no embeddings", s);
            return -1;
        }

        /* nor does its info say all_logits */
        if (sq->want_all) {
            snprintf(err, errlen, "sequence %zu wants every position's "
                     "logits: the cuda backend gives a sequence's last "
                     "alone", s);
            return -1;
        }

        if (sq->n_tokens == 0) {
            continue;
        }

        if (end > b->hp->n_ctx_train) {
            snprintf(err, errlen, "sequence %zu: position %llu is outside "
                     "the context of %u", s, (unsigned long long) end - 1,
                     b->hp->n_ctx_train);
            return -1;
        }

        for (i = 0; i < sq->n_tokens; i++) {
            if (sq->tokens[i] < 0
                || (uint32_t) sq->tokens[i] >= b->hp->n_vocab)
            {
                snprintf(err, errlen, "sequence %zu: token %d is not in the "
                         "vocabulary of %u", s, sq->tokens[i],
                         b->hp->n_vocab);
                return -1;
            }
        }

        last = (size_t) ((end - 1) / b->block_size);

        for (i = 0; i <= last; i++) {
            blk = sq->block_table[i];

            if (blk < 0 || (uint32_t) blk >= b->kv_blocks) {
                snprintf(err, errlen, "sequence %zu: block %d (entry %zu of "
                         "its table) is not in the cache of %u blocks", s,
                         blk, i, b->kv_blocks);
                return -1;
            }
        }

        *rows += sq->n_tokens;
        *outs += sq->want_logits;
        *max_blocks = last + 1 > *max_blocks ? last + 1 : *max_blocks;
    }

    return 0;
}


/*
 * Where a step's inputs lie in the staging buffers: rows, then the
 * wanted rows, then the block tables, as wide as a power of two so that
 * decode steps need few distinct graphs.
 */
static void
fg_cuda_step_layout(fg_cuda_step_t *st, size_t rows, size_t outs,
    size_t n_seqs, size_t max_blocks)
{
    size_t  stride;

    stride = 4;

    while (stride < max_blocks) {
        stride *= 2;
    }

    st->stride = stride;
    st->rows_per_seq = (rows + n_seqs - 1) / n_seqs;
    st->tokens = 0;
    st->pos = rows;
    st->seq = 2 * rows;
    st->orow = 3 * rows;
    st->opos = 3 * rows + outs;
    st->oseq = 3 * rows + 2 * outs;
    st->tables = 3 * rows + 3 * outs;
    st->end = st->tables + n_seqs * stride;
}


/*
 * The step's inputs into the staging buffer, rows in batch order, cut
 * into passes of at most max_rows rows and max_out wanted ones; wanted
 * rows are numbered within their pass.  Returns the number of passes.
 */
static size_t
fg_cuda_stage(fg_backend_t *b, const fg_backend_batch_t *batch,
    const fg_cuda_step_t *st)
{
    int                      want;
    size_t                   s, i, r, o, np;
    int32_t                 *h;
    fg_cuda_pass_t          *pass;
    const fg_backend_seq_t  *sq;

    h = b->h_step;
    r = 0;
    o = 0;
    np = 0;
    pass = NULL;

    for (s = 0; s < batch->n_seqs; s++) {
        sq = &batch->seqs[s];

        for (i = 0; i < sq->n_tokens; i++, r++) {
            want = sq->want_logits && i + 1 == sq->n_tokens;

            if (pass == NULL || pass->n == b->max_rows
                || (want && pass->n_out == b->max_out))
            {
                pass = &b->passes[np++];
                pass->r0 = r;
                pass->n = 0;
                pass->o0 = o;
                pass->n_out = 0;
            }

            h[st->tokens + r] = sq->tokens[i];
            h[st->pos + r] = (int32_t) (sq->pos + i);
            h[st->seq + r] = (int32_t) s;

            if (want) {
                h[st->orow + o] = (int32_t) pass->n;
                h[st->opos + o] = (int32_t) (sq->pos + i);
                h[st->oseq + o] = (int32_t) s;
                o++;
                pass->n_out++;
            }

            pass->n++;
        }

        for (i = 0; i < st->stride; i++) {
            h[st->tables + s * st->stride + i] = sq->block_table
                                                 && i < sq->n_blocks
                                                 ? sq->block_table[i] : -1;
        }
    }

    return np;
}


/*
 * The passes on the stream, a decode step's as a graph, each pass's
 * logits copied back behind it; failures are left in b->cu_err.
 */
static void
fg_cuda_run(fg_backend_t *b, const fg_backend_batch_t *batch,
    const fg_cuda_step_t *st, size_t np, float *logits)
{
    size_t            k, vocab;
    fg_cuda_pass_t   *pass;
    cudaGraphExec_t   exec;

    vocab = b->hp->n_vocab;

    for (k = 0; k < np; k++) {
        pass = &b->passes[k];
        exec = NULL;

        if (b->use_graphs && np == 1 && pass->n_out == pass->n
            && pass->n == batch->n_seqs && pass->n <= b->max_batch)
        {
            exec = fg_cuda_graph(b, st, pass->n);
        }

        if (exec) {
            fg_cuda_check(b, cudaGraphLaunch(exec, b->stream),
                          "cudaGraphLaunch");

        } else {
            fg_cuda_pass(b, st, pass->r0, pass->n, pass->o0, pass->n_out);
        }

        if (pass->n_out) {
            fg_cuda_check(b, cudaMemcpyAsync(logits + pass->o0 * vocab,
                                             b->logits,
                                             pass->n_out * vocab
                                             * sizeof(float),
                                             cudaMemcpyDeviceToHost,
                                             b->stream),
                          "copying the logits");
        }
    }
}


int
fg_cuda_forward(fg_backend_t *b, const fg_backend_batch_t *batch,
    float *logits, char *err, size_t errlen)
{
    size_t          rows, outs, max_blocks, np;
    cudaError_t     ce;
    fg_cuda_step_t  st;

    if (fg_cuda_check_batch(b, batch, &rows, &outs, &max_blocks, err,
                            errlen)
        != 0)
    {
        return -1;
    }

    if (rows == 0) {
        return 0;
    }

    fg_cuda_step_layout(&st, rows, outs, batch->n_seqs, max_blocks);

    if (fg_cuda_step_grow(b, st.end, err, errlen) != 0) {
        return -1;
    }

    if (fg_cuda_passes_grow(b, rows) != 0) {
        snprintf(err, errlen, "out of memory for a step of %zu rows", rows);
        return -1;
    }

    np = fg_cuda_stage(b, batch, &st);

    ce = cudaMemcpyAsync(b->d_step, b->h_step, st.end * sizeof(int32_t),
                         cudaMemcpyHostToDevice, b->stream);

    if (fg_cuda_fail(ce, "copying the step", err, errlen) != 0) {
        return -1;
    }

    b->cu_err = cudaSuccess;
    b->cu_what = NULL;

    fg_cuda_run(b, batch, &st, np, logits);

    ce = cudaStreamSynchronize(b->stream);

    if (b->cu_err != cudaSuccess) {
        snprintf(err, errlen, "cuda: %s: %s", b->cu_what,
                 cudaGetErrorString(b->cu_err));
        return -1;
    }

    return fg_cuda_fail(ce, "the step", err, errlen);
}
