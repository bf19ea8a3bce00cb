# engine/shm/: the shared-memory segment between the gateway's workers
# and the engine: its protocol (fg_shm_proto.c), the workers' client of
# it (fg_shm_client.c) and the engine's side (fg_shm_engine*.c), all in
# libfgshm.a.  Pure C, no nginx types.  The nginx module compiles the
# protocol and the client alone: FG_SHM_SRCS, which `config` reads; the
# engine links the library.

FG_SHM_SRCS        := engine/shm/fg_shm_proto.c engine/shm/fg_shm_client.c
FG_SHM_ENGINE_SRCS := engine/shm/fg_shm_engine.c \
                      engine/shm/fg_shm_engine_ring.c \
                      engine/shm/fg_shm_engine_wake.c \
                      engine/shm/fg_shm_engine_index.c
FG_SHM_INC         := -Iengine/shm

# util: xxHash, for the block hashes
$(BUILD)/obj/engine/shm/%.o: FG_INC := $(FG_SHM_INC) $(FG_UTIL_INC)

$(eval $(call fg_lib,shm,$(FG_SHM_SRCS) $(FG_SHM_ENGINE_SRCS)))
