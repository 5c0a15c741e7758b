// The Value/TensorInfo accessors declared in gguf.h.
#include <limits>

#include "model/gguf/gguf.h"
#include "model/gguf/gguf_value_io.h"

namespace tandem::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::UINT8: return "uint8";
    case ValueType::INT8: return "int8";
    case ValueType::UINT16: return "uint16";
    case ValueType::INT16: return "int16";
    case ValueType::UINT32: return "uint32";
    case ValueType::INT32: return "int32";
    case ValueType::FLOAT32: return "float32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::UINT64: return "uint64";
    case ValueType::INT64: return "int64";
    case ValueType::FLOAT64: return "float64";
  }
  return "unknown";
}

// The variant's alternatives are listed in ValueType order, so the index is the type id.
static_assert(std::is_same_v<std::variant_alternative_t<size_t(ValueType::STRING), Value::Storage>,
                             std::string>);
static_assert(std::is_same_v<std::variant_alternative_t<size_t(ValueType::ARRAY), Value::Storage>,
                             Array>);
static_assert(std::is_same_v<std::variant_alternative_t<size_t(ValueType::FLOAT64), Value::Storage>,
                             double>);
static_assert(std::variant_size_v<Value::Storage> == kValueTypeCount);

ValueType Value::type() const { return ValueType(uint32_t(v.index())); }

std::optional<int64_t> Value::as_int() const {
  return std::visit(
      [](const auto& x) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, uint64_t>) {
          // The one integer type that can exceed int64; refuse rather than wrap.
          if (x > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
          return int64_t(x);
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          return int64_t(x);
        } else {
          return std::nullopt;
        }
      },
      v);
}

std::optional<double> Value::as_float() const {
  if (const float* f = std::get_if<float>(&v)) return double(*f);
  if (const double* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

bool Array::operator==(const Array& other) const {
  return type == other.type && items == other.items;
}

uint64_t TensorInfo::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;  // the reader rejects files where this overflows
  return n;
}

}  // namespace tandem::gguf
