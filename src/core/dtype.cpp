#include "core/dtype.h"

#include <array>

namespace tandem {
namespace {

struct Entry {
  DType type;
  DTypeTraits traits;
};

// Block sizes and bytes are GGUF's (ggml's type traits); core/quant.h has the block layouts.
constexpr std::array<Entry, 15> kTypes = {{
    {DType::F32, {"f32", 1, 4}},
    {DType::F16, {"f16", 1, 2}},
    {DType::Q4_0, {"q4_0", 32, 18}},
    {DType::Q4_1, {"q4_1", 32, 20}},
    {DType::Q5_0, {"q5_0", 32, 22}},
    {DType::Q5_1, {"q5_1", 32, 24}},
    {DType::Q8_0, {"q8_0", 32, 34}},
    {DType::Q2_K, {"q2_k", 256, 84}},
    {DType::Q3_K, {"q3_k", 256, 110}},
    {DType::Q4_K, {"q4_k", 256, 144}},
    {DType::Q5_K, {"q5_k", 256, 176}},
    {DType::Q6_K, {"q6_k", 256, 210}},
    {DType::IQ4_NL, {"iq4_nl", 32, 18}},
    {DType::IQ4_XS, {"iq4_xs", 256, 136}},
    {DType::BF16, {"bf16", 1, 2}},
}};
constexpr std::array<DType, kTypes.size()> kAll = [] {
  std::array<DType, kTypes.size()> a{};
  for (size_t i = 0; i < kTypes.size(); ++i) a[i] = kTypes[i].type;
  return a;
}();

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t id) {
  for (const Entry& e : kTypes)
    if (uint32_t(e.type) == id) return e.traits;
  return std::nullopt;
}

DTypeTraits dtype_traits(DType t) { return *dtype_traits(uint32_t(t)); }

std::string_view dtype_name(DType t) { return dtype_traits(t).name; }

std::span<const DType> all_dtypes() { return kAll; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const Entry& e : kTypes)
    if (e.traits.name == name) return e.type;
  return std::nullopt;
}

}  // namespace tandem
