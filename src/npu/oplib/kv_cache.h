// The transfers that append to a KV cache in its compiled layout (core/kv_layout.h: token_major or
// head_major, addressed page by page): EdgeLLM-MLIR's state/layout level for the K/V state.
// Pages are the DMA granularity: a transfer never spans more than `page_tokens` tokens of a head.
// The compiler picks the layout for each phase on the cost model (choose_kv_layout) and lowers an
// append to the transfers of kv_store_transfers; validation runs the emitted program against the
// layout's addressing (check_kv_append_program).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/kv_layout.h"
#include "core/status.h"
#include "npu/cost_model.h"
#include "npu/program.h"

namespace tandem::npu::oplib {

using tandem::KvGeometry;
using tandem::KvLayout;
using tandem::kv_layout_from_name;
using tandem::kv_layout_name;
using tandem::kv_offset;
using tandem::kv_window_bytes;

// One 2-D transfer: `rows` rows of `row_bytes`, DDR rows ddr_stride apart from ddr_offset, TCM
// rows tcm_stride apart from tcm_offset.
struct KvTransfer {
  uint64_t ddr_offset = 0, ddr_stride = 0;
  uint32_t rows = 0, row_bytes = 0;
  uint32_t tcm_offset = 0, tcm_stride = 0;
};

// The stores that write tokens [first, first + count) of an append, staged in TCM token-major
// (token first + i at i x row_bytes), into the window. first is a multiple of page_tokens and
// count <= page_tokens: one page of the append.
std::vector<KvTransfer> kv_store_transfers(const KvGeometry& g, uint32_t first, uint32_t count);

// An append of `rows` tokens as a program (buffer 0: the rows [rows][width] fp16; buffer 1: the
// cache window at the appended position): page by page, a load into TCM staging, then the stores
// of kv_store_transfers. The transfers the compiler's state-to-tdma lowering emits, for tests and
// tools that need an append without the MLIR pipeline.
Program kv_append_program(const KvGeometry& g, uint32_t rows);

// DMA cycles of one phase's cache traffic in g's layout: appending `rows` tokens page by page,
// and attention reading `context` tokens of every head one (page, head) block at a time.
double kv_phase_dma_cycles(const KvGeometry& g, uint32_t rows, uint32_t context, const CostModel& cost);

// The layout with the fewer DMA cycles for this phase's traffic (token_major on a tie).
KvLayout choose_kv_layout(KvGeometry g, uint32_t rows, uint32_t context, const CostModel& cost);

// Smallest power of two of tokens (at least 16, at most the capacity rounded up to a power of two)
// whose per-head page transfer takes at least 10x the DMA setup time, so a page transfer is
// within 10% of the streaming rate.
uint32_t choose_page_tokens(uint32_t head_dim, uint32_t capacity, const TargetModel& t);

struct KvAppendCheck {
  uint64_t written = 0;      // cache bytes the append had to write
  uint64_t wrong = 0;        // of those, bytes that differ from the new rows
  uint64_t clobbered = 0;    // bytes outside the appended tokens that changed
  bool ok() const { return wrong == 0 && clobbered == 0; }
};

// Runs `program` (buffer 0: the new rows [rows][width] fp16, read-only; buffer 1: the cache window)
// on the functional executor, appending random rows at `position` of a cache filled with a
// sentinel pattern, and compares the whole cache with g's addressing.
Result<KvAppendCheck> check_kv_append_program(const Program& program, const KvGeometry& g, uint32_t rows,
                                              uint32_t position, uint64_t seed, const TargetModel& t);

}  // namespace tandem::npu::oplib
