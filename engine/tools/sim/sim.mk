# engine/tools/sim/: fairgate-sim, the policy core in front of a
# simulated engine (docs/simulator.md): traces, the paper's suites,
# results and the fairness and latency figures.  libfgsim.a is what the
# load generator and the tests link too; the step-time model is the sim
# backend's (engine/backends/sim/).

FG_SIM_SRCS := engine/tools/sim/fg_sim_trace.c \
               engine/tools/sim/fg_sim_reader.c \
               engine/tools/sim/fg_sim_trace_read.c \
               engine/tools/sim/fg_sim_results_read.c \
               engine/tools/sim/fg_sim_write.c \
               engine/tools/sim/fg_sim_stages.c \
               engine/tools/sim/fg_sim_gen.c \
               engine/tools/sim/fg_sim_gen_prefix.c \
               engine/tools/sim/fg_sim_gen_mux.c \
               engine/tools/sim/fg_sim_conf.c \
               engine/tools/sim/fg_sim_run.c \
               engine/tools/sim/fg_sim_engine.c \
               engine/tools/sim/fg_sim_event.c \
               engine/tools/sim/fg_sim_metrics.c \
               engine/tools/sim/fg_sim_latency.c \
               engine/tools/sim/fg_sim_opts.c engine/tools/sim/fg_sim_kv.c \
               engine/tools/sim/fg_sim_andes.c engine/batch/fg_sched_andes.c \
               engine/tools/sim/fg_sim_models.c \
               engine/tools/sim/fg_sim_mux.c engine/mux/fg_mux.c
# the engine's QoE decision, its one copy (engine/batch/fg_sched_andes.h);
# and several models' quotas and ADBS, theirs (engine/mux/fg_mux.h)
FG_SIM_INC  := -Iengine/tools/sim $(FG_CORE_INC) $(FG_STEP_INC) -Iengine/batch \
               -Iengine/mux

# what links libfgsim.a links these after it
FG_SIM_LINK := $(BUILD)/libfgsim.a $(BUILD)/libfgcore.a \
               $(BUILD)/libfgbackends.a
FG_SIM_LIBS := -ljansson -lm

$(BUILD)/obj/engine/tools/sim/%.o: FG_INC := $(FG_SIM_INC) $(FG_UTIL_INC)

$(eval $(call fg_lib,sim,$(FG_SIM_SRCS)))

$(BUILD)/fairgate-sim: $(BUILD)/obj/engine/tools/sim/fg_sim_main.o \
                       $(FG_SIM_LINK)
	$(CC) $(FG_LDFLAGS) -o $@ $^ $(FG_SIM_LIBS)

FG_TOOLS += $(BUILD)/fairgate-sim

# the paper's suites for every policy, the table of docs/simulator.md
FG_BENCHES += engine/tools/sim/fairness-report.sh

# the shared-prefix suites, policies and routes (docs/simulator.md)
FG_BENCHES += engine/tools/sim/locality-report.sh

# cyclic bursts by load, fcfs and andes in the engine (docs/simulator.md)
FG_BENCHES += engine/tools/sim/qoe-report.sh

# several models on one GPU, by alpha and load, three ways to share
# (docs/multi-model.md)
FG_BENCHES += engine/tools/sim/mux-report.sh
