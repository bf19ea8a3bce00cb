# t/unit/: the C unit tests, TAP programs that `make test` runs with prove.
# One folder per part, t/unit/PART/test_*.c, each test linked with its
# part and what that part needs; fg_tap.h and fg_test_*.h are their
# shared helpers.  The programs are build/t/test_*.

# $(call fg_unit,PART,INCLUDES,LINK,LIBS): the tests of t/unit/PART
define fg_unit
FG_UNIT_$(1) := $$(patsubst t/unit/$(1)/%.c,$(BUILD)/t/%,\
                    $$(wildcard t/unit/$(1)/test_*.c))

$(BUILD)/obj/t/unit/$(1)/%.o: FG_INC := -It/unit $(2)

$$(FG_UNIT_$(1)): $(BUILD)/t/%: $(BUILD)/obj/t/unit/$(1)/%.o $(3)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(FG_LDFLAGS) -o $$@ $$^ $(4)

FG_TESTS += $$(FG_UNIT_$(1))
endef

# engine/util is header-only: its tests link nothing
$(eval $(call fg_unit,util,$(FG_UTIL_INC),,-lm))

$(eval $(call fg_unit,core,$(FG_CORE_INC) $(FG_UTIL_INC), \
    $(BUILD)/libfgcore.a,-ljansson -lm))

$(eval $(call fg_unit,openai,$(FG_OPENAI_INC) $(FG_GEN_INC), \
    $(BUILD)/libfgopenai.a $(BUILD)/libfgjinja.a $(BUILD)/libfggrammar.a \
    $(FG_GEN_LINK), \
    -ljansson -lm -lcrypto $(FG_GEN_LIBS)))

$(eval $(call fg_unit,model,$(FG_MODEL_INC) $(FG_GEN_INC), \
    $(FG_GEN_LINK),-lm $(FG_GEN_LIBS)))

$(eval $(call fg_unit,kernels,$(FG_KERNELS_INC) -Ikernels/cpu $(FG_UTIL_INC), \
    $(BUILD)/libfgkernels.a,$(FG_KERNELS_LIBS)))

$(eval $(call fg_unit,backends, \
    $(FG_BACKENDS_INC) $(FG_CPU_INC) $(FG_STEP_INC) $(FG_GEN_INC), \
    $(BUILD)/libfggen.a $(FG_BACKENDS_LINK),$(FG_BACKENDS_LIBS)))

# the engine's rooms, from the bottom up; the generator: the tests on the
# cpu backend make a model
$(eval $(call fg_unit,shm,$(FG_SHM_INC) $(FG_UTIL_INC), \
    $(BUILD)/libfgshm.a,))

$(eval $(call fg_unit,kv,$(FG_KV_INC) $(FG_GEN_INC), \
    $(BUILD)/libfggen.a $(FG_KV_LINK),$(FG_KV_LIBS)))

$(eval $(call fg_unit,batch,$(FG_BATCH_INC) $(FG_GEN_INC), \
    $(BUILD)/libfggen.a $(FG_BATCH_LINK),$(FG_BATCH_LIBS)))

$(eval $(call fg_unit,mux,$(FG_MUX_INC) $(FG_GEN_INC), \
    $(BUILD)/libfggen.a $(FG_MUX_LINK),$(FG_MUX_LIBS)))

$(eval $(call fg_unit,serve,$(FG_SERVE_INC) $(FG_GEN_INC), \
    $(BUILD)/libfggen.a $(FG_SERVE_LINK),$(FG_SERVE_LIBS)))

$(eval $(call fg_unit,sim,$(FG_SIM_INC) $(FG_UTIL_INC), \
    $(FG_SIM_LINK),$(FG_SIM_LIBS)))

$(eval $(call fg_unit,load,$(FG_LOAD_INC) $(FG_UTIL_INC), \
    $(FG_LOAD_LINK),$(FG_LOAD_LIBS)))

# the fairgate-engine command itself, run as prove runs it
$(BUILD)/t/test_engine_main: | $(BUILD)/fairgate-engine
$(BUILD)/obj/t/unit/serve/test_engine_main.o: \
    FG_CFLAGS += -DFG_TEST_BUILD='"$(BUILD)"'


# chat templates: the Jinja renderer's tests, and its side of t/110's
# comparison with @huggingface/jinja
$(eval $(call fg_unit,jinja,$(FG_JINJA_INC), \
    $(BUILD)/libfgjinja.a,-ljansson -lm))

$(BUILD)/obj/t/unit/jinja/jinja_render.o: FG_INC := $(FG_JINJA_INC)

$(BUILD)/t/jinja_render: $(BUILD)/obj/t/unit/jinja/jinja_render.o \
    $(BUILD)/libfgjinja.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -ljansson -lm

FG_TOOLS += $(BUILD)/t/jinja_render

$(BUILD)/obj/t/unit/jinja/gguf_with_template.o: FG_INC := $(FG_GEN_INC)

$(BUILD)/t/gguf_with_template: $(BUILD)/obj/t/unit/jinja/gguf_with_template.o \
    $(FG_GEN_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_GEN_LIBS)

FG_TOOLS += $(BUILD)/t/gguf_with_template
# the tokenizer's side of t/115-tokenizer-real.t, not a TAP program: the
# objects of t/unit/model/ have their includes
$(BUILD)/t/tok_check: $(BUILD)/obj/t/unit/model/tok_check.o \
                      $(BUILD)/libfgmodel.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -ljansson -lm

FG_TOOLS += $(BUILD)/t/tok_check

# the chat side of t/115-tokenizer-real.t, not a TAP program either
$(BUILD)/t/tok_chat_check: $(BUILD)/obj/t/unit/openai/tok_chat_check.o \
                           $(BUILD)/libfgopenai.a $(BUILD)/libfgjinja.a \
                           $(BUILD)/libfggrammar.a \
                           $(BUILD)/libfgmodel.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -ljansson -lm

FG_TOOLS += $(BUILD)/t/tok_chat_check

# the C side of t/112-chat-tools-template.t: requests with tools rendered
$(BUILD)/t/chat_tools_render: $(BUILD)/obj/t/unit/openai/chat_tools_render.o \
                              $(BUILD)/libfgopenai.a $(BUILD)/libfgjinja.a \
                           $(BUILD)/libfggrammar.a \
                              $(BUILD)/libfgmodel.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -ljansson -lm

FG_TOOLS += $(BUILD)/t/chat_tools_render

# constrained decoding: GBNF, JSON Schema, the matcher and its masks; the
# random walks read stories260K's vocabulary (../shared/models)
$(eval $(call fg_unit,grammar,$(FG_GRAMMAR_INC) $(FG_UTIL_INC), \
    $(FG_GRAMMAR_LINK),$(FG_GRAMMAR_LIBS)))
