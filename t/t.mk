# t/: C unit tests (TAP binaries run by prove), the simulator and benches.

$(BUILD)/t/%: $(BUILD)/obj/t/unit/%.o $(BUILD)/libfgcore.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -lm

FG_TESTS += $(BUILD)/t/test_cost $(BUILD)/t/test_heap \
            $(BUILD)/t/test_window $(BUILD)/t/test_sched

# benchmarks: `make bench` runs them; their figures go in docs/
$(BUILD)/bench/%: $(BUILD)/obj/t/bench/%.o $(BUILD)/libfgcore.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^ -lm

FG_BENCHES += $(BUILD)/bench/bench_sched
