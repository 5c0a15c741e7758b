// GgufBytes: assembles GGUF files byte by byte, so tests can build exactly the broken file
// they need (the writer refuses to produce most of them).
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf/gguf.h"

namespace tandem::gguf::testing {

class GgufBytes {
 public:
  template <class T>
  GgufBytes& raw(T x) {
    return append(&x, sizeof(T));
  }
  GgufBytes& u8(uint8_t x) { return raw(x); }
  GgufBytes& u16(uint16_t x) { return raw(x); }
  GgufBytes& u32(uint32_t x) { return raw(x); }
  GgufBytes& u64(uint64_t x) { return raw(x); }
  GgufBytes& bytes(std::string_view s) { return append(s.data(), s.size()); }
  GgufBytes& str(std::string_view s) { return u64(s.size()).bytes(s); }

  GgufBytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return bytes("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  }
  GgufBytes& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(uint32_t(ValueType::UINT32)).u32(v); }
  GgufBytes& kv_str(std::string_view key, std::string_view v) {
    return str(key).u32(uint32_t(ValueType::STRING)).str(v);
  }
  GgufBytes& tensor_info(std::string_view name, std::initializer_list<uint64_t> dims, uint32_t type,
                         uint64_t offset) {
    str(name).u32(uint32_t(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  GgufBytes& pad_to(size_t alignment) {
    while (bytes_.size() % alignment) bytes_.push_back(0);
    return *this;
  }
  GgufBytes& zeros(size_t n) {
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }

  const std::vector<uint8_t>& data() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

  // Parses the bytes as a file named "t.gguf".
  Result<std::shared_ptr<GgufFile>> parse() const {
    return GgufFile::from_memory(bytes_.data(), bytes_.size(), "t.gguf");
  }

 private:
  // resize + memcpy rather than vector::insert, which trips a false g++ 12 -Wstringop-overflow.
  GgufBytes& append(const void* p, size_t n) {
    const size_t old = bytes_.size();
    bytes_.resize(old + n);
    if (n) std::memcpy(bytes_.data() + old, p, n);
    return *this;
  }

  std::vector<uint8_t> bytes_;
};

}  // namespace tandem::gguf::testing
