# t/llamacpp/: llama.cpp as the engine's yardstick, on the same GGUF files
# (docs/engine-speed.md).  fg_engine_drive is the engine's side of the
# line protocol that t/node/llamacpp_drive.mjs speaks for llama.cpp
# (node-llama-cpp); t/lib/Fairgate/LlamaCpp.pm drives both, for the
# greedy agreement test (t/092-llamacpp-agree.t) and the benchmark
# (t/bench/bench_llamacpp.pl, make bench-llamacpp).  Built with the
# tools: the test needs it, and it is no TAP program.

$(BUILD)/obj/t/llamacpp/%.o: FG_INC := -It/bench $(FG_KV_INC) \
                                       $(FG_CPU_INC)

$(BUILD)/t/fg_engine_drive: $(BUILD)/obj/t/llamacpp/fg_engine_drive.o \
                            $(FG_KV_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_KV_LIBS)

FG_TOOLS += $(BUILD)/t/fg_engine_drive
