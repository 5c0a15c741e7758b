// ByteCursor: bounds-checked little-endian reads from a byte range.
// Every read either succeeds completely or leaves the cursor where it was and returns false, so the
// parser can never step past the end of a (possibly hostile) file; the parser turns false into a
// message naming the field it was reading.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace tandem::gguf {

// GGUF is little endian and so is every host tandem runs on; reading with memcpy is then exact.
static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

class ByteCursor {
 public:
  ByteCursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t offset() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }

  template <class T>
  bool read(T& out) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return false;
    std::memcpy(&out, data_ + pos_, sizeof(T));  // memcpy: the file gives no alignment guarantee
    pos_ += sizeof(T);
    return true;
  }

  // A view of the next n bytes; the view points into the underlying buffer.
  bool read_bytes(uint64_t n, std::string_view& out) {
    if (n > remaining()) return false;
    out = std::string_view(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
    pos_ += size_t(n);
    return true;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace tandem::gguf
