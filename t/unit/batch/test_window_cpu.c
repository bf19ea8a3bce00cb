
/*
 * fairgate: sliding-window layers in slots of their own on the cpu
 * backend (engine/kv/fg_kv.h, "Sliding-window layers"): a gemma3 file of
 * window 32 (blocks of 16), prompts of up to 265 tokens, give greedy,
 * token for token, what the cache of every position gives: alone, three
 * at once in chunks, a chat's next turn over a conversation longer than
 * the window through the prefix cache (which starts after it), a prefix
 * whose window was let go (computed again), and a sequence swapped out
 * and back mid-answer, three choices of one request sampled with a
 * seed.  The slots are fewer than the blocks, and all free again at the
 * end.
 */


#include "fg_test_file.h"
#include "fg_test_prefix.h"
#include "fg_batch_int.h"
#include "fg_ggml_types.h"


#define W_WINDOW    32
#define W_ANSWER    60
#define W_VOCAB     300


static char      w_path[512];
static int32_t   w_p[3][200];
static uint32_t  w_n[3] = { 200, 150, 150 };


static int
w_model(void)
{
    char                err[512];
    fg_gguf_gen_conf_t  c;

    snprintf(w_path, sizeof(w_path), "%s/window.gguf", dir);
    fg_test_gguf_shape(&c, FG_GGML_F32, 64, 6, 128, 4, 2);
    c.arch = "gemma3";
    c.n_vocab = W_VOCAB;
    c.n_ctx = 2048;
    c.n_swa = W_WINDOW;
    c.rope_base = 1e6f;
    c.rope_base_swa = 1e4f;
    c.seed = 31;

    if (fg_gguf_gen_file(&c, w_path, err, sizeof(err)) != 0) {
        ok(0, "generate %s: %s", w_path, err);
        return -1;
    }

    return 0;
}


/* one thread, 4 sequences and 64 tokens a step, 256 blocks of 16 */
static fg_backend_conf_t
w_conf(uint32_t window)
{
    fg_backend_conf_t  conf;

    fg_test_backend_conf(&conf, w_path, 256, 16, 4, 64, 1);
    conf.kv_window = window;

    return conf;
}


/* the slots all free (the cached blocks evicted) and nothing held */
static int
w_all_free(px_rig_t *r)
{
    fg_kv_evict(r->kv, fg_kv_n_blocks(r->kv));

    return px_idle(r) && r->bad == 0
           && fg_kv_window_free(r->kv) == fg_kv_window_slots(r->kv);
}


static void
test_alone(const px_out_t *ref)
{
    int                same, i;
    px_rig_t           r;
    fg_backend_conf_t  conf;

    conf = w_conf(1);

    if (px_open(&r, &fg_backend_cpu, &conf, 0) != 0) {
        ok(0, "window rig");
        return;
    }

    ok(fg_kv_window(r.kv) == W_WINDOW && fg_kv_window_slots(r.kv) == 24
       && r.batch->info.kv_window_bytes * 6
          == r.batch->info.kv_bytes_per_block * 5,
       "the sliding layers (5 of 6) in 24 slots for 256 blocks: 4 x (2 + "
       "3) + 64 / 16");

    same = 1;

    for (i = 0; i < 3; i++) {
        same &= px_same(px_alone(&r, (uint64_t) i, w_p[i], w_n[i],
                                 W_ANSWER),
                        &ref[i]);
    }

    ok(same, "alone, prompts of 200 and 150: the same %u tokens as with "
       "every position kept", W_ANSWER);

    for (i = 0; i < 3; i++) {
        px_submit(&r, (uint64_t) i, w_p[i], w_n[i], W_ANSWER);
    }

    same = px_run(&r) == 0;

    for (i = 0; i < 3; i++) {
        same &= px_same(&r.out[i], &ref[i]);
    }

    ok(same, "three at once, in chunks of a step of 64: the same");
    ok(w_all_free(&r), "every slot free at the end");

    px_close(&r);
}


/* a conversation of 260 positions, then its next turn; then a prompt
 * sharing its first 100 tokens */
static void
test_prefix(const px_out_t *ref)
{
    int32_t             turn[270];
    px_rig_t            r, off;
    px_out_t            first, want, want2;
    fg_backend_conf_t   conf;
    const px_out_t     *o;

    memcpy(turn, w_p[0], 200 * sizeof(int32_t));
    memcpy(turn + 200, ref[0].tokens, W_ANSWER * sizeof(int32_t));
    px_tokens(turn + 260, 5, W_VOCAB, 41);

    conf = w_conf(0);
    px_open(&off, &fg_backend_cpu, &conf, 0);
    want = *px_alone(&off, 5, turn, 265, 20);
    want2 = *px_alone(&off, 6, w_p[2], 150, 20);
    px_close(&off);

    conf = w_conf(1);
    px_open(&r, &fg_backend_cpu, &conf, 1);
    o = px_alone(&r, 0, w_p[0], 200, W_ANSWER);
    first = o ? *o : first;

    o = px_alone(&r, 5, turn, 265, 20);
    ok(px_same(o, &want), "the next turn over a conversation past the "
       "window: the same tokens");
    ok(o && o->n_cached == 256, "... with its 16 full blocks from the "
       "prefix cache (%u cached)", o ? o->n_cached : 0);

    o = px_alone(&r, 6, w_p[2], 150, 20);
    ok(px_same(o, &want2) && o->n_cached == 0, "a prompt sharing 100 "
       "tokens that the conversation went past: computed again, the same "
       "tokens (%u cached)", o ? o->n_cached : 0);
    ok(w_all_free(&r), "every slot free at the end");

    px_close(&r);
}


/* swapped out after 10 tokens of its answer, then back */
static void
test_swap(const px_out_t *ref)
{
    char               err[512];
    uint32_t           i;
    px_rig_t           r;
    fg_batch_stats_t   st;
    fg_backend_conf_t  conf;

    conf = w_conf(1);

    if (px_open_as(&r, &fg_backend_cpu, &conf, 0, FG_PREEMPT_SWAP, 0) != 0
        || px_submit(&r, 0, w_p[0], 200, W_ANSWER) != FG_BATCH_OK)
    {
        ok(0, "swap rig");
        return;
    }

    for (i = 0; i < 100 && r.out[0].n < 10; i++) {
        fg_batch_step(r.batch, err, sizeof(err));
    }

    fg_batch_preempt_seq(r.batch, r.batch->running.head);
    px_run(&r);
    fg_batch_stats(r.batch, &st);

    ok(st.swap_outs == 1 && st.swap_ins == 1
       && px_same(&r.out[0], &ref[0]), "swapped out at position 210 and "
       "back: the same tokens (%u out, %u in)", (unsigned) st.swap_outs,
       (unsigned) st.swap_ins);
    ok(w_all_free(&r), "every slot free at the end");

    px_close(&r);
}


/* a cache sized from a budget of bytes: more blocks with the window */
static void
test_budget(void)
{
    char                err[256];
    size_t              full, win;
    uint64_t            budget;
    fg_backend_t       *b;
    fg_backend_info_t   info;
    fg_backend_conf_t   conf;

    budget = 4 << 20;
    conf = w_conf(0);
    conf.kv_blocks = 0;
    conf.kv_bytes = budget;
    b = fg_backend_cpu.create(&conf, err, sizeof(err));

    if (b == NULL) {
        ok(0, "budget: %s", err);
        return;
    }

    memset(&info, 0, sizeof(info));
    fg_backend_cpu.info(b, &info);
    fg_backend_cpu.destroy(b);
    full = info.kv_bytes_per_block;
    is_int(info.kv_blocks, budget / full, "4 MiB without the window: "
           "blocks of every layer (%zu bytes each)", full);

    conf.kv_window = 1;
    b = fg_backend_cpu.create(&conf, err, sizeof(err));
    memset(&info, 0, sizeof(info));
    fg_backend_cpu.info(b, &info);
    fg_backend_cpu.destroy(b);
    win = info.kv_window_bytes;

    ok(info.kv_window_slots == 24
       && info.kv_blocks == (budget - win * 24) / (full - win)
       && info.kv_blocks > 4 * (budget / full),
       "with it: 24 slots, then blocks of the global layer, %u of them",
       info.kv_blocks);

    conf.kv_bytes = 1000;
    b = fg_backend_cpu.create(&conf, err, sizeof(err));
    ok(b == NULL && strstr(err, "holds no block") != NULL,
       "a budget below a block is refused: %s", err);
}


/* three choices of the first prompt at temperature 0.8, seeded, on a rig
 * with window (or not) and cache (or not); 0 when they all ran */
static int
w_choices(uint32_t window, int cache, px_out_t *out)
{
    char               err[256];
    int                rc;
    px_rig_t           r;
    fg_batch_req_t     req;
    fg_backend_conf_t  conf;

    conf = w_conf(window);

    if (px_open(&r, &fg_backend_cpu, &conf, cache) != 0) {
        return -1;
    }

    fg_test_batch_req(&req, 10, w_p[0], 200, 30, 1);
    req.n = 3;
    req.sampling.temperature = 0.8f;
    req.sampling.seed = 77;
    memset(&r.out[10], 0, 3 * sizeof(px_out_t));

    rc = fg_batch_submit(r.batch, &req, err, sizeof(err)) == FG_BATCH_OK
         && px_run(&r) == 0 && w_all_free(&r) ? 0 : -1;

    memcpy(out, &r.out[10], 3 * sizeof(px_out_t));
    px_close(&r);

    return rc;
}


static void
test_choices(void)
{
    int       cache, c, same;
    px_out_t  ref[3], got[3];

    for (cache = 0; cache < 2; cache++) {
        same = w_choices(0, cache, ref) == 0
               && w_choices(1, cache, got) == 0;

        for (c = 0; c < 3; c++) {
            same = same && px_same(&ref[c], &got[c]) && ref[c].n == 30;
        }

        ok(same, "three choices of a prompt of 200, sampled with a seed, "
           "the prefix cache %s: each the same 30 tokens, every slot free "
           "at the end", cache ? "on" : "off");
    }
}


int
main(void)
{
    int                i;
    px_rig_t           r;
    px_out_t           ref[3];
    fg_backend_conf_t  conf;

    fg_test_dir_make("window_cpu");

    if (w_model() != 0) {
        fg_test_dir_remove();
        return fg_tap_done();
    }

    px_tokens(w_p[0], 200, W_VOCAB, 21);
    px_tokens(w_p[1], 150, W_VOCAB, 22);
    memcpy(w_p[2], w_p[0], 100 * sizeof(int32_t));
    px_tokens(w_p[2] + 100, 50, W_VOCAB, 23);

    conf = w_conf(0);
    px_open(&r, &fg_backend_cpu, &conf, 0);
    ok(fg_kv_window(r.kv) == 0, "--kv-window off: no slots");

    for (i = 0; i < 3; i++) {
        ref[i] = *px_alone(&r, (uint64_t) i, w_p[i], w_n[i], W_ANSWER);
    }

    px_close(&r);

    test_alone(ref);
    test_prefix(ref);
    test_swap(ref);
    test_choices();
    test_budget();

    fg_test_dir_remove();

    return fg_tap_done();
}
