
/*
 * fairgate: the sim backend: no weights, the time of a real engine, and a
 * token stream that behaves like a model's.
 *
 * Time: each step sleeps what the step-time model (fg_step_model.h) says
 * the batch costs, divided by the speed-up: a prefill chunk of n tokens at
 * position p costs prefill(p + n) - prefill(p) (prefill(n) for the first
 * chunk, which carries the per-request overhead; a first chunk past a
 * cached prefix carries it too: fg_step_model_chunk()), and a decode token
 * at position p costs decode(p, 1), the measured cost of one request's
 * token at that context length, and each step what every step costs once
 * (fg_step_model_step(): the gpu model's weights' read).  Steps are timed
 * against a running deadline, so that many short steps keep the model's
 * rate even though each sleep overshoots a little.
 *
 * Tokens: the "KV cache" holds one 64-bit hash per position, the hash of
 * the token there mixed with the hash at the position before, so position
 * p's hash digests the whole sequence up to p.  The logits of a sequence
 * make its greedy token a function of that hash: a request gets the same
 * tokens alone or in any batch, and a batcher that gives a sequence the
 * wrong blocks, or overwrites a shared one, changes what comes out, as it
 * would with a real model.  The stream draws from the vocabulary's normal
 * tokens (never EOS, BOS, control or byte tokens; 0-2 are held back when
 * there is no model file), so outputs run to max_tokens, as in the VTC
 * paper's set-up where output lengths are fixed.  Logits are 4 for the
 * greedy token, 3 and 2 for two others, -8 for the other tokens it may
 * draw, so that temperature, top-k and top-p have a real distribution to
 * work on, and -1e30 for the held-back ones, which sampling never picks
 * (at -8 an EOS came once in some 10^5 sampled tokens, and cut a
 * response short).
 *
 * Writing vocab floats per sequence would cost more than the step it
 * models (32 MB a step at batch 256 and 32k tokens), so when the caller
 * hands back the buffer of the previous step (the batcher always does,
 * and never writes into it) only the three entries set last time in each
 * row are put back to the background.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fg_backend.h"
#include "fg_gguf.h"
#include "fg_llama.h"
#include "fg_mem.h"
#include "fg_step_model.h"
#include "fg_tokenizer.h"


/* about the A10G Llama-2-7B profile's averages (docs/engine-runtime.md) */
#define FG_SIM_STEP_MODEL   "linear:0.0002,0.0005"
#define FG_SIM_VOCAB        32000
#define FG_SIM_CONTEXT      4096
#define FG_SIM_RESERVED     3           /* unk, bos, eos without a model */
#define FG_SIM_SEED         0x66616972676174ULL
#define FG_SIM_BACKGROUND   -8.0f
#define FG_SIM_NEVER        -1e30f      /* EOS, control: never sampled */

/* a run of steps closer together than this keeps its deadline chain */
#define FG_SIM_EMBD         16          /* its embeddings' width */
#define FG_SIM_CHAIN_NS     2000000


struct fg_backend_s {
    fg_step_model_t    *model;
    double              speedup;
    fg_backend_info_t   info;
    uint32_t            kv_blocks;
    uint32_t            block_size;

    uint64_t           *hash;           /* [kv_blocks][block_size] */

    int32_t            *ids;            /* tokens the stream draws from */
    uint32_t            n_ids;
    float              *background;     /* [vocab]: a row before the
                                           three tokens of a step */

    /* the last logits buffer: rows filled with the background so far,
     * and the entries set in each */
    const float        *rows_buf;
    uint32_t            rows_ready;
    uint32_t            rows_max;
    int32_t            *rows_set;       /* [rows_max][3] */

    uint64_t            deadline;       /* ns, CLOCK_MONOTONIC */
};


static fg_backend_t *fg_sim_create(const fg_backend_conf_t *conf, char *err,
    size_t errlen);
static void fg_sim_destroy(fg_backend_t *b);
static void fg_sim_info(fg_backend_t *b, fg_backend_info_t *info);
static int fg_sim_forward(fg_backend_t *b, const fg_backend_batch_t *batch,
    float *logits, char *err, size_t errlen);


const fg_backend_ops_t  fg_backend_sim = {
    "sim",
    fg_sim_create,
    fg_sim_destroy,
    fg_sim_info,
    fg_sim_forward,
    NULL,                       /* no KV to swap: swap preemption */
    NULL,                       /* recomputes on sim */
    NULL                        /* no sliding layers' slots */
};


/* vocabulary and shape from a GGUF file's metadata; the weights unused */
static int
fg_sim_read_model(fg_backend_t *b, const char *path, char *err,
    size_t errlen)
{
    int              rc;
    char             piece[8], gerr[FG_GGUF_ERR_LEN];
    int32_t          id;
    uint32_t         n_head, n_embd;
    fg_gguf_t       *g;
    fg_tokenizer_t  *tok;

    g = fg_gguf_open(path, gerr, sizeof(gerr));

    if (g == NULL) {
        snprintf(err, errlen, "sim backend: %s", gerr);
        return -1;
    }

    tok = fg_tokenizer_load(g, gerr, sizeof(gerr));

    if (tok == NULL) {
        snprintf(err, errlen, "sim backend: %s: %s", path, gerr);
        fg_gguf_close(g);
        return -1;
    }

    rc = -1;

    b->info.vocab = fg_tokenizer_n_vocab(tok);
    b->ids = malloc(b->info.vocab * sizeof(int32_t));

    if (b->ids == NULL) {
        snprintf(err, errlen, "sim backend: out of memory");
        goto done;
    }

    for (id = 0; (uint32_t) id < b->info.vocab; id++) {
        if (fg_tokenizer_type(tok, id) == FG_TOK_NORMAL
            && !fg_tokenizer_is_eog(tok, id))
        {
            b->ids[b->n_ids++] = id;
        }
    }

    if (b->n_ids == 0) {
        /*
         * A vocabulary of bytes alone (a generated model's): printable
         * ASCII byte tokens make a stream that still decodes to text.
         */
        for (id = 0; (uint32_t) id < b->info.vocab; id++) {
            if (fg_tokenizer_type(tok, id) == FG_TOK_BYTE
                && fg_tokenizer_piece(tok, id, 0, piece, sizeof(piece)) == 1
                && piece[0] >= 0x20 && piece[0] < 0x7f)
            {
                b->ids[b->n_ids++] = id;
            }
        }
    }

    if (b->n_ids == 0) {
        snprintf(err, errlen, "sim backend: %s has no normal or printable "
                 "byte token to generate", path);
        goto done;
    }

    b->info.context = fg_llama_meta_u32(g, "context_length", FG_SIM_CONTEXT);
    b->info.n_layer = fg_llama_meta_u32(g, "block_count", 0);
    n_head = fg_llama_meta_u32(g, "attention.head_count", 0);
    n_embd = fg_llama_meta_u32(g, "embedding_length", 0);
    b->info.n_kv_head = fg_llama_meta_u32(g, "attention.head_count_kv", n_head);
    /* heads need not fill the embedding (Qwen 3, Gemma 3) */
    b->info.head_dim = fg_llama_meta_u32(g, "attention.key_length",
                                         n_head ? n_embd / n_head : 0);

    rc = 0;

done:

    fg_tokenizer_free(tok);
    fg_gguf_close(g);

    return rc;
}


static fg_backend_t *
fg_sim_create(const fg_backend_conf_t *conf, char *err, size_t errlen)
{
    char           serr[256];
    uint32_t       i;
    const char    *spec;
    fg_backend_t  *b;

    if (conf->kv_blocks == 0) {
        snprintf(err, errlen, "sim backend: a KV cache of 0 blocks");
        return NULL;
    }

    if (!(conf->speedup >= 0.0) || conf->speedup > 1e12) {
        snprintf(err, errlen, "sim backend: speed-up %g is not a number "
                 "in (0, 1e12] (0 means 1)", conf->speedup);
        return NULL;
    }

    b = calloc(1, sizeof(fg_backend_t));

    if (b == NULL) {
        snprintf(err, errlen, "sim backend: out of memory");
        return NULL;
    }

    b->speedup = conf->speedup > 0.0 ? conf->speedup : 1.0;
    b->kv_blocks = conf->kv_blocks;
    b->block_size = conf->block_size ? conf->block_size : 16;

    spec = conf->step_model && conf->step_model[0] ? conf->step_model
                                                   : FG_SIM_STEP_MODEL;

    b->model = fg_step_model_create(spec, serr, sizeof(serr));

    if (b->model == NULL) {
        snprintf(err, errlen, "sim backend: %s", serr);
        goto failed;
    }

    if (conf->model_path && conf->model_path[0]) {
        if (fg_sim_read_model(b, conf->model_path, err, errlen) != 0) {
            goto failed;
        }

    } else {
        b->info.vocab = conf->vocab ? conf->vocab : FG_SIM_VOCAB;
        b->info.context = FG_SIM_CONTEXT;

        if (b->info.vocab <= FG_SIM_RESERVED || b->info.vocab > INT32_MAX) {
            snprintf(err, errlen, "sim backend: a vocabulary of %u tokens "
                     "(at least %u)", b->info.vocab, FG_SIM_RESERVED + 1);
            goto failed;
        }

        b->ids = malloc((b->info.vocab - FG_SIM_RESERVED) * sizeof(int32_t));

        if (b->ids == NULL) {
            snprintf(err, errlen, "sim backend: out of memory");
            goto failed;
        }

        for (i = FG_SIM_RESERVED; i < b->info.vocab; i++) {
            b->ids[b->n_ids++] = (int32_t) i;
        }
    }

    b->hash = calloc((size_t) b->kv_blocks * b->block_size,
                     sizeof(uint64_t));

    if (b->hash == NULL) {
        snprintf(err, errlen, "sim backend: no memory for %u KV blocks",
                 b->kv_blocks);
        goto failed;
    }

    b->info.kv_bytes_per_block = b->block_size * sizeof(uint64_t);
    b->info.n_embd = FG_SIM_EMBD;

    b->background = malloc((size_t) b->info.vocab * sizeof(float));

    if (b->background == NULL) {
        snprintf(err, errlen, "sim backend: out of memory");
        goto failed;
    }

    for (i = 0; i < b->info.vocab; i++) {
        b->background[i] = FG_SIM_NEVER;
    }

    for (i = 0; i < b->n_ids; i++) {
        b->background[b->ids[i]] = FG_SIM_BACKGROUND;
    }

    b->rows_max = conf->max_batch ? conf->max_batch : 256;
    b->rows_set = malloc((size_t) b->rows_max * 3 * sizeof(int32_t));

    if (b->rows_set == NULL) {
        snprintf(err, errlen, "sim backend: out of memory");
        goto failed;
    }

    return b;

failed:

    fg_sim_destroy(b);

    return NULL;
}


static void
fg_sim_destroy(fg_backend_t *b)
{
    if (b == NULL) {
        return;
    }

    fg_step_model_destroy(b->model);
    fg_free_all(b->hash, b->ids, b->background, b->rows_set, b);
}


static void
fg_sim_info(fg_backend_t *b, fg_backend_info_t *info)
{
    *info = b->info;
}


static uint64_t
fg_sim_mix(uint64_t h, int32_t token, uint32_t pos)
{
    h ^= (uint64_t) (uint32_t) token * 0x9e3779b97f4a7c15ULL;
    h ^= (uint64_t) pos * 0xc2b2ae3d27d4eb4fULL;
    h = (h ^ (h >> 31)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 29)) * 0x94d049bb133111ebULL;

    return h ^ (h >> 32);
}


/*
 * An embedding without weights: each token stands for a fixed vector of
 * FG_SIM_EMBD values in [-1, 1) drawn from its id, and a sequence's new
 * tokens' vectors are summed into its row (the batcher pools them), so a
 * text's vector is the same in any chunks, batch or engine.
 */
static void
fg_sim_hidden(fg_backend_t *b, const fg_backend_seq_t *sq, float *row)
{
    uint32_t  i, k;
    uint64_t  h;

    (void) b;

    for (k = 0; k < FG_SIM_EMBD; k++) {
        row[k] = 0.0f;
    }

    for (i = 0; i < sq->n_tokens; i++) {
        for (k = 0; k < FG_SIM_EMBD; k++) {
            h = fg_sim_mix(FG_SIM_SEED, sq->tokens[i], k);
            row[k] += (float) ((double) (h >> 11) / (double) (1ULL << 52)
                               - 1.0);
        }
    }
}


static uint64_t *
fg_sim_slot(fg_backend_t *b, const fg_backend_seq_t *sq, uint32_t pos)
{
    int32_t  block;

    block = sq->block_table[pos / b->block_size];

    return &b->hash[(size_t) block * b->block_size + pos % b->block_size];
}


static int
fg_sim_check(fg_backend_t *b, const fg_backend_seq_t *sq, uint32_t s,
    char *err, size_t errlen)
{
    uint32_t  i;
    uint64_t  end;

    end = (uint64_t) sq->pos + sq->n_tokens;

    if (sq->n_tokens == 0 || end > b->info.context) {
        snprintf(err, errlen, "sim backend: sequence %u of the step has %u "
                 "tokens at position %u (context %u)", s, sq->n_tokens,
                 sq->pos, b->info.context);
        return -1;
    }

    if ((uint64_t) sq->n_blocks * b->block_size < end) {
        snprintf(err, errlen, "sim backend: sequence %u of the step reaches "
                 "position %llu with %u blocks", s,
                 (unsigned long long) end - 1, sq->n_blocks);
        return -1;
    }

    for (i = 0; i < sq->n_blocks; i++) {
        if (sq->block_table[i] < 0
            || (uint32_t) sq->block_table[i] >= b->kv_blocks)
        {
            snprintf(err, errlen, "sim backend: sequence %u of the step "
                     "has block %d (the pool has %u)", s,
                     sq->block_table[i], b->kv_blocks);
            return -1;
        }
    }

    for (i = 0; i < sq->n_tokens; i++) {
        if (sq->tokens[i] < 0 || (uint32_t) sq->tokens[i] >= b->info.vocab) {
            snprintf(err, errlen, "sim backend: sequence %u of the step "
                     "has token %d (vocabulary %u)", s, sq->tokens[i],
                     b->info.vocab);
            return -1;
        }
    }

    return 0;
}


static uint64_t
fg_sim_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}


static void
fg_sim_sleep(fg_backend_t *b, double seconds)
{
    uint64_t         now, dt;
    struct timespec  ts;

    now = fg_sim_now();
    dt = (uint64_t) (seconds / b->speedup * 1e9);

    /* steps back to back: the time owed continues from the last deadline,
     * so that the overshoot of each sleep is paid back by the next */
    if (b->deadline + FG_SIM_CHAIN_NS >= now) {
        b->deadline += dt;

    } else {
        b->deadline = now + dt;
    }

    if (b->deadline <= now) {
        return;
    }

    ts.tv_sec = (time_t) (b->deadline / 1000000000ULL);
    ts.tv_nsec = (long) (b->deadline % 1000000000ULL);

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)
           == EINTR)
    {
        /* a signal: the engine's loop sees its flag after the step */
    }
}


/* the row's logits for hash h (layout above) */
static void
fg_sim_logits(fg_backend_t *b, float *row, uint32_t r, uint64_t h)
{
    int32_t   *set;
    uint32_t   i;

    if (r < b->rows_ready) {
        set = &b->rows_set[r * 3];

        for (i = 0; i < 3; i++) {
            row[set[i]] = FG_SIM_BACKGROUND;
        }

    } else {
        memcpy(row, b->background, (size_t) b->info.vocab * sizeof(float));

        if (r == b->rows_ready && r < b->rows_max) {
            b->rows_ready++;
        }
    }

    /* the greedy token last, should an alternative fall on it */
    set = r < b->rows_max ? &b->rows_set[r * 3] : NULL;

    if (set) {
        set[0] = b->ids[(h >> 24) % b->n_ids];
        set[1] = b->ids[(h >> 44) % b->n_ids];
        set[2] = b->ids[h % b->n_ids];
    }

    row[b->ids[(h >> 24) % b->n_ids]] = 2.0f;
    row[b->ids[(h >> 44) % b->n_ids]] = 3.0f;
    row[b->ids[h % b->n_ids]] = 4.0f;
}


static int
fg_sim_forward(fg_backend_t *b, const fg_backend_batch_t *batch,
    float *logits, char *err, size_t errlen)
{
    float                   *row;
    double                   cost;
    uint32_t                 s, i, pos, r;
    uint64_t                 h;
    const fg_backend_seq_t  *sq;

    for (s = 0; s < batch->n_seqs; s++) {
        if (fg_sim_check(b, &batch->seqs[s], s, err, errlen) != 0) {
            return -1;
        }

        if (batch->seqs[s].want_hidden && batch->hidden == NULL) {
            snprintf(err, errlen, "sim backend: sequence %u of the step "
                     "wants hidden states, the step has no room", s);
            return -1;
        }

        if (batch->seqs[s].want_all) {
            snprintf(err, errlen, "sim backend: sequence %u of the step "
                     "wants every position's logits, it gives the last "
                     "alone", s);
            return -1;
        }
    }

    if (logits != b->rows_buf) {
        b->rows_buf = logits;
        b->rows_ready = 0;
    }

    /* the weights' read, once a step (gpu models) */
    cost = batch->n_seqs ? fg_step_model_step(b->model) : 0.0;
    row = logits;
    r = 0;

    for (s = 0; s < batch->n_seqs; s++) {
        sq = &batch->seqs[s];

        cost += fg_step_model_chunk(b->model, sq->pos, sq->n_tokens,
                                    sq->first);

        h = sq->pos ? *fg_sim_slot(b, sq, sq->pos - 1) : FG_SIM_SEED;

        for (i = 0; i < sq->n_tokens; i++) {
            pos = sq->pos + i;
            h = fg_sim_mix(h, sq->tokens[i], pos);
            *fg_sim_slot(b, sq, pos) = h;
        }

        if (sq->want_hidden) {
            fg_sim_hidden(b, sq, batch->hidden + (size_t) s * FG_SIM_EMBD);
        }

        if (!sq->want_logits) {
            continue;
        }

        fg_sim_logits(b, row, r++, h);
        row += b->info.vocab;
    }

    fg_sim_sleep(b, cost > 0.0 ? cost : 0.0);

    return 0;
}
