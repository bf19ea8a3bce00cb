# engine/mux/: several models in one engine: MuxServe's quotas and ADBS
# (fg_mux.c, pure arithmetic the simulator shares) and the rounds that
# apply them to the models' batchers and KV caches on lanes
# (fg_engine_mux.c, fg_engine_mux_lanes.c), libfgmux.a.  No segment: the
# serving loop in front of it (engine/serve) hands it a callback.

FG_MUX_SRCS := engine/mux/fg_mux.c engine/mux/fg_engine_mux.c \
               engine/mux/fg_engine_mux_lanes.c
FG_MUX_INC  := -Iengine/mux $(FG_BATCH_INC)

# what links libfgmux.a links these after it
FG_MUX_LINK := $(BUILD)/libfgmux.a $(FG_BATCH_LINK)
FG_MUX_LIBS := $(FG_BATCH_LIBS)

$(BUILD)/obj/engine/mux/%.o: FG_INC := $(FG_MUX_INC)

$(eval $(call fg_lib,mux,$(FG_MUX_SRCS)))
