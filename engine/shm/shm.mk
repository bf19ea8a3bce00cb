# engine/shm/: the shared-memory protocol between the gateway's workers and
# the engine (fg_shm_proto.c) and the workers' client of it
# (fg_shm_client.c), libfgshm.a.  Pure C, no nginx types: the nginx module
# links it, and so does the engine, whose side of the segment is
# engine/fg_shm_engine*.c.

FG_SHM_SRCS := engine/shm/fg_shm_proto.c engine/shm/fg_shm_client.c
FG_SHM_INC  := -Iengine/shm

# util: xxHash, for the block hashes
$(BUILD)/obj/engine/shm/%.o: FG_INC := $(FG_SHM_INC) $(FG_UTIL_INC)

$(eval $(call fg_lib,shm,$(FG_SHM_SRCS)))
