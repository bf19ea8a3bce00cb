# engine/util/: small header-only helpers that every part may include, one
# copy each: seeded random numbers (fg_rand.h), strict UTF-8 (fg_utf8.h),
# 16-bit floats (fg_half.h), xxHash (fg_hash.h), Andes's QoE of a stream
# (fg_qoe.h), a struct's buffers freed in one call (fg_mem.h); nothing to
# build.

FG_UTIL_INC := -Iengine/util
