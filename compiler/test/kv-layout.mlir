// KV state through the levels: llm.kv_append -> state.kv_pages + state.kv_write (layout and page
// size chosen per phase on the target's cost model) -> page-sized tdma transfers through staging
// buffers ordered by events -> an npu program of the same transfers that updates the cache in place.
// RUN: tandem-opt %s --llm-specialize-phase --llm-mark-fallback --llm-to-state | FileCheck %s --check-prefix=STATE
// RUN: tandem-opt %s --llm-specialize-phase --llm-mark-fallback --llm-to-state="kv-layout=token_major" | FileCheck %s --check-prefix=FORCED
// RUN: tandem-opt %s --llm-specialize-phase --llm-mark-fallback --llm-to-state --state-to-tdma | FileCheck %s --check-prefix=TDMA
// RUN: tandem-opt %s --llm-specialize-phase --llm-mark-fallback --llm-to-state --state-to-tdma="buffering=single" | FileCheck %s --check-prefix=SINGLE
// RUN: tandem-opt %s --tandem-npu-pipeline | FileCheck %s --check-prefix=NPU
// RUN: not tandem-opt %s --llm-specialize-phase --llm-mark-fallback --llm-to-state="kv-layout=diagonal" 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not tandem-opt %s --llm-specialize-phase --llm-mark-fallback --llm-to-state --state-to-tdma="tcm-budget=4096" 2>&1 | FileCheck %s --check-prefix=NOFIT

// Prefill of a fresh 512-token prompt (8 KV heads of 64): the append is most of the traffic, and
// token-major writes a page of every head in one transfer where head-major needs one per head.
// The page is the smallest whose per-head transfer hides the DMA setup: 256 tokens.
// STATE-LABEL: func.func @prefill
// STATE: %[[KV:.*]] = state.kv_pages %arg1 {heads = 8 : i64, layout = "token_major", page_tokens = 256 : i64, pages = 2 : i64, width = 512 : i64} : tensor<512x512xf16>
// STATE: %[[W:.*]] = state.kv_write %[[KV]], %arg0 at %arg2 {phase = "prefill"}
// STATE: llm.attention %{{.*}}, %[[W]], %[[W]] {fallback = "gpu"
// FORCED-LABEL: func.func @prefill
// FORCED: layout = "token_major"
func.func @prefill(%k: tensor<512x512xf16>, %kc: tensor<512x512xf16>, %at: index, %q: tensor<512x2048xf16>) -> tensor<512x2048xf16> {
  %kc2 = llm.kv_append %kc, %k at %at : tensor<512x512xf16>, tensor<512x512xf16>
  %o = llm.attention %q, %kc2, %kc2 {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 64 : i64}
      : tensor<512x2048xf16>, tensor<512x512xf16>, tensor<512x512xf16>
  return %o : tensor<512x2048xf16>
}

// Decode over a 4096-token cache: one row in, every head's 4096 tokens read one (page, head)
// at a time, so head-major (a head's page is contiguous) wins; FORCED overrides the choice.
// STATE-LABEL: func.func @decode
// STATE: state.kv_pages %arg1 {heads = 8 : i64, layout = "head_major", page_tokens = 256 : i64, pages = 16 : i64, width = 512 : i64} : tensor<4096x512xf16>
// STATE: state.kv_write {{.*}} {phase = "decode"} : tensor<4096x512xf16>, tensor<1x512xf16>
// FORCED-LABEL: func.func @decode
// FORCED: layout = "token_major"
func.func @decode(%k: tensor<1x512xf16>, %kc: tensor<4096x512xf16>, %at: index, %q: tensor<1x2048xf16>) -> tensor<1x2048xf16> {
  %kc2 = llm.kv_append %kc, %k at %at : tensor<4096x512xf16>, tensor<1x512xf16>
  %o = llm.attention %q, %kc2, %kc2 {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 64 : i64}
      : tensor<1x2048xf16>, tensor<4096x512xf16>, tensor<4096x512xf16>
  return %o : tensor<1x2048xf16>
}

// Two pages through two staging buffers: load page 0 (event 0), store it (event 2), load page 1
// into the other buffer (event 1) while page 0 is stored, store it (event 3), drain both.
// TDMA-LABEL: func.func @prefill
// TDMA: %[[S0:.*]] = tdma.alloc {alignment = 64 : i64, bytes = 262144 : i64, role = "kv_stage0"}
// TDMA: %[[S1:.*]] = tdma.alloc {alignment = 64 : i64, bytes = 262144 : i64, role = "kv_stage1"}
// TDMA-NEXT: tdma.dma_start "load" %arg0 to %[[S0]] {ddr_offset = 0 : i64, {{.*}}event = 0 : i64, row_bytes = 262144 : i64, rows = 1 : i64
// TDMA-NEXT: tdma.dma_wait {event = 0 : i64
// TDMA-NEXT: tdma.dma_start "store" %[[KV:.*]] to %[[S0]] {ddr_offset = 0 : i64, {{.*}}event = 2 : i64, row_bytes = 262144 : i64, rows = 1 : i64
// TDMA-NEXT: tdma.dma_start "load" %arg0 to %[[S1]] {ddr_offset = 262144 : i64, {{.*}}event = 1 : i64
// TDMA-NEXT: tdma.dma_wait {event = 1 : i64
// TDMA-NEXT: tdma.dma_start "store" %[[KV]] to %[[S1]] {ddr_offset = 262144 : i64, {{.*}}event = 3 : i64
// TDMA-NEXT: tdma.dma_wait {event = 2 : i64
// TDMA-NEXT: tdma.dma_wait {event = 3 : i64
// TDMA-NEXT: llm.attention %{{.*}}, %[[KV]], %[[KV]]
// A head-major decode append is one 2-D transfer: 8 head slices of 128 B, 4096 x 128 B apart.
// TDMA-LABEL: func.func @decode
// TDMA: tdma.dma_start "store" {{.*}} {ddr_offset = 0 : i64, ddr_stride = 524288 : i64, event = 2 : i64, row_bytes = 128 : i64, rows = 8 : i64, tcm_stride = 128 : i64
// Single buffering: page 1 waits for page 0's stores to drain before it reuses the buffer.
// SINGLE-LABEL: func.func @prefill
// SINGLE-NOT: kv_stage1
// SINGLE: tdma.dma_start "store"
// SINGLE-NEXT: tdma.dma_wait {event = 2 : i64
// SINGLE-NEXT: tdma.dma_start "load" {{.*}}ddr_offset = 262144 : i64, {{.*}}event = 0 : i64

// The program: the new rows (read-only) and the cache bound at the appended position, the
// launch binding both and returning the updated cache to attention.
// NPU-LABEL: func.func @prefill
// NPU: %[[C:.*]] = npu.launch @prefill_kv0(%arg0, %{{.*}}) : (tensor<512x512xf16>, tensor<512x512xf16>) -> tensor<512x512xf16>
// NPU: llm.attention %{{.*}}, %[[C]], %[[C]]
// NPU-LABEL: npu.program @prefill_kv0 events 4 attributes {tandem.kv = {capacity = 512 : i64, {{.*}}layout = "token_major", page_tokens = 256 : i64, phase = "prefill", rows = 512 : i64}}
// NPU-NEXT: npu.buffer "rows" {bytes = 524288 : i64, writable = false}
// NPU-NEXT: npu.buffer "cache" {bytes = 524288 : i64, writable = true}
// NPU-NEXT: npu.dma_load
// NPU-NEXT: npu.wait
// NPU-NEXT: npu.dma_store
// NPU-LABEL: npu.program @decode_kv0 events 3 attributes {tandem.kv = {capacity = 4096 : i64, {{.*}}layout = "head_major"
// Window: from the position's head-0 slice to its head-7 slice: 7 x 4096 x 128 + 128 bytes.
// NPU-NEXT: npu.buffer "rows" {bytes = 1024 : i64, writable = false}
// NPU-NEXT: npu.buffer "cache" {bytes = 3670144 : i64, writable = true}

// BADOPT: kv-layout must be auto, token_major or head_major, got 'diagonal'
// NOFIT: error: TCM overflow: a page of 256 KV rows (262144 B) does not fit the budget of 4096 B; use smaller pages
