// RUN: tandem-opt %s --llm-specialize-phase --llm-to-state --state-to-tdma | FileCheck %s
// RUN: tandem-opt %s --llm-specialize-phase --llm-to-state --state-to-tdma="tcm-budget=200000" | FileCheck %s --check-prefix=SHORT
// RUN: tandem-opt %s --llm-specialize-phase --llm-to-state --state-to-tdma="buffering=single" | FileCheck %s --check-prefix=SINGLE
// RUN: tandem-opt %s --llm-specialize-phase --llm-to-state --state-to-tdma="power-cap=1.0" | FileCheck %s --check-prefix=POWER
// RUN: not tandem-opt %s --llm-specialize-phase --llm-to-state --state-to-tdma="power-cap=0.2" 2>&1 | FileCheck %s --check-prefix=NOPOWER
// RUN: not tandem-opt %s --llm-specialize-phase --llm-to-state --state-to-tdma="tcm-budget=20000" 2>&1 | FileCheck %s --check-prefix=NOFIT
// RUN: not tandem-opt %s --llm-specialize-phase --llm-to-state --state-to-tdma="tcm-budget=99999999" 2>&1 | FileCheck %s --check-prefix=OVER

// With the whole TCM: every buffer doubled (x, y0, y1, w0, w1 and the unpack slabs u0, u1), the
// blocking the cost model prices lowest, its estimate recorded.
// CHECK-LABEL: func.func @gemv
// CHECK-DAG: tdma.alloc {alignment = 64 : i64, bytes = 16384 : i64, role = "x"} : index
// CHECK-DAG: tdma.alloc {{.*}}role = "y1"
// CHECK-DAG: tdma.alloc {{.*}}role = "w1"
// CHECK-DAG: tdma.alloc {{.*}}role = "u1"
// CHECK: tdma.matmul_tiles {{.*}}double_buffer = true, double_buffer_out = true, est_cycles = {{.*}}, format = "q4_0", n_block = 32 : i64, order = "activation_stationary", phase = "decode"

// A short budget keeps the weight pipeline doubled and gives up the second output panel first
// (asymmetric double buffering), before giving up the weight prefetch (see @gemm).
// SHORT-LABEL: func.func @gemv
// SHORT: tdma.matmul_tiles {{.*}}double_buffer = true, double_buffer_out = true
// SHORT-LABEL: func.func @gemm
// SHORT-NOT: role = "y1"
// SHORT: tdma.matmul_tiles {{.*}}double_buffer = true, double_buffer_out = false, {{.*}}n_block = 128 : i64

// SINGLE: tdma.matmul_tiles {{.*}}double_buffer = false, double_buffer_out = false

// A power level: the GEMM at full speed draws 2.29 W on all 8 arrays; capped at 1 W the search
// spreads it over 2 arrays (slower, 0.999 W). The GEMV only needs a smaller blocking.
// POWER-LABEL: func.func @gemv
// POWER: tdma.matmul_tiles {{.*}}arrays = 8 : i64, {{.*}}est_power_w = 0.99
// POWER-LABEL: func.func @gemm
// POWER: tdma.matmul_tiles {{.*}}arrays = 2 : i64, {{.*}}est_power_w = 0.99
// NOPOWER: error: cannot tile for hexagon-v75: no schedule within the power cap of 0.200000 W: the lowest draws

// NOFIT: error: cannot tile for hexagon-v75: no schedule fits the TCM budget of 20000 B: the smallest needs 21056 B
// OVER: error: tcm-budget 99999999 must be in 1..8388608 (the TCM of hexagon-v75)
func.func @gemv(%x: tensor<1x256xf16>, %w: tensor<512x256xf16>) -> tensor<1x512xf16> {
  %y = llm.linear %x, %w {quant = "q4_0"} : tensor<1x256xf16>, tensor<512x256xf16> -> tensor<1x512xf16>
  return %y : tensor<1x512xf16>
}

// A prefill GEMM: with the whole TCM all 256 rows stay resident and both pipelines are doubled.
// CHECK-LABEL: func.func @gemm
// CHECK: tdma.matmul_tiles {{.*}}double_buffer = true, double_buffer_out = true, {{.*}}format = "f16", n_block = 256 : i64, order = "activation_stationary", phase = "prefill"
func.func @gemm(%x: tensor<256x512xf16>, %w: tensor<1024x512xf16>) -> tensor<256x1024xf16> {
  %y = llm.linear %x, %w : tensor<256x512xf16>, tensor<1024x512xf16> -> tensor<256x1024xf16>
  return %y : tensor<256x1024xf16>
}
