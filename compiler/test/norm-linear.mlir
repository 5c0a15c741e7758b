// Fusing an rmsnorm with the linears of its cluster that read it: one tdma.norm_linear at the
// tile-DMA level, one npu.program (norm in TCM, then each projection) and one launch with a
// result per projection at the target level.
// RUN: tandem-opt %inputs/layer.mlir --llm-expand-mlp --llm-specialize-phase --llm-fusion-clusters --llm-mark-fallback --llm-to-state --state-to-tdma | FileCheck %s --check-prefix=FUSE
// RUN: tandem-opt %inputs/layer.mlir --llm-expand-mlp --llm-specialize-phase --llm-fusion-clusters --llm-mark-fallback --llm-to-state --state-to-tdma="fuse=false" | FileCheck %s --check-prefix=APART
// RUN: tandem-opt %inputs/layer.mlir --llm-expand-mlp --llm-specialize-phase --llm-fusion-clusters="partitioner=library" --llm-mark-fallback --llm-to-state --state-to-tdma | FileCheck %s --check-prefix=APART
// RUN: tandem-opt %inputs/layer.mlir --llm-expand-mlp --llm-specialize-phase --llm-fusion-clusters --llm-mark-fallback --llm-to-state --state-to-tdma="tcm-budget=54000" --tdma-allocate-tcm="tcm-budget=54000" | FileCheck %s --check-prefix=SHORT
// RUN: tandem-opt %inputs/layer.mlir --tandem-npu-pipeline | FileCheck %s --check-prefix=NPU
// RUN: tandem-opt %inputs/layer.mlir --tandem-npu-pipeline="fuse=false" | FileCheck %s --check-prefix=NPUAPART

// The attention norm with q, k, v (q4_0 packs), then the MLP norm with gate and up; each norm's
// TCM adds its gain row (256 fp16) and one scalar slot to the matmul schedule's buffers.
// FUSE-NOT: llm.rmsnorm
// FUSE:      tdma.alloc {alignment = 64 : i64, bytes = 512 : i64, role = "gain"}
// FUSE-NEXT: tdma.alloc {alignment = 64 : i64, bytes = 64 : i64, role = "norm_scalar"}
// FUSE-NEXT: %[[QKV:.*]]:3 = tdma.norm_linear %arg0, %arg1 packs(%{{.*}}, %{{.*}}, %{{.*}}) buffers({{.*}}) {{{.*}}cluster = 0 : i64{{.*}}eps = 9.99999974E-6 : f32{{.*}}format = "q4_0"
// FUSE-SAME: : tensor<64x256xf16>, tensor<256xf16>, (tensor<36864xi8>, tensor<18432xi8>, tensor<18432xi8>) -> (tensor<64x256xf16>, tensor<64x128xf16>, tensor<64x128xf16>)
// The projections' readers read the fused op's results.
// FUSE:      tdma.vector_rows "add" %arg0
// FUSE:      %[[GU:.*]]:2 = tdma.norm_linear {{.*}} -> (tensor<64x768xf16>, tensor<64x768xf16>)
// FUSE:      tdma.vector_rows "swiglu" %[[GU]]#0, %[[GU]]#1
// FUSE-NOT:  tdma.norm_linear

// Unfused (fuse=false, or every op its own cluster): the norms stay row programs.
// APART-NOT: tdma.norm_linear
// APART:     tdma.vector_rows "rmsnorm" %arg0, %arg1
// APART:     tdma.vector_rows "rmsnorm"
// APART-NOT: tdma.norm_linear

// A budget so short that gate/up's blocking, squeezed by the norm's gain row and scalar slot, is
// priced above the norm and the projections apart: that norm stays a row program (the cost
// check), q/k/v still fuse.
// SHORT:     tdma.norm_linear %arg0, %arg1
// SHORT:     tdma.vector_rows "rmsnorm"
// SHORT-NOT: tdma.norm_linear

// NPU: %[[R:.*]]:3 = npu.launch @layer_nl0(%arg0, %arg1, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<64x256xf16>, tensor<256xf16>, tensor<36864xi8>, tensor<18432xi8>, tensor<18432xi8>) -> (tensor<64x256xf16>, tensor<64x128xf16>, tensor<64x128xf16>)
// NPU: npu.launch @layer_kv1(%[[R]]#2
// NPU: npu.launch @layer_nl1({{.*}}) : {{.*}} -> (tensor<64x768xf16>, tensor<64x768xf16>)
// The fused program: inputs (x, gain, the packs) then the outputs; the norm on each loaded block
// before any tile op reads it.
// NPU-LABEL: npu.program @layer_nl0 events 17 attributes {tandem.norm_linear = {{{.*}}outs = [256, 128, 128], rows = 64 : i64}}
// NPU-NEXT:  npu.buffer "x" {bytes = 32768 : i64, writable = false}
// NPU-NEXT:  npu.buffer "g" {bytes = 512 : i64, writable = false}
// NPU-NEXT:  npu.buffer "w0" {bytes = 36864 : i64, writable = false}
// NPU-NEXT:  npu.buffer "w1" {bytes = 18432 : i64, writable = false}
// NPU-NEXT:  npu.buffer "w2" {bytes = 18432 : i64, writable = false}
// NPU-NEXT:  npu.buffer "y0" {bytes = 32768 : i64, writable = true}
// NPU-NEXT:  npu.buffer "y1" {bytes = 16384 : i64, writable = true}
// NPU-NEXT:  npu.buffer "y2" {bytes = 16384 : i64, writable = true}
// NPU:       npu.dma_load {buffer = 1 : i64, {{.*}} event = 15 : i64, row_bytes = 512 : i64, rows = 1 : i64
// NPU:       npu.wait {event = 0 : i64}
// NPU-NEXT:  npu.wait {event = 15 : i64}
// NPU-NEXT:  npu.vec {{{.*}}op = "sumsq"}
// NPU-NEXT:  npu.vec {{{.*}}imm0 = 3.906250e-03 : f32, imm1 = 9.99999974E-6 : f32, n = 256 : i64, op = "rmsapply"}
// NPU:       npu.signal {event = 16 : i64, units = 4 : i64}
// NPU-NEXT:  npu.wait {event = 16 : i64}
// NPU-NOT:   npu.vec {{{.*}}op = "rmsapply"}
// NPU:       npu.mma
// Every projection's output stored into its own buffer (5, 6, 7).
// NPU:       npu.dma_store {buffer = 5 : i64
// NPU:       npu.dma_store {buffer = 6 : i64
// NPU:       npu.dma_store {buffer = 7 : i64
// NPU-LABEL: npu.program @layer_nl1

// NPUAPART-NOT: tandem.norm_linear
// NPUAPART:     npu.launch @layer_rmsnorm0(%arg0, %arg1)
