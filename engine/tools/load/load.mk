# engine/tools/load/: fairgate-load, the load generator and trace replayer
# (docs/load.md): libcurl multi in one thread, SSE read as it streams,
# results in the simulator's format; and the experiments that drive the
# gateway with it (gateway-suites.sh, fairserve-suite.sh).

FG_LOAD_SRCS := engine/tools/load/fg_load_sse.c \
                engine/tools/load/fg_load_req.c \
                engine/tools/load/fg_load_xfer.c \
                engine/tools/load/fg_load_results.c \
                engine/tools/load/fg_load_run.c
FG_LOAD_INC  := -Iengine/tools/load $(FG_SIM_INC)

FG_LOAD_LINK := $(BUILD)/libfgload.a $(FG_SIM_LINK)
FG_LOAD_LIBS := -lcurl $(FG_SIM_LIBS)

$(BUILD)/obj/engine/tools/load/%.o: FG_INC := $(FG_LOAD_INC) $(FG_UTIL_INC)

$(eval $(call fg_lib,load,$(FG_LOAD_SRCS)))

$(BUILD)/fairgate-load: $(BUILD)/obj/engine/tools/load/fg_load_main.o \
                        $(FG_LOAD_LINK)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_LOAD_LIBS)

FG_TOOLS += $(BUILD)/fairgate-load

# the VTC suites end to end through nginx, the module, the zone and the
# engine's sim backend, beside the simulator (docs/gateway-fairness.md):
# a few minutes, so `make bench` only, never `make test`
FG_BENCHES += engine/tools/load/gateway-suites.sh

# locality with fairness through the gateway: shared prefixes, DLPM's
# attacks, several engines by route, beside the simulator, and the cpu
# backend (docs/locality.md): about 15 minutes, so `make bench` only
FG_BENCHES += engine/tools/load/locality-suite.sh

# Andes's QoE through the gateway: cyclic bursts at three loads, the
# zone's arrival or qoe order, the engine by fcfs or andes, beside the
# simulator (docs/qoe.md): about seven minutes
FG_BENCHES += engine/tools/load/qoe-suite.sh

# the token pacer in drop-in mode, the rate the client sees against the
# reading speed (docs/qoe.md): about a minute
FG_BENCHES += engine/tools/load/pace-bench.pl

# several models in one engine through the gateway: spatial, temporal and
# muxserve at two popularity skews, beside the simulator
# (docs/multi-model.md): about seven minutes
FG_BENCHES += engine/tools/load/mux-suite.sh

# FairServe's experiment through the gateway (docs/fairserve.md): rpm, vtc,
# wsc and wsc+oit on the fairserve trace in real time, about 23 minutes,
# so its own target, not part of `make bench`
.PHONY: bench-fairserve
bench-fairserve: all
	engine/tools/load/fairserve-suite.sh
