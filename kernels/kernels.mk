# kernels/: the compute kernels.  fg_kernels.h is their interface and
# fg_pool.c the thread pool the CPU kernels run on; cpu/ holds the CPU
# kernels (OpenBLAS for large matrices, SIMD for the rest), libfgkernels.a;
# cuda/ the CUDA kernels, built with the cuda backend
# (engine/backends/cuda/cuda.mk).

FG_KERNELS_SRCS := kernels/fg_pool.c kernels/cpu/fg_kernels_mm.c \
                   kernels/cpu/fg_kernels_cpu.c
FG_KERNELS_INC  := -Ikernels
FG_KERNELS_LIBS := -lopenblas -lm -pthread

$(BUILD)/obj/kernels/%.o: FG_INC := $(FG_KERNELS_INC) -Ikernels/cpu

$(eval $(call fg_lib,kernels,$(FG_KERNELS_SRCS)))
