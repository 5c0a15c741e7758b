#include "core/kv_layout.h"

namespace tandem {

std::string_view kv_layout_name(KvLayout l) { return l == KvLayout::kHeadMajor ? "head_major" : "token_major"; }

std::optional<KvLayout> kv_layout_from_name(std::string_view name) {
  if (name == "token_major") return KvLayout::kTokenMajor;
  if (name == "head_major") return KvLayout::kHeadMajor;
  return std::nullopt;
}

bool is_kv_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::Q8_0; }

Result<DType> kv_type_from_name(std::string_view name, std::string_view what) {
  const std::optional<DType> t = dtype_from_name(name);
  if (!t || !is_kv_type(*t))
    return InvalidArgument(std::string(what) + ": '" + std::string(name) + "' is not a KV cache type (f32, f16, q8_0)");
  return *t;
}

Status check_kv_type(DType t, uint32_t head_dim, std::string_view what) {
  if (!is_kv_type(t))
    return InvalidArgument(std::string(what) + ": " + std::string(dtype_name(t)) + " is not a KV cache type (f32, f16, q8_0)");
  const uint32_t block = dtype_traits(t).block_size;
  if (head_dim % block != 0)
    return Unsupported(std::string(what) + ": " + std::string(dtype_name(t)) + " holds blocks of " + std::to_string(block) +
                       " along a head, and this model's heads are " + std::to_string(head_dim) + " wide (use f16)");
  return Status::Ok();
}

uint64_t kv_offset(const KvGeometry& g, uint32_t token, uint32_t head) {
  const uint64_t hd_bytes = g.head_bytes();
  if (g.layout == KvLayout::kTokenMajor) return uint64_t(token) * g.row_bytes() + head * hd_bytes;
  return (uint64_t(head) * g.capacity + token) * hd_bytes;
}

uint64_t kv_window_bytes(const KvGeometry& g, uint32_t rows) {
  return rows == 0 ? 0 : kv_offset(g, rows - 1, g.heads - 1) + g.head_bytes();
}

}  // namespace tandem
