// Tensor element types, numbered exactly as GGUF/ggml numbers them (the ids are file format).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tandem {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30,
};

struct DTypeTraits {
  std::string_view name;
  uint32_t block_size;   // elements per block (1 for plain types)
  uint32_t block_bytes;  // bytes per block
};

// Traits for a supported type; nullopt for a ggml type id tandem does not implement.
std::optional<DTypeTraits> dtype_traits(uint32_t ggml_type_id);
DTypeTraits dtype_traits(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);  // "f32", "q4_0", "q4_k", "iq4_xs", ...
// Every type tandem implements, in ggml id order.
std::span<const DType> all_dtypes();
// Whether t is stored in blocks of quantized values (not f32, f16 or bf16).
inline bool is_block_quantized(DType t) { return t != DType::F32 && t != DType::F16 && t != DType::BF16; }

// Bytes taken by a row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(DType t, size_t n) {
  const DTypeTraits tr = dtype_traits(t);
  return n / tr.block_size * tr.block_bytes;
}

}  // namespace tandem
