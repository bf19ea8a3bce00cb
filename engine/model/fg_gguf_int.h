
/*
 * fairgate: what the GGUF reader, its typed getters, the tensor type
 * conversions, the Llama binding and the tokenizer's loading share, private
 * to engine/model/: the message writer of their err buffers, unaligned
 * little-endian loads of the file's bytes, and the sizes of metadata values.
 */

#ifndef _FG_GGUF_INT_H_INCLUDED_
#define _FG_GGUF_INT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fg_err.h"
#include "fg_gguf.h"


#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "fg_gguf reads little-endian files in place: little-endian hosts only"
#endif


/* bytes of one scalar of each value type; strings and arrays vary */
extern const uint8_t  fg_gguf_vtype_size[FG_GGUF_NTYPES];


static inline uint16_t
fg_gguf_u16(const uint8_t *p)
{
    uint16_t  v;

    memcpy(&v, p, sizeof(v));
    return v;
}


static inline uint32_t
fg_gguf_u32(const uint8_t *p)
{
    uint32_t  v;

    memcpy(&v, p, sizeof(v));
    return v;
}


static inline uint64_t
fg_gguf_u64(const uint8_t *p)
{
    uint64_t  v;

    memcpy(&v, p, sizeof(v));
    return v;
}


#endif /* _FG_GGUF_INT_H_INCLUDED_ */
