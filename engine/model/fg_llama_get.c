
/*
 * fairgate: what the Llama binding reads its file with (fg_llama.c for
 * every architecture, fg_llama_arch.c for what sets them apart): a
 * metadata key of the architecture, and a tensor checked for the shape
 * and a type the engine computes with.
 */


#include <math.h>
#include <stdio.h>

#include "fg_ggml_types.h"
#include "fg_gguf_int.h"
#include "fg_llama_int.h"


/* arch.key into u or f (the other NULL): 0, found or absent and not
 * required; -1 said in err */
static int
fg_llama_key(const fg_gguf_t *g, const char *arch, const char *key,
    uint32_t *u, float *f, int required, char *err, size_t errlen)
{
    int   rc;
    char  name[128];

    snprintf(name, sizeof(name), "%s.%s", arch, key);

    rc = u ? fg_gguf_get_u32(g, name, u, err, errlen)
           : fg_gguf_get_f32(g, name, f, err, errlen);

    if (rc == 1 && required) {
        fg_err_printf(err, errlen, "metadata '%s' is missing", name);
        return -1;
    }

    if (rc == 0 && f && !isfinite(*f)) {
        fg_err_printf(err, errlen, "metadata '%s' is not finite", name);
        return -1;
    }

    return rc == -1 ? -1 : 0;
}


int
fg_llama_key_u32(const fg_gguf_t *g, const char *arch, const char *key,
    uint32_t *out, int required, char *err, size_t errlen)
{
    return fg_llama_key(g, arch, key, out, NULL, required, err, errlen);
}


int
fg_llama_key_f32(const fg_gguf_t *g, const char *arch, const char *key,
    float *out, int required, char *err, size_t errlen)
{
    return fg_llama_key(g, arch, key, NULL, out, required, err, errlen);
}


/*
 * Finds a tensor the forward pass reads: ne0 x ne1 (ne1 == 0 for vectors),
 * of a type the engine computes with.
 */
int
fg_llama_tensor(const fg_gguf_t *g, const char *name, uint64_t ne0,
    uint64_t ne1, int required, const fg_gguf_tensor_t **out, char *err,
    size_t errlen)
{
    const fg_gguf_tensor_t  *t;

    t = fg_gguf_find_tensor(g, name);
    *out = t;

    if (t == NULL) {
        if (required) {
            fg_err_printf(err, errlen, "tensor '%s' is missing", name);
            return -1;
        }

        return 0;
    }

    if (t->ne[0] != ne0 || t->ne[1] != (ne1 ? ne1 : 1) || t->ne[2] != 1
        || t->ne[3] != 1)
    {
        fg_err_printf(err, errlen,
                      "tensor '%s' has shape [%llu, %llu, %llu, %llu], "
                      "expected [%llu, %llu]", name,
                      (unsigned long long) t->ne[0],
                      (unsigned long long) t->ne[1],
                      (unsigned long long) t->ne[2],
                      (unsigned long long) t->ne[3],
                      (unsigned long long) ne0,
                      (unsigned long long) (ne1 ? ne1 : 1));
        return -1;
    }

    if (!fg_ggml_type_supported(t->type)) {
        fg_err_printf(err, errlen,
                      "unsupported tensor type %u (%s) in tensor %s "
                      "(fairgate computes with f32, f16, bf16, q8_0)",
                      t->type, fg_ggml_type_name(t->type), name);
        return -1;
    }

    return 0;
}
