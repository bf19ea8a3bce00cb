# engine/tools/gguf/: the GGUF writer and the random-weight model generator
# over it (libfggen.a), which make the models and files of the tests and
# benchmarks, and the generator's command fairgate-gguf-gen.

FG_GEN_SRCS := engine/tools/gguf/fg_gguf_write.c \
               engine/tools/gguf/fg_gguf_gen.c \
               engine/tools/gguf/fg_gguf_mix.c \
               engine/tools/gguf/fg_gguf_quant.c \
               engine/tools/gguf/fg_gguf_convert.c
FG_GEN_INC  := -Iengine/tools/gguf $(FG_MODEL_INC) $(FG_KERNELS_INC)

# what links libfggen.a links these after it: the kernels quantize
FG_GEN_LINK := $(BUILD)/libfggen.a $(BUILD)/libfgmodel.a \
               $(BUILD)/libfgkernels.a
FG_GEN_LIBS := $(FG_KERNELS_LIBS)

$(BUILD)/obj/engine/tools/gguf/%.o: FG_INC := $(FG_GEN_INC)

$(eval $(call fg_lib,gen,$(FG_GEN_SRCS)))

$(BUILD)/fairgate-gguf-gen: $(BUILD)/obj/engine/tools/gguf/fg_gguf_gen_main.o \
                            $(FG_GEN_LINK)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_GEN_LIBS)

FG_TOOLS += $(BUILD)/fairgate-gguf-gen
