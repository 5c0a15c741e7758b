// str_cat: builds an error message from pieces (text and integers) in one buffer.
// Preferred over chains of `"text" + std::to_string(x)`: shorter, one allocation, and it avoids
// g++ 12's false -Wrestrict warning on `const char* + std::string&&`.
#pragma once

#include <concepts>
#include <string>
#include <string_view>

namespace tandem::gguf {

namespace str_cat_detail {
inline void append(std::string& out, std::string_view s) { out.append(s); }
inline void append(std::string& out, char c) { out.push_back(c); }
template <std::integral T>
  requires(!std::same_as<T, char> && !std::same_as<T, bool>)
void append(std::string& out, T x) {
  out.append(std::to_string(x));
}
}  // namespace str_cat_detail

template <class... Parts>
std::string str_cat(const Parts&... parts) {
  std::string out;
  (str_cat_detail::append(out, parts), ...);
  return out;
}

}  // namespace tandem::gguf
