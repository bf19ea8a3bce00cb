#!/usr/bin/env bash
# fairgate: ggml's quantized types beside Q8_0 in the CPU matrix products
# (docs/kernels.md, "Products of quantized weights"): GB/s of weights and
# the speed against Q8_0's, batches of 1, 8 and 32 on one thread, on the
# best path the CPU has, then on AVX2 alone (the same as the first where
# the CPU lacks AVX-512 VNNI).  Run from the top of the tree (make bench
# does), after make.

set -e

build/bench/bench_kernels --quant
build/bench/bench_kernels --quant --simd avx2
