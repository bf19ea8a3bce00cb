
/*
 * fairgate: fairgate-gguf-gen --convert: an F32, F16 or BF16 GGUF model
 * written again in another type or one of llama.cpp's mixtures
 * (fg_gguf_mix.h), every metadata entry and every tensor as it was but
 * the matrices' types, general.file_type and the quantization version.
 */

#ifndef _FG_GGUF_CONVERT_H_INCLUDED_
#define _FG_GGUF_CONVERT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/*
 * Writes in as path out (removed again on a failure) with the matrices in
 * type and mix: 0, or -1 with a message in err.
 */
int fg_gguf_convert(const char *in, const char *out, uint32_t type,
    uint32_t mix, char *err, size_t errlen);


#endif /* _FG_GGUF_CONVERT_H_INCLUDED_ */
