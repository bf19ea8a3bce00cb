# engine/kv/: a model's KV cache in blocks: which sequence holds which
# block, the prefix cache of full blocks by hash and its eviction
# (fg_kv.c), and the arena of head blocks that several models' caches
# share (fg_kv_arena.c), the slots of sliding-window layers
# (fg_kv_window.c), libfgkv.a.  Bookkeeping only: the backend keeps
# the keys and values; kv sees the backend's interface for the conf an
# arena fills, nothing above it.

FG_KV_SRCS := engine/kv/fg_kv.c engine/kv/fg_kv_arena.c \
              engine/kv/fg_kv_window.c
FG_KV_INC  := -Iengine/kv $(FG_BACKENDS_INC) $(FG_UTIL_INC)

# what links libfgkv.a links these after it
FG_KV_LINK := $(BUILD)/libfgkv.a $(FG_BACKENDS_LINK)
FG_KV_LIBS := $(FG_BACKENDS_LIBS)

$(BUILD)/obj/engine/kv/%.o: FG_INC := $(FG_KV_INC)

$(eval $(call fg_lib,kv,$(FG_KV_SRCS)))
