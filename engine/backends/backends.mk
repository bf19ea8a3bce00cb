# engine/backends/: what computes a step.  fg_backend.h is the interface
# the batcher calls and fg_backend.c the table of backends by name; cpu/ is
# the Llama-family forward pass over kernels/ (fg_model.c), sim/ the
# simulated backend and the step-time model it shares with the simulator
# (fg_step_model.c); all in libfgbackends.a.  cuda/ is a shared object of
# its own, opened by the table on first use (cuda/cuda.mk).

FG_BACKENDS_SRCS := engine/backends/fg_backend.c \
                    engine/backends/fg_backend_check.c \
                    engine/backends/cpu/fg_model.c \
                    engine/backends/cpu/fg_model_place.c \
                    engine/backends/cpu/fg_model_window.c \
                    engine/backends/cpu/fg_backend_cpu.c \
                    engine/backends/sim/fg_backend_sim.c \
                    engine/backends/sim/fg_step_model.c
FG_BACKENDS_INC  := -Iengine/backends
FG_CPU_INC       := -Iengine/backends/cpu $(FG_MODEL_INC) $(FG_KERNELS_INC)
FG_STEP_INC      := -Iengine/backends/sim

# what links libfgbackends.a links these after it
FG_BACKENDS_LINK := $(BUILD)/libfgbackends.a $(BUILD)/libfgmodel.a \
                    $(BUILD)/libfgkernels.a
FG_BACKENDS_LIBS := -ljansson -ldl $(FG_KERNELS_LIBS)

$(BUILD)/obj/engine/backends/%.o: FG_INC := $(FG_BACKENDS_INC) \
                                            $(FG_CPU_INC) $(FG_STEP_INC)

$(eval $(call fg_lib,backends,$(FG_BACKENDS_SRCS)))

include engine/backends/cuda/cuda.mk
