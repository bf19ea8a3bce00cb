
/*
 * fairgate: ggml's tensor types: the size table, and which types the
 * engine computes with.
 */


#include "fg_ggml_types.h"


typedef struct {
    const char  *name;
    uint32_t     blck;
    uint32_t     size;
} fg_ggml_type_info_t;


/*
 * Block sizes and bytes per block of every type ggml has numbered, so that
 * a file with types the engine cannot compute still parses (and says which
 * tensor is the problem); numbers that ggml retired stay unknown.
 */
static const fg_ggml_type_info_t  fg_ggml_types[FG_GGML_NTYPES] = {
    [0]  = { "f32",     1,   4 },
    [1]  = { "f16",     1,   2 },
    [2]  = { "q4_0",    32,  18 },
    [3]  = { "q4_1",    32,  20 },
    [6]  = { "q5_0",    32,  22 },
    [7]  = { "q5_1",    32,  24 },
    [8]  = { "q8_0",    32,  34 },
    [9]  = { "q8_1",    32,  36 },
    [10] = { "q2_K",    256, 84 },
    [11] = { "q3_K",    256, 110 },
    [12] = { "q4_K",    256, 144 },
    [13] = { "q5_K",    256, 176 },
    [14] = { "q6_K",    256, 210 },
    [15] = { "q8_K",    256, 292 },
    [16] = { "iq2_xxs", 256, 66 },
    [17] = { "iq2_xs",  256, 74 },
    [18] = { "iq3_xxs", 256, 98 },
    [19] = { "iq1_s",   256, 50 },
    [20] = { "iq4_nl",  32,  18 },
    [21] = { "iq3_s",   256, 110 },
    [22] = { "iq2_s",   256, 82 },
    [23] = { "iq4_xs",  256, 136 },
    [24] = { "i8",      1,   1 },
    [25] = { "i16",     1,   2 },
    [26] = { "i32",     1,   4 },
    [27] = { "i64",     1,   8 },
    [28] = { "f64",     1,   8 },
    [29] = { "iq1_m",   256, 56 },
    [30] = { "bf16",    1,   2 },
    [34] = { "tq1_0",   256, 54 },
    [35] = { "tq2_0",   256, 66 },
    [39] = { "mxfp4",   32,  17 },
};


const char *
fg_ggml_type_name(uint32_t type)
{
    return type < FG_GGML_NTYPES ? fg_ggml_types[type].name : NULL;
}


/* the weights' types; Q8_1 and Q8_K are the kernels' activations only */
int
fg_ggml_type_supported(uint32_t type)
{
    switch (type) {
    case FG_GGML_F32:
    case FG_GGML_F16:
    case FG_GGML_BF16:
    case FG_GGML_Q4_0:
    case FG_GGML_Q4_1:
    case FG_GGML_Q5_0:
    case FG_GGML_Q5_1:
    case FG_GGML_Q8_0:
    case FG_GGML_Q2_K:
    case FG_GGML_Q3_K:
    case FG_GGML_Q4_K:
    case FG_GGML_Q5_K:
    case FG_GGML_Q6_K:
        return 1;
    }

    return 0;
}


uint32_t
fg_ggml_block_size(uint32_t type)
{
    return type < FG_GGML_NTYPES ? fg_ggml_types[type].blck : 0;
}


uint32_t
fg_ggml_type_size(uint32_t type)
{
    return type < FG_GGML_NTYPES ? fg_ggml_types[type].size : 0;
}


uint64_t
fg_ggml_row_size(uint32_t type, uint64_t n)
{
    uint32_t  blck;

    blck = fg_ggml_block_size(type);

    return blck ? n / blck * fg_ggml_types[type].size : 0;
}
