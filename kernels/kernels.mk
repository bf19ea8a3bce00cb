# kernels/: the compute kernels.  fg_kernels.h is their interface and
# fg_pool.c the thread pool the CPU kernels run on; cpu/ holds the CPU
# kernels (OpenBLAS for large matrices, SIMD for the rest), libfgkernels.a;
# cuda/ the CUDA kernels, which nvcc builds with the cuda backend
# (engine/backends/cuda/cuda.mk) and g++ over the CPU emulation of CUDA
# (t/cuda_emu/cuda_emu.mk).

FG_KERNELS_SRCS := kernels/fg_pool.c kernels/cpu/fg_kernels_simd.c \
                   kernels/cpu/fg_kernels_arch.c \
                   kernels/cpu/fg_kernels_types.c \
                   kernels/cpu/fg_kernels_dequant.c \
                   kernels/cpu/fg_kernels_quant_ref.c \
                   kernels/cpu/fg_kernels_quant_k.c \
                   kernels/cpu/fg_kernels_mm.c kernels/cpu/fg_kernels_gemv.c \
                   kernels/cpu/fg_kernels_gemv_avx512.c \
                   kernels/cpu/fg_kernels_bf16_avx512.c \
                   kernels/cpu/fg_kernels_qdot.c \
                   kernels/cpu/fg_kernels_qdot_avx2.c \
                   kernels/cpu/fg_kernels_qdot_avx512.c \
                   kernels/cpu/fg_kernels_pack.c \
                   kernels/cpu/fg_kernels_cpu.c \
                   kernels/cpu/fg_kernels_attn.c
FG_KERNELS_INC  := -Ikernels $(FG_UTIL_INC)

# the rows' conversions alone (fg_k_row_size(), fg_k_dequant_row(),
# fg_k_quant_row()) and the pool, for the fuzz targets that compile their
# sources
FG_KERNELS_ROW_SRCS := kernels/fg_pool.c kernels/cpu/fg_kernels_simd.c \
                       kernels/cpu/fg_kernels_types.c \
                       kernels/cpu/fg_kernels_dequant.c \
                       kernels/cpu/fg_kernels_quant_ref.c \
                       kernels/cpu/fg_kernels_quant_k.c
FG_KERNELS_LIBS := -lopenblas -lm -pthread

$(BUILD)/obj/kernels/%.o: FG_INC := $(FG_KERNELS_INC) -Ikernels/cpu

$(eval $(call fg_lib,kernels,$(FG_KERNELS_SRCS)))

# the CUDA kernels: no library of their own, their objects go into the
# backend's shared object
FG_CUK_SRCS := kernels/cuda/fg_kernels_cuda_ops.cu \
               kernels/cuda/fg_kernels_cuda_gemv.cu \
               kernels/cuda/fg_kernels_cuda_dequant.cu \
               kernels/cuda/fg_kernels_cuda_attn.cu \
               kernels/cuda/fg_kernels_cuda_sample.cu \
               kernels/cuda/fg_kernels_cuda_arch.cu
FG_CUK_HDRS := kernels/cuda/fg_kernels_cuda.h \
               kernels/cuda/fg_kernels_cuda_int.cuh \
               kernels/cuda/fg_kernels_cuda_quant.cuh kernels/fg_kernels.h \
               kernels/fg_kernels_quant.h
