#include "core/dtype.h"

#include <array>

namespace tandem {
namespace {

struct Entry {
  DType type;
  DTypeTraits traits;
};

constexpr std::array<Entry, 5> kTypes = {{
    {DType::F32, {"f32", 1, 4}},
    {DType::F16, {"f16", 1, 2}},
    {DType::Q4_0, {"q4_0", 32, 18}},
    {DType::Q8_0, {"q8_0", 32, 34}},
    {DType::BF16, {"bf16", 1, 2}},
}};

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t id) {
  for (const Entry& e : kTypes)
    if (uint32_t(e.type) == id) return e.traits;
  return std::nullopt;
}

DTypeTraits dtype_traits(DType t) { return *dtype_traits(uint32_t(t)); }

std::string_view dtype_name(DType t) { return dtype_traits(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const Entry& e : kTypes)
    if (e.traits.name == name) return e.type;
  return std::nullopt;
}

}  // namespace tandem
