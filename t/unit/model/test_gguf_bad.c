
/*
 * fairgate: tests of the GGUF reader on broken files: each malformation
 * fails with a message that names it, and nothing is read out of bounds
 * (each file sits in a buffer of exactly its size: run under valgrind or
 * ASan to see it).
 */


#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_ggml_types.h"
#include "fg_gguf.h"
#include "fg_gguf_write.h"
#include "fg_llama.h"


typedef struct {
    uint8_t  *p;
    size_t    len;
    size_t    cap;
} buf_t;


static void
put(buf_t *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }

    memcpy(b->p + b->len, p, n);
    b->len += n;
}


static void
put_u32(buf_t *b, uint32_t v)
{
    put(b, &v, 4);
}


static void
put_u64(buf_t *b, uint64_t v)
{
    put(b, &v, 8);
}


static void
put_str(buf_t *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}


static void
header(buf_t *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    b->len = 0;
    put(b, "GGUF", 4);
    put_u32(b, version);
    put_u64(b, n_tensors);
    put_u64(b, n_kv);
}


static void
kv_u32(buf_t *b, const char *key, uint32_t v)
{
    put_str(b, key);
    put_u32(b, FG_GGUF_UINT32);
    put_u32(b, v);
}


static void
tinfo(buf_t *b, const char *name, uint32_t n_dims, uint64_t ne0,
    uint64_t ne1, uint32_t type, uint64_t offset)
{
    put_str(b, name);
    put_u32(b, n_dims);

    if (n_dims > 0) {
        put_u64(b, ne0);
    }

    if (n_dims > 1) {
        put_u64(b, ne1);
    }

    put_u32(b, type);
    put_u64(b, offset);
}


static void
pad_data(buf_t *b, uint32_t align, size_t data)
{
    static const uint8_t  zero[1];

    while (b->len % align) {
        put(b, zero, 1);
    }

    while (data--) {
        put(b, zero, 1);
    }
}


/* opens a copy of exactly b->len bytes: any over-read is out of bounds */
static int
fails_with(buf_t *b, const char *want, const char *what)
{
    char       err[FG_GGUF_ERR_LEN];
    uint8_t   *copy;
    fg_gguf_t *g;

    copy = malloc(b->len ? b->len : 1);
    memcpy(copy, b->p, b->len);
    err[0] = '\0';

    g = fg_gguf_open_mem(copy, b->len, err, sizeof(err));

    if (g) {
        fg_gguf_close(g);
        free(copy);
        return ok(0, "%s: opened", what);
    }

    free(copy);

    if (!ok(strstr(err, want) != NULL, "%s: %s", what, err)) {
        diag("expected a message with \"%s\"", want);
        return 0;
    }

    return 1;
}


static void
test_header(void)
{
    buf_t       b = { NULL, 0, 0 };
    fg_gguf_t  *g;

    header(&b, 3, 0, 0);
    memcpy(b.p, "GGML", 4);
    fails_with(&b, "bad magic: not a GGUF file", "bad magic");

    header(&b, 1, 0, 0);
    fails_with(&b, "unsupported GGUF version 1", "version 1");

    header(&b, 4, 0, 0);
    fails_with(&b, "unsupported GGUF version 4", "version 4");

    header(&b, 0x03000000, 0, 0);
    fails_with(&b, "big-endian GGUF files are not supported", "big-endian");

    header(&b, 3, 0, 1ULL << 40);
    fails_with(&b, "metadata count 1099511627776 is absurd",
               "absurd metadata count");

    header(&b, 3, UINT64_MAX, 0);
    fails_with(&b, "tensor count 18446744073709551615 is absurd",
               "absurd tensor count");

    header(&b, 3, 1, 0);
    fails_with(&b, "tensor count 1 is absurd for a file of 24 bytes",
               "one tensor in an empty file");

    header(&b, 3, 0, 0);
    b.len = 20;
    fails_with(&b, "truncated file: metadata count at offset 16 needs 8",
               "header cut");

    header(&b, 3, 0, 0);
    g = fg_gguf_open_mem(b.p, b.len, NULL, 0);
    ok(g != NULL, "a file of just a header (no metadata, no tensors) opens");
    fg_gguf_close(g);

    free(b.p);
}


static void
test_metadata(void)
{
    buf_t  b = { NULL, 0, 0 };

    header(&b, 3, 0, 2);
    put_u64(&b, UINT64_MAX);
    put_u32(&b, 0);
    put_u64(&b, 0);
    put_u64(&b, 0);
    fails_with(&b, "truncated file: metadata entry 0: key at offset 32 "
               "needs 18446744073709551615 bytes", "key longer than the file");

    header(&b, 3, 0, 2);
    put_str(&b, "");
    put_u32(&b, 0);
    put_u64(&b, 0);
    put_u64(&b, 0);
    fails_with(&b, "metadata entry 0: key of 0 bytes", "empty key");

    header(&b, 3, 0, 2);
    kv_u32(&b, "a.b", 1);
    put_str(&b, "c.d");
    put_u32(&b, 13);
    put_u64(&b, 0);
    fails_with(&b, "metadata 'c.d': unknown value type 13",
               "unknown value type");

    header(&b, 3, 0, 2);
    kv_u32(&b, "a.b", 1);
    put_str(&b, "c.d");
    put_u32(&b, FG_GGUF_ARRAY);
    put_u32(&b, FG_GGUF_ARRAY);
    put_u64(&b, 1);
    fails_with(&b, "metadata 'c.d': arrays of arrays are not supported",
               "nested array");

    header(&b, 3, 0, 2);
    kv_u32(&b, "a.b", 1);
    put_str(&b, "c.d");
    put_u32(&b, FG_GGUF_ARRAY);
    put_u32(&b, 20);
    put_u64(&b, 1);
    fails_with(&b, "metadata 'c.d': unknown array element type 20",
               "unknown array element type");

    header(&b, 3, 0, 2);
    kv_u32(&b, "a.b", 1);
    put_str(&b, "c.d");
    put_u32(&b, FG_GGUF_ARRAY);
    put_u32(&b, FG_GGUF_UINT32);
    put_u64(&b, 1ULL << 61);
    put_u64(&b, 0);
    fails_with(&b, "truncated file: metadata 'c.d': array of "
               "2305843009213693952 uint32 elements", "array count absurd");

    header(&b, 3, 0, 2);
    kv_u32(&b, "a.b", 1);
    put_str(&b, "c.d");
    put_u32(&b, FG_GGUF_ARRAY);
    put_u32(&b, FG_GGUF_STRING);
    put_u64(&b, 1ULL << 40);
    put_u64(&b, 0);
    fails_with(&b, "array of 1099511627776 strings", "string count absurd");

    header(&b, 3, 0, 2);
    kv_u32(&b, "a.b", 1);
    put_str(&b, "c.d");
    put_u32(&b, FG_GGUF_ARRAY);
    put_u32(&b, FG_GGUF_STRING);
    put_u64(&b, 3);
    put_str(&b, "x");
    put_str(&b, "y");
    put_u64(&b, 100);
    put(&b, "zz", 2);
    fails_with(&b, "metadata 'c.d': string element at offset", "string cut");
    fails_with(&b, "(element 2)", "... naming the element");

    header(&b, 3, 0, 2);
    kv_u32(&b, "a.b", 1);
    kv_u32(&b, "a.b", 2);
    fails_with(&b, "duplicate metadata key 'a.b'", "duplicate key");

    header(&b, 3, 0, 1);
    put_str(&b, "general.alignment");
    put_u32(&b, FG_GGUF_UINT64);
    put_u64(&b, 64);
    fails_with(&b, "general.alignment has type uint64, not uint32",
               "alignment of the wrong type");

    header(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 48);
    fails_with(&b, "general.alignment 48 is not a power of two",
               "alignment 48");

    header(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 0);
    fails_with(&b, "general.alignment 0 is not a power of two",
               "alignment 0");

    free(b.p);
}


static void
test_tensors(void)
{
    buf_t  b = { NULL, 0, 0 };

    header(&b, 3, 1, 0);
    tinfo(&b, "", 1, 8, 0, FG_GGML_F32, 0);
    pad_data(&b, 32, 32);
    fails_with(&b, "tensor info 0: empty tensor name", "empty name");

    header(&b, 3, 1, 0);
    tinfo(&b, "0123456789012345678901234567890123456789012345678901234567"
          "890123", 1, 8, 0, FG_GGML_F32, 0);
    pad_data(&b, 32, 32);
    fails_with(&b, "is too long (64 bytes, at most 63)", "long name");

    header(&b, 3, 2, 0);
    tinfo(&b, "w", 1, 8, 0, FG_GGML_F32, 0);
    tinfo(&b, "w", 1, 8, 0, FG_GGML_F32, 32);
    pad_data(&b, 32, 64);
    fails_with(&b, "duplicate tensor name 'w'", "duplicate tensor");

    header(&b, 3, 1, 0);
    put_str(&b, "w");
    put_u32(&b, 5);
    pad_data(&b, 8, 64);
    fails_with(&b, "tensor 'w': 5 dimensions (at most 4)", "5 dimensions");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 2, 8, 0, FG_GGML_F32, 0);
    pad_data(&b, 32, 32);
    fails_with(&b, "tensor 'w': dimension 1 of 0 is empty", "empty dim");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 2, 1ULL << 32, 1ULL << 32, FG_GGML_F32, 0);
    pad_data(&b, 32, 32);
    fails_with(&b, "tensor 'w': dimension 1 of 4294967296 overflows the "
               "element count", "overflowing dims");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, 1ULL << 62, 0, FG_GGML_F32, 0);
    pad_data(&b, 32, 32);
    fails_with(&b, "tensor 'w': 4611686018427387904 elements of f32 "
               "overflow the byte size", "byte size overflow");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, 8, 0, 31, 0);
    pad_data(&b, 32, 32);
    fails_with(&b, "tensor 'w': unknown tensor type 31", "retired type 31");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, 8, 0, 1000, 0);
    pad_data(&b, 32, 32);
    fails_with(&b, "tensor 'w': unknown tensor type 1000", "type 1000");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 2, 33, 2, FG_GGML_Q8_0, 0);
    pad_data(&b, 32, 96);
    fails_with(&b, "first dimension 33 is not a multiple of q8_0's block "
               "of 32", "q8_0 row of 33");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, 8, 0, FG_GGML_F32, 4);
    pad_data(&b, 32, 64);
    fails_with(&b, "tensor 'w': data offset 4 is not a multiple of the "
               "alignment 32", "unaligned offset");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, 8, 0, FG_GGML_F32, 0);
    pad_data(&b, 32, 31);
    fails_with(&b, "truncated file: tensor 'w' (f32, 32 bytes at data offset "
               "0) lies outside the 31 bytes of tensor data",
               "data cut short");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, 8, 0, FG_GGML_F32, 1ULL << 63);
    pad_data(&b, 32, 32);
    fails_with(&b, "lies outside the 32 bytes of tensor data",
               "offset past the file");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, 8, 0, FG_GGML_F32, UINT64_MAX - 31);
    pad_data(&b, 32, 32);
    fails_with(&b, "lies outside", "offset + size wraps");

    /* b is 64 bytes at 0 but a is at 32: the sizes contradict */
    header(&b, 3, 2, 0);
    tinfo(&b, "a", 1, 8, 0, FG_GGML_F32, 32);
    tinfo(&b, "b", 1, 16, 0, FG_GGML_F32, 0);
    pad_data(&b, 32, 64);
    fails_with(&b, "tensors 'b' and 'a' overlap (64 bytes at 0, data at 32)",
               "overlapping tensors");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, 8, 0, FG_GGML_F32, 0);
    fails_with(&b, "truncated file: the tensor data would start at offset",
               "no data section");

    free(b.p);
}


/* a valid file with every kind of item, cut at every length */
static void
test_truncated_everywhere(void)
{
    int                bad;
    char              *buf, err[FG_GGUF_ERR_LEN];
    FILE              *f;
    size_t             size, len, end;
    uint8_t           *copy, data[64];
    uint64_t           ne[2];
    fg_gguf_t         *g;
    fg_gguf_writer_t  *w;

    static const char *const  strs[3] = { "a", "", "ccc" };
    static const int16_t      a16[2] = { 1, -1 };
    static const double       f64 = 2.5;

    w = fg_gguf_writer_new(3, 0);
    fg_gguf_w_str(w, "general.architecture", "llama");
    fg_gguf_w_u32(w, "k.u32", 7);
    fg_gguf_w_bool(w, "k.bool", 1);
    fg_gguf_w_scalar(w, "k.f64", FG_GGUF_FLOAT64, &f64);
    fg_gguf_w_arr(w, "k.a16", FG_GGUF_INT16, a16, 2);
    fg_gguf_w_arr_str(w, "k.strs", strs, NULL, 3);
    ne[0] = 4;
    ne[1] = 2;
    fg_gguf_w_tensor(w, "t.f32", FG_GGML_F32, 2, ne);
    ne[0] = 32;
    fg_gguf_w_tensor(w, "t.q8", FG_GGML_Q8_0, 1, ne);

    memset(data, 0x11, sizeof(data));
    f = open_memstream(&buf, &size);
    fg_gguf_w_write_header(w, f);
    fg_gguf_w_write_data(w, f, data, 32);
    fg_gguf_w_write_data(w, f, data, 34);
    fclose(f);
    fg_gguf_writer_free(w);

    g = fg_gguf_open_mem(buf, size, err, sizeof(err));
    ok(g != NULL, "the whole file (%zu bytes) opens", size);

    /* the padding after the last tensor's data is not needed */
    end = g ? g->data_offset + g->tensors[1].offset + g->tensors[1].size : 0;
    ok(end == size - 30, "its last 30 bytes are padding");
    fg_gguf_close(g);

    g = fg_gguf_open_mem(buf, end, err, sizeof(err));
    ok(g != NULL, "it opens without them");
    fg_gguf_close(g);

    bad = 0;

    for (len = 0; len < end; len++) {
        copy = malloc(len ? len : 1);
        memcpy(copy, buf, len);
        err[0] = '\0';

        g = fg_gguf_open_mem(copy, len, err, sizeof(err));

        if (g != NULL || strstr(err, "truncated") == NULL) {
            if (bad++ < 50) {
                diag("cut at %zu: %s", len, g ? "opened" : err);
            }

            fg_gguf_close(g);
        }

        free(copy);
    }

    is_int(bad, 0, "cut at each of %zu lengths: a message saying truncated",
           end);

    /* the same without a buffer for the message: refused all the same */

    bad = 0;

    for (len = 0; len < end; len++) {
        copy = malloc(len ? len : 1);
        memcpy(copy, buf, len);

        g = fg_gguf_open_mem(copy, len, NULL, 0);

        if (g != NULL) {
            bad++;
            fg_gguf_close(g);
        }

        free(copy);
    }

    is_int(bad, 0, "cut at each length with no error buffer: refused");

    free(buf);
}


/* errors in open() itself */
static void
test_files(void)
{
    int         fd;
    char        err[FG_GGUF_ERR_LEN], path[256];
    fg_gguf_t  *g;

    g = fg_gguf_open("/nonexistent/model.gguf", err, sizeof(err));
    ok(g == NULL && strcmp(err, "/nonexistent/model.gguf: No such file or "
                           "directory") == 0, "missing file: %s", err);

    g = fg_gguf_open("/tmp", err, sizeof(err));
    ok(g == NULL && strstr(err, "not a regular file") != NULL,
       "a directory: %s", err);

    snprintf(path, sizeof(path), "%s/fg-test-gguf-bad-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    fd = mkstemp(path);

    if (fd != -1) {
        if (write(fd, "GGUF\3\0\0\0", 8) != 8) {
            diag("write failed");
        }

        close(fd);
        g = fg_gguf_open(path, err, sizeof(err));
        ok(g == NULL && strstr(err, path) == err
           && strstr(err, ": truncated file: tensor count at offset 8 needs "
                     "8 bytes, 0 left") != NULL,
           "a cut file, named: %s", err);

        fd = open(path, O_WRONLY | O_TRUNC);
        close(fd);
        g = fg_gguf_open(path, err, sizeof(err));
        ok(g == NULL && strstr(err, "truncated file: 0 bytes") != NULL,
           "an empty file: %s", err);

        unlink(path);
    }
}


typedef struct {
    const char  *arch;
    const char  *omit_key;
    const char  *string_key;
    const char  *omit_tensor;
    const char  *wrong_tensor;
    uint32_t     n_head_kv;
    uint32_t     n_tokens;
    const char  *rope_scaling;
} llama_opts_t;


/* a one-block llama (embedding 64, 8 heads, ff 64, vocabulary 16) */
static fg_gguf_t *
llama_file(const llama_opts_t *o, char **buf)
{
    int                i, j;
    char               key[128], name[64], err[FG_GGUF_ERR_LEN];
    FILE              *f;
    size_t             size;
    uint64_t           ne[2], kv;
    fg_gguf_t         *g;
    fg_gguf_writer_t  *w;
    static float       zeros[64 * 64];

    static const char *const  keys[] = {
        "context_length", "embedding_length", "block_count",
        "feed_forward_length", "attention.head_count",
        "attention.head_count_kv", "attention.layer_norm_rms_epsilon"
    };

    static const char *const  tensors[] = {
        "token_embd.weight", "output_norm.weight", "blk.0.attn_norm.weight",
        "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight",
        "blk.0.attn_output.weight", "blk.0.ffn_norm.weight",
        "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight",
        "blk.0.ffn_down.weight"
    };

    const char  *tokens[32];

    w = fg_gguf_writer_new(3, 0);

    if (!o->omit_key || strcmp(o->omit_key, "general.architecture") != 0) {
        fg_gguf_w_str(w, "general.architecture", o->arch ? o->arch : "llama");
    }

    kv = o->n_head_kv ? o->n_head_kv : 4;

    for (i = 0; i < 7; i++) {
        snprintf(key, sizeof(key), "llama.%s", keys[i]);

        if (o->omit_key && strcmp(o->omit_key, key) == 0) {
            continue;
        }

        if (o->string_key && strcmp(o->string_key, key) == 0) {
            fg_gguf_w_str(w, key, "64");

        } else if (i == 6) {
            fg_gguf_w_f32(w, key, 1e-5f);

        } else {
            fg_gguf_w_u32(w, key, i == 2 ? 1 : i == 4 ? 8 : i == 5 ? kv
                                  : 64);
        }
    }

    if (o->rope_scaling) {
        fg_gguf_w_str(w, "llama.rope.scaling.type", o->rope_scaling);
    }

    for (i = 0; i < (int) (o->n_tokens ? o->n_tokens : 16); i++) {
        tokens[i] = "t";
    }

    fg_gguf_w_arr_str(w, "tokenizer.ggml.tokens", tokens, NULL,
                      o->n_tokens ? o->n_tokens : 16);

    for (i = 0; i < 11; i++) {
        if (o->omit_tensor && strcmp(o->omit_tensor, tensors[i]) == 0) {
            continue;
        }

        ne[0] = 64;
        ne[1] = i == 0 ? 16 : (i == 4 || i == 5) ? 8 * kv : 64;

        if (o->wrong_tensor && strcmp(o->wrong_tensor, tensors[i]) == 0) {
            ne[1] = 48;
        }

        snprintf(name, sizeof(name), "%s", tensors[i]);
        fg_gguf_w_tensor(w, name, FG_GGML_F32,
                         strstr(name, "norm") ? 1 : 2, ne);
    }

    f = open_memstream(buf, &size);
    fg_gguf_w_write_header(w, f);

    for (j = 0; fg_gguf_w_tensor_size(w, j); j++) {
        fg_gguf_w_write_data(w, f, zeros, fg_gguf_w_tensor_size(w, j));
    }

    fclose(f);

    if (fg_gguf_writer_error(w)[0]) {
        diag("writer: %s", fg_gguf_writer_error(w));
    }

    fg_gguf_writer_free(w);

    g = fg_gguf_open_mem(*buf, size, err, sizeof(err));

    if (g == NULL) {
        diag("%s", err);
    }

    return g;
}


static void
llama_fails_with(const llama_opts_t *o, const char *want, const char *what)
{
    char              *buf, err[FG_GGUF_ERR_LEN];
    fg_gguf_t         *g;
    fg_llama_model_t   m;

    g = llama_file(o, &buf);

    if (g == NULL) {
        ok(0, "%s: file opens", what);
        free(buf);
        return;
    }

    if (want == NULL) {
        ok(fg_llama_load(g, &m, err, sizeof(err)) == 0, "%s", what);
        fg_llama_free(&m);

    } else if (fg_llama_load(g, &m, err, sizeof(err)) == 0) {
        ok(0, "%s: loaded", what);
        fg_llama_free(&m);

    } else if (!ok(strstr(err, want) != NULL, "%s: %s", what, err)) {
        diag("expected a message with \"%s\"", want);
    }

    fg_gguf_close(g);
    free(buf);
}


static void
test_llama(void)
{
    llama_opts_t  o;

    memset(&o, 0, sizeof(o));
    llama_fails_with(&o, NULL, "the base model loads");

    o.arch = "gptx";
    llama_fails_with(&o, "metadata 'general.architecture': unsupported "
                     "architecture 'gptx' (fairgate runs llama, qwen2, "
                     "qwen3, gemma, gemma2, gemma3, phi3)",
                     "unknown architecture");
    o.arch = NULL;

    o.omit_key = "general.architecture";
    llama_fails_with(&o, "metadata 'general.architecture' is missing",
                     "no architecture");

    o.omit_key = "llama.block_count";
    llama_fails_with(&o, "metadata 'llama.block_count' is missing",
                     "no block count");

    o.omit_key = "llama.attention.layer_norm_rms_epsilon";
    llama_fails_with(&o, "metadata 'llama.attention.layer_norm_rms_epsilon' "
                     "is missing", "no epsilon");
    o.omit_key = NULL;

    o.string_key = "llama.embedding_length";
    llama_fails_with(&o, "metadata 'llama.embedding_length' has type string, "
                     "not an integer", "embedding length as a string");
    o.string_key = NULL;

    o.n_head_kv = 3;
    llama_fails_with(&o, "impossible shape: embedding 64, blocks 1, "
                     "feed-forward 64, heads 8, kv heads 3", "8 heads, 3 kv");
    o.n_head_kv = 0;

    o.omit_tensor = "blk.0.ffn_up.weight";
    llama_fails_with(&o, "tensor 'blk.0.ffn_up.weight' is missing",
                     "missing tensor");
    o.omit_tensor = NULL;

    o.wrong_tensor = "blk.0.attn_k.weight";
    llama_fails_with(&o, "tensor 'blk.0.attn_k.weight' has shape [64, 48, 1, "
                     "1], expected [64, 32]", "wrong shape");
    o.wrong_tensor = NULL;

    o.n_tokens = 10;
    llama_fails_with(&o, "token_embd.weight has 16 rows but the vocabulary "
                     "has 10 tokens", "vocabulary mismatch");
    o.n_tokens = 0;

    o.rope_scaling = "yarn";
    llama_fails_with(&o, "rope scaling 'yarn' is not supported", "yarn");
    o.rope_scaling = "linear";
    llama_fails_with(&o, NULL, "linear rope scaling loads");
    o.rope_scaling = NULL;
}


int
main(void)
{
    test_header();
    test_metadata();
    test_tensors();
    test_truncated_everywhere();
    test_files();
    test_llama();

    return done_testing();
}
