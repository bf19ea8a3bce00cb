# engine/util/: small header-only helpers that every part may include (one
# copy each: the seeded random numbers, strict UTF-8); nothing to build.

FG_UTIL_INC := -Iengine/util
