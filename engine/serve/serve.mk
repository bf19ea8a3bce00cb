# engine/serve/: the engine process, fairgate-engine.  The serving loops
# put the engine's side of each segment (engine/shm) in front of one
# batcher (fg_engine_serve.c) or of several models' rounds
# (fg_engine_mux_serve.c), libfgserve.a; the command is its options
# (fg_engine_options.c), the start-up both paths share
# (fg_engine_start.c), one model's (fg_engine_main.c) and several
# models' (fg_engine_main_mux.c).  The top of the engine: it may call
# every room below it.

FG_SERVE_SRCS := engine/serve/fg_engine_serve.c \
                 engine/serve/fg_engine_mux_serve.c
FG_SERVE_INC  := -Iengine/serve $(FG_MUX_INC) $(FG_MODEL_INC)

# what links libfgserve.a links these after it
FG_SERVE_LINK := $(BUILD)/libfgserve.a $(FG_MUX_LINK)
FG_SERVE_LIBS := $(FG_MUX_LIBS)

$(BUILD)/obj/engine/serve/%.o: FG_INC := $(FG_SERVE_INC)

$(eval $(call fg_lib,serve,$(FG_SERVE_SRCS)))

# the command: its options, then the start-up
FG_ENGINE_CMD_SRCS := engine/serve/fg_engine_options.c \
                      engine/serve/fg_engine_start.c \
                      engine/serve/fg_engine_main.c \
                      engine/serve/fg_engine_main_mux.c

$(BUILD)/fairgate-engine: $(call fg_objs,$(FG_ENGINE_CMD_SRCS)) \
                          $(FG_SERVE_LINK)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_SERVE_LIBS)

FG_TOOLS += $(BUILD)/fairgate-engine
