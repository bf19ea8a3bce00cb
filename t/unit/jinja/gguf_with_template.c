
/*
 * fairgate: a GGUF file copied with a chat template of one's own in its
 * tokenizer.chat_template, for the tests of local mode with a model's
 * own template (t/111).
 *
 *     gguf_with_template IN.gguf OUT.gguf TEMPLATE_FILE
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_gguf.h"
#include "fg_gguf_write.h"


static char *
slurp(const char *path)
{
    long   len;
    FILE  *f;
    char  *s;

    f = fopen(path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0
        || fseek(f, 0, SEEK_SET) != 0)
    {
        return NULL;
    }

    s = malloc(len + 1);

    if (s == NULL || fread(s, 1, len, f) != (size_t) len) {
        return NULL;
    }

    s[len] = '\0';
    fclose(f);

    return s;
}


int
main(int argc, char **argv)
{
    int                rc;
    FILE              *f;
    char              *tpl, err[FG_GGUF_ERR_LEN], name[256];
    uint64_t           i;
    fg_gguf_t         *g;
    fg_gguf_kv_t      *kv;
    fg_gguf_writer_t  *w;
    fg_gguf_tensor_t  *t;

    if (argc != 4) {
        fprintf(stderr, "usage: %s IN.gguf OUT.gguf TEMPLATE_FILE\n",
                argv[0]);
        return 2;
    }

    g = fg_gguf_open(argv[1], err, sizeof(err));
    tpl = slurp(argv[3]);

    if (g == NULL || tpl == NULL) {
        fprintf(stderr, "%s\n", g ? argv[3] : err);
        return 1;
    }

    w = fg_gguf_writer_new(g->version, g->alignment);
    rc = 0;

    for (i = 0; i < g->n_kv; i++) {
        kv = &g->kv[i];

        if (!(kv->key.len == 23
              && memcmp(kv->key.data, "tokenizer.chat_template", 23) == 0))
        {
            rc |= fg_gguf_w_copy(w, kv);
        }
    }

    rc |= fg_gguf_w_str(w, "tokenizer.chat_template", tpl);

    for (i = 0; i < g->n_tensors; i++) {
        t = &g->tensors[i];
        snprintf(name, sizeof(name), "%.*s", (int) t->name.len,
                 t->name.data);
        /* its index, or -1 */
        if (fg_gguf_w_tensor(w, name, t->type, t->n_dims, t->ne) < 0) {
            rc = -1;
        }
    }

    f = fopen(argv[2], "wb");
    rc |= f == NULL ? -1 : fg_gguf_w_write_header(w, f);

    for (i = 0; rc == 0 && i < g->n_tensors; i++) {
        t = &g->tensors[i];
        rc |= fg_gguf_w_write_data(w, f, t->data, t->size);
    }

    if (rc != 0 || f == NULL || fclose(f) != 0) {
        fprintf(stderr, "%s: %s\n", argv[2], fg_gguf_writer_error(w));
        return 1;
    }

    fg_gguf_writer_free(w);
    fg_gguf_close(g);
    free(tpl);

    return 0;
}
