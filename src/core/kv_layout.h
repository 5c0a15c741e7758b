// Where a KV cache's values live: the addressing of EdgeLLM-MLIR's state/layout level, shared by
// the compiler (which emits appends in it), the npu (which runs them) and the cpu (which reads and
// writes the same pages when it hosts attention beside an npu that owns the KV).
//
// A cache holds `capacity` tokens of `heads` x `head_dim` values of one element type (f32, f16 or
// q8_0 blocks of 32 along head_dim: --cache-type-k / --cache-type-v) in one of two layouts:
//   * token_major: [capacity][heads][head_dim]. A token's row of every head is contiguous, so a
//     prefill append of many tokens is one large transfer per page;
//   * head_major: [heads][capacity][head_dim]. One head's tokens are contiguous, so attention that
//     streams the cache one head at a time reads each page of a head in one transfer (decode).
// Pages (page_tokens tokens of one head) are the DMA granularity only: addressing is linear in the
// token for both layouts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/status.h"

namespace tandem {

enum class KvLayout { kTokenMajor, kHeadMajor };
std::string_view kv_layout_name(KvLayout l);
std::optional<KvLayout> kv_layout_from_name(std::string_view name);

// The element types a KV cache may hold, as llama.cpp's -ctk/-ctv: f32, f16 (the default) and q8_0.
bool is_kv_type(DType t);
// "f32" | "f16" | "q8_0" -> the type; the error names `what` (the flag) and the value.
Result<DType> kv_type_from_name(std::string_view name, std::string_view what);
// Whether a cache of head_dim-wide heads can hold type t (q8_0 blocks of 32 along head_dim); the
// error names `what`, the type and the head width.
Status check_kv_type(DType t, uint32_t head_dim, std::string_view what);

// The element types of the K and V caches (--cache-type-k / --cache-type-v); f16 by default, as
// llama.cpp.
struct KvTypes {
  DType k = DType::F16;
  DType v = DType::F16;
};

// The K and V caches share one geometry and differ only in element type: `type` is the keys',
// `v_type` the values' (values() is the values' cache as a geometry of its own).
struct KvGeometry {
  uint32_t capacity = 0;     // tokens the cache holds
  uint32_t heads = 1;        // KV heads
  uint32_t head_dim = 0;
  uint32_t page_tokens = 0;  // tokens of one head per transfer
  KvLayout layout = KvLayout::kTokenMajor;
  DType type = DType::F16;    // the keys' elements
  DType v_type = DType::F16;  // the values'
  uint32_t width() const { return heads * head_dim; }
  uint64_t head_bytes() const { return tandem::row_bytes(type, head_dim); }  // one head's row of a token
  uint64_t row_bytes() const { return uint64_t(heads) * head_bytes(); }
  uint64_t bytes() const { return uint64_t(capacity) * row_bytes(); }
  // Bytes from one head's row of a token to the same head's row of the next token.
  uint64_t token_stride_bytes() const { return layout == KvLayout::kTokenMajor ? row_bytes() : head_bytes(); }
  KvGeometry values() const {
    KvGeometry v = *this;
    v.type = v_type;
    return v;
  }
  bool fp16() const { return type == DType::F16 && v_type == DType::F16; }
};

// Byte offset of element 0 of (token, head) in a cache of g.type. It is linear in the token for
// both layouts, so a program compiled once appends at any position: the runtime binds the cache
// buffer at kv_offset(g, position, 0) (the "window"), and the program's offsets are relative to it.
uint64_t kv_offset(const KvGeometry& g, uint32_t token, uint32_t head);
// Bytes from the window start to the end of the last element an append of `rows` tokens writes.
uint64_t kv_window_bytes(const KvGeometry& g, uint32_t rows);

}  // namespace tandem
