#include "core/kv_layout.h"

namespace tandem {

std::string_view kv_layout_name(KvLayout l) { return l == KvLayout::kHeadMajor ? "head_major" : "token_major"; }

std::optional<KvLayout> kv_layout_from_name(std::string_view name) {
  if (name == "token_major") return KvLayout::kTokenMajor;
  if (name == "head_major") return KvLayout::kHeadMajor;
  return std::nullopt;
}

uint64_t kv_offset(const KvGeometry& g, uint32_t token, uint32_t head) {
  const uint64_t hd_bytes = uint64_t(g.head_dim) * 2;
  if (g.layout == KvLayout::kTokenMajor) return uint64_t(token) * g.row_bytes() + head * hd_bytes;
  return (uint64_t(head) * g.capacity + token) * hd_bytes;
}

uint64_t kv_window_bytes(const KvGeometry& g, uint32_t rows) {
  return rows == 0 ? 0 : kv_offset(g, rows - 1, g.heads - 1) + uint64_t(g.head_dim) * 2;
}

}  // namespace tandem
