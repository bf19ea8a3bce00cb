# engine/: the engine process, fairgate-engine.  The runtime in this folder
# (KV cache bookkeeping, sampling, continuous batching, the engine's side
# of the shared-memory segment and the loop that serves it) is
# libfgengine.a; fg_engine_options.c and fg_engine_main.c are the command.

FG_ENGINE_SRCS := engine/fg_kv.c engine/fg_kv_arena.c engine/fg_sample.c \
                  engine/fg_batch.c engine/fg_batch_andes.c \
                  engine/fg_batch_swap.c engine/fg_sched_andes.c \
                  engine/fg_mux.c \
                  engine/fg_shm_engine.c engine/fg_shm_engine_ring.c \
                  engine/fg_shm_engine_wake.c engine/fg_shm_engine_index.c \
                  engine/fg_engine_serve.c engine/fg_engine_mux.c \
                  engine/fg_engine_mux_serve.c \
                  engine/fg_engine_mux_lanes.c
FG_ENGINE_INC  := -Iengine $(FG_BACKENDS_INC) $(FG_SHM_INC) $(FG_KERNELS_INC) \
                  $(FG_UTIL_INC)

# what links libfgengine.a links these after it
FG_ENGINE_LINK := $(BUILD)/libfgengine.a $(BUILD)/libfgshm.a \
                  $(FG_BACKENDS_LINK)
FG_ENGINE_LIBS := $(FG_BACKENDS_LIBS)

$(BUILD)/obj/engine/%.o: FG_INC := $(FG_ENGINE_INC) $(FG_MODEL_INC)

$(eval $(call fg_lib,engine,$(FG_ENGINE_SRCS)))

# the command: its options, then the start-up
FG_ENGINE_CMD_SRCS := engine/fg_engine_options.c engine/fg_engine_main.c \
                      engine/fg_engine_main_mux.c

$(BUILD)/fairgate-engine: $(call fg_objs,$(FG_ENGINE_CMD_SRCS)) \
                          $(FG_ENGINE_LINK)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_ENGINE_LIBS)

FG_TOOLS += $(BUILD)/fairgate-engine
