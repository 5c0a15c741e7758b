#include "model/gguf/gguf_value_io.h"

#include <cstdio>
#include <string_view>

#include "model/gguf/str_cat.h"

namespace tandem::gguf {
namespace {

// Smallest encoding of one value of each type; used to reject array counts the remaining bytes
// could not possibly hold, before reserving memory for them.
constexpr uint64_t kMinEncodedSize[kValueTypeCount] = {
    1, 1, 2, 2, 4, 4, 4, 1,  // uint8 .. bool
    8,                       // string: its length alone
    12,                      // array: element type + count
    8, 8, 8,                 // uint64, int64, float64
};

std::string truncated(const ByteCursor& c, std::string_view what, uint64_t need) {
  return str_cat("file ends inside ", what, " (needs ", need, " bytes at offset ", c.offset(), ", ",
                 c.remaining(), " left)");
}

template <class T>
std::optional<ValueReadError> read_scalar(ByteCursor& c, ValueType t, Value& out) {
  T x{};
  if (!c.read(x)) return ValueReadError{"", truncated(c, value_type_name(t), sizeof(T))};
  out.v = x;
  return std::nullopt;
}

std::optional<ValueReadError> read_string(ByteCursor& c, Value& out) {
  uint64_t len = 0;
  if (!c.read(len)) return ValueReadError{"", truncated(c, "string length", 8)};
  std::string_view bytes;
  if (!c.read_bytes(len, bytes)) {
    return ValueReadError{"", str_cat("string length exceeds the bytes left (", len, " > ",
                                      c.remaining(), ")")};
  }
  out.v = std::string(bytes);
  return std::nullopt;
}

std::optional<ValueReadError> read_array(ByteCursor& c, int depth, Value& out) {
  uint32_t elem_type = 0;
  uint64_t count = 0;
  if (!c.read(elem_type)) return ValueReadError{"", truncated(c, "array element type", 4)};
  if (!is_known_value_type(elem_type)) {
    return ValueReadError{"", str_cat("unknown array element type (", elem_type, ")")};
  }
  if (ValueType(elem_type) == ValueType::ARRAY && depth + 1 >= kMaxArrayDepth) {
    return ValueReadError{"", str_cat("arrays nested deeper than ", kMaxArrayDepth, " levels (",
                                      depth + 2, ")")};
  }
  if (!c.read(count)) return ValueReadError{"", truncated(c, "array count", 8)};
  if (count > c.remaining() / kMinEncodedSize[elem_type]) {
    return ValueReadError{"", str_cat("array count exceeds what the bytes left can hold (", count,
                                      " ", value_type_name(ValueType(elem_type)), ", ",
                                      c.remaining(), " bytes left)")};
  }
  Array arr;
  arr.type = ValueType(elem_type);
  arr.items.resize(size_t(count));
  for (uint64_t i = 0; i < count; ++i) {
    if (auto err = read_value(c, elem_type, depth + 1, arr.items[i])) {
      err->where = str_cat("[", i, "]", err->where);
      return err;
    }
  }
  out.v = std::move(arr);
  return std::nullopt;
}

}  // namespace

std::optional<ValueReadError> read_value(ByteCursor& c, uint32_t type_id, int depth, Value& out) {
  if (!is_known_value_type(type_id)) {
    return ValueReadError{"", str_cat("unknown value type (", type_id, ")")};
  }
  const ValueType t = ValueType(type_id);
  switch (t) {
    case ValueType::UINT8: return read_scalar<uint8_t>(c, t, out);
    case ValueType::INT8: return read_scalar<int8_t>(c, t, out);
    case ValueType::UINT16: return read_scalar<uint16_t>(c, t, out);
    case ValueType::INT16: return read_scalar<int16_t>(c, t, out);
    case ValueType::UINT32: return read_scalar<uint32_t>(c, t, out);
    case ValueType::INT32: return read_scalar<int32_t>(c, t, out);
    case ValueType::FLOAT32: return read_scalar<float>(c, t, out);
    case ValueType::UINT64: return read_scalar<uint64_t>(c, t, out);
    case ValueType::INT64: return read_scalar<int64_t>(c, t, out);
    case ValueType::FLOAT64: return read_scalar<double>(c, t, out);
    case ValueType::BOOL: {
      // Read as a byte: a bool object holding anything but 0/1 is undefined behaviour.
      uint8_t b = 0;
      if (!c.read(b)) return ValueReadError{"", truncated(c, "bool", 1)};
      if (b > 1) return ValueReadError{"", str_cat("bool byte must be 0 or 1 (", b, ")")};
      out.v = b == 1;
      return std::nullopt;
    }
    case ValueType::STRING: return read_string(c, out);
    case ValueType::ARRAY: return read_array(c, depth, out);
  }
  return ValueReadError{"", str_cat("unknown value type (", type_id, ")")};
}

std::optional<ValueReadError> check_writable(const Value& value, int depth) {
  const Array* arr = value.as_array();
  if (!arr) return std::nullopt;
  if (!is_known_value_type(uint32_t(arr->type))) {
    return ValueReadError{"", str_cat("unknown array element type (", uint32_t(arr->type), ")")};
  }
  if (depth + 1 >= kMaxArrayDepth && arr->type == ValueType::ARRAY) {
    return ValueReadError{"", str_cat("arrays nested deeper than ", kMaxArrayDepth, " levels (",
                                      depth + 2, ")")};
  }
  for (size_t i = 0; i < arr->items.size(); ++i) {
    const Value& item = arr->items[i];
    std::optional<ValueReadError> err;
    if (item.type() != arr->type) {
      err = ValueReadError{"", str_cat("array of ", value_type_name(arr->type), " holds a ",
                                       value_type_name(item.type()))};
    } else {
      err = check_writable(item, depth + 1);
    }
    if (err) {
      err->where = str_cat("[", i, "]", err->where);
      return err;
    }
  }
  return std::nullopt;
}

void append_value(std::string& out, const Value& value) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          const uint64_t len = x.size();
          out.append(reinterpret_cast<const char*>(&len), 8);
          out.append(x);
        } else if constexpr (std::is_same_v<T, Array>) {
          const uint32_t elem_type = uint32_t(x.type);
          const uint64_t count = x.items.size();
          out.append(reinterpret_cast<const char*>(&elem_type), 4);
          out.append(reinterpret_cast<const char*>(&count), 8);
          for (const Value& item : x.items) append_value(out, item);
        } else if constexpr (std::is_same_v<T, bool>) {
          out.push_back(x ? 1 : 0);
        } else {
          out.append(reinterpret_cast<const char*>(&x), sizeof(T));  // little-endian host
        }
      },
      value.v);
}

std::string printable(std::string_view text, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const bool cut = text.size() > max_bytes;
  if (cut) text = text.substr(0, max_bytes);
  std::string out;
  out.reserve(text.size() + 3);
  for (char ch : text) {
    const auto byte = uint8_t(ch);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    } else {
      out.push_back(ch);  // UTF-8 sequences stay readable
    }
  }
  if (cut) out += "...";
  return out;
}

std::string describe_value(const Value& value) {
  const std::string_view type = value_type_name(value.type());
  if (const std::string* s = value.as_string()) return str_cat(type, " \"", printable(*s, 40), "\"");
  if (const Array* a = value.as_array()) {
    return str_cat("array of ", a->items.size(), " ", value_type_name(a->type));
  }
  if (const bool* b = value.as_bool()) return str_cat(type, *b ? " true" : " false");
  if (auto i = value.as_int()) return str_cat(type, " ", *i);
  if (const uint64_t* u = std::get_if<uint64_t>(&value.v)) return str_cat(type, " ", *u);
  if (auto f = value.as_float()) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", *f);
    return str_cat(type, " ", std::string_view(buf));
  }
  return std::string(type);
}

}  // namespace tandem::gguf
