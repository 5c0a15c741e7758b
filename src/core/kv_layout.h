// Where a KV cache's values live: the addressing of EdgeLLM-MLIR's state/layout level, shared by
// the compiler (which emits appends in it), the npu (which runs them) and the cpu (which reads and
// writes the same pages when it hosts attention beside an npu that owns the KV).
//
// A cache holds `capacity` tokens of `heads` x `head_dim` fp16 values in one of two layouts:
//   * token_major: [capacity][heads][head_dim]. A token's row of every head is contiguous, so a
//     prefill append of many tokens is one large transfer per page;
//   * head_major: [heads][capacity][head_dim]. One head's tokens are contiguous, so attention that
//     streams the cache one head at a time reads each page of a head in one transfer (decode).
// Pages (page_tokens tokens of one head) are the DMA granularity only: addressing is linear in the
// token for both layouts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tandem {

enum class KvLayout { kTokenMajor, kHeadMajor };
std::string_view kv_layout_name(KvLayout l);
std::optional<KvLayout> kv_layout_from_name(std::string_view name);

struct KvGeometry {
  uint32_t capacity = 0;     // tokens the cache holds
  uint32_t heads = 1;        // KV heads
  uint32_t head_dim = 0;
  uint32_t page_tokens = 0;  // tokens of one head per transfer
  KvLayout layout = KvLayout::kTokenMajor;
  uint32_t width() const { return heads * head_dim; }
  uint64_t row_bytes() const { return uint64_t(width()) * 2; }
  uint64_t bytes() const { return uint64_t(capacity) * row_bytes(); }
  // fp16 elements from one head's row of a token to the same head's row of the next token.
  uint64_t token_stride() const { return layout == KvLayout::kTokenMajor ? width() : head_dim; }
};

// Byte offset of element 0 of (token, head). It is linear in the token for both layouts, so a
// program compiled once appends at any position: the runtime binds the cache buffer at
// kv_offset(g, position, 0) (the "window"), and the program's offsets are relative to it.
uint64_t kv_offset(const KvGeometry& g, uint32_t token, uint32_t head);
// Bytes from the window start to the end of the last element an append of `rows` tokens writes.
uint64_t kv_window_bytes(const KvGeometry& g, uint32_t rows);

}  // namespace tandem
