# engine/: fairgate-engine and the engine-side models shared with tools.

FG_ENGINE_SRCS := engine/fg_step_model.c
FG_ENGINE_OBJS := $(FG_ENGINE_SRCS:%.c=$(BUILD)/obj/%.o)

# The GGUF reader and the tokenizer: libfgtok.a, which the gateway links
# too (pure C, no nginx types); xxhash is used header-only.
FG_TOK_SRCS := engine/fg_gguf.c engine/fg_tokenizer.c
FG_TOK_OBJS := $(FG_TOK_SRCS:%.c=$(BUILD)/obj/%.o)

$(BUILD)/libfgtok.a: $(FG_TOK_OBJS)
	rm -f $@
	ar rcs $@ $^

# the GGUF writer and random-weight model generator, and its command
$(BUILD)/libfggen.a: $(BUILD)/obj/engine/fg_gguf_write.o
	rm -f $@
	ar rcs $@ $^

$(BUILD)/fairgate-gguf-gen: $(BUILD)/obj/engine/fg_gguf_gen.o \
                            $(BUILD)/libfggen.a $(BUILD)/libfgtok.a
	$(CC) $(FG_LDFLAGS) -o $@ $^ -lm

FG_TOOLS += $(BUILD)/libfgtok.a $(BUILD)/fairgate-gguf-gen

# the cpu backend: a Llama-family forward pass over the GGUF reader and the
# kernels (engine/fg_model.c, fg_backend_cpu.c); whatever links libfgcpu.a
# links libfgtok.a, libfgkernels.a and $(FG_KERNELS_LIBS) after it
FG_CPU_SRCS := engine/fg_model.c engine/fg_backend_cpu.c
FG_CPU_OBJS := $(FG_CPU_SRCS:%.c=$(BUILD)/obj/%.o)

$(BUILD)/libfgcpu.a: $(FG_CPU_OBJS)
	rm -f $@
	ar rcs $@ $^

FG_TOOLS += $(BUILD)/libfgcpu.a

# the engine's runtime: KV cache bookkeeping, sampling, continuous batching,
# the backend table and the sim backend (libfgengine.a); what links it
# links libfgtok.a and libfgkernels.a after it, then $(FG_RT_LIBS)
FG_RT_SRCS := engine/fg_kv.c engine/fg_sample.c engine/fg_batch.c \
              engine/fg_backend.c engine/fg_backend_sim.c \
              engine/fg_step_model.c
FG_RT_OBJS := $(FG_RT_SRCS:%.c=$(BUILD)/obj/%.o)
FG_RT_LIBS  = -ljansson $(FG_KERNELS_LIBS)

$(BUILD)/libfgengine.a: $(FG_RT_OBJS)
	rm -f $@
	ar rcs $@ $^

FG_TOOLS += $(BUILD)/libfgengine.a

# the shared-memory protocol with the gateway: the gateway's half is
# libfgshm.a (pure C, no nginx types: the nginx module links it), the
# engine's half and its serving loop go with the runtime
FG_SHM_SRCS := engine/fg_shm_proto.c engine/fg_shm_client.c
FG_SHM_OBJS := $(FG_SHM_SRCS:%.c=$(BUILD)/obj/%.o)

$(BUILD)/libfgshm.a: $(FG_SHM_OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/libfgserve.a: $(BUILD)/obj/engine/fg_shm_engine.o \
                       $(BUILD)/obj/engine/fg_engine_serve.o
	rm -f $@
	ar rcs $@ $^

FG_TOOLS += $(BUILD)/libfgshm.a $(BUILD)/libfgserve.a

# fairgate-engine; the cpu backend goes in when its part of the tree is
# there (FG_CPU_OBJS above), pulled out of its archive by name
FG_ENGINE_CPU_LIB = $(if $(FG_CPU_OBJS),$(BUILD)/libfgcpu.a)
FG_ENGINE_CPU_LD  = $(if $(FG_CPU_OBJS),-u fg_backend_cpu)
FG_ENGINE_LINK    = $(BUILD)/libfgserve.a $(BUILD)/libfgengine.a \
                    $(BUILD)/libfgshm.a $(BUILD)/libfgtok.a \
                    $(BUILD)/libfgkernels.a

$(BUILD)/fairgate-engine: $(BUILD)/obj/engine/fg_engine_main.o \
                          $(FG_ENGINE_CPU_LIB) $(FG_ENGINE_LINK)
	$(CC) $(FG_LDFLAGS) $(FG_ENGINE_CPU_LD) -o $@ $^ $(FG_RT_LIBS)

FG_TOOLS += $(BUILD)/fairgate-engine
