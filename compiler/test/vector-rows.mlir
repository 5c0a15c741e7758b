// Row ops on the vector unit: rmsnorm / swiglu / add pass the state level unchanged (they hold no
// persistent state), become tdma.vector_rows over one TCM region whose chunking the search times
// on the cost model, and are emitted as the operator library's row program inside the region.
// RUN: tandem-opt %s --llm-specialize-phase --llm-mark-fallback --llm-to-state --state-to-tdma | FileCheck %s
// RUN: tandem-opt %s --llm-specialize-phase --llm-mark-fallback --llm-to-state --state-to-tdma="tcm-budget=40000" | FileCheck %s --check-prefix=SHORT
// RUN: not tandem-opt %s --llm-specialize-phase --llm-mark-fallback --llm-to-state --state-to-tdma="tcm-budget=4000" 2>&1 | FileCheck %s --check-prefix=NOFIT
// RUN: tandem-opt %s --tandem-npu-pipeline | FileCheck %s --check-prefix=NPU

// With the whole TCM, two chunks of 32 rows overlap loading, computing and storing best.
// CHECK-LABEL: func.func @rows
// CHECK: %[[R:.*]] = tdma.alloc {alignment = 64 : i64, bytes = 70144 : i64, role = "rows"}
// CHECK: tdma.vector_rows "rmsnorm" %arg0, %arg1 buffers(%[[R]]) {eps = 9.99999974E-6 : f32, est_cycles = {{.*}}, rows_per_chunk = 32 : i64}
// CHECK: tdma.vector_rows "swiglu" %arg2, %arg3 buffers({{.*}}) {eps = 0.000000e+00 : f32, est_cycles = {{.*}}, rows_per_chunk = 32 : i64}
// A 40000-byte budget: smaller chunks, each region within it.
// SHORT: tdma.alloc {alignment = 64 : i64, bytes = 35328 : i64, role = "rows"}
// SHORT: rows_per_chunk = 16
// SHORT: tdma.alloc {alignment = 64 : i64, bytes = 36864 : i64, role = "rows"}
// SHORT: rows_per_chunk = 4
// NOFIT: error: TCM overflow: one row of 768 values needs 9216 B, over the budget of 4000 B
// NPU-LABEL: func.func @rows
// NPU: npu.launch @rows_rmsnorm0(%arg0, %arg1) : (tensor<64x256xf16>, tensor<256xf16>) -> tensor<64x256xf16>
// NPU: npu.launch @rows_swiglu1(%arg2, %arg3) : (tensor<64x768xf16>, tensor<64x768xf16>) -> tensor<64x768xf16>
// NPU-LABEL: npu.program @rows_rmsnorm0 events 7 attributes {tandem.elementwise = {cols = 256 : i64, {{.*}}op = "rmsnorm", rows = 64 : i64}}
// NPU-NEXT: npu.buffer "x" {bytes = 32768 : i64, writable = false}
// NPU-NEXT: npu.buffer "w" {bytes = 512 : i64, writable = false}
// NPU-NEXT: npu.buffer "y" {bytes = 32768 : i64, writable = true}
// NPU: npu.vec {{.*}}op = "sumsq"
// NPU: npu.vec {{.*}}op = "rmsapply"
// NPU-LABEL: npu.program @rows_swiglu1
// NPU: npu.vec {{.*}}op = "swiglu"
func.func @rows(%x: tensor<64x256xf16>, %g: tensor<256xf16>, %a: tensor<64x768xf16>, %b: tensor<64x768xf16>)
    -> (tensor<64x256xf16>, tensor<64x768xf16>) {
  %n = llm.rmsnorm %x, %g {eps = 1.0e-05 : f32} : tensor<64x256xf16>, tensor<256xf16>
  %s = llm.swiglu %a, %b : tensor<64x768xf16>
  return %n, %s : tensor<64x256xf16>, tensor<64x768xf16>
}
