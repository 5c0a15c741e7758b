// Python's printf-style formatting, `fmt % args`, which Jinja2's `format` filter is. Numbers go
// through the C library's printf with the same conversion (Python's own %-formatting is defined by
// it), strings are padded and cut by character, and every width and precision is bounded.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "jinja/budget.h"
#include "jinja/error.h"
#include "jinja/limits.h"
#include "jinja/pystr.h"

namespace tandem::jinja::pystr {
namespace {

struct Spec {
  std::string flags;  // of "#0- +"
  int64_t width = 0;
  int64_t precision = -1;
  char type = 0;
};

bool has(const Spec& s, char flag) { return s.flags.find(flag) != std::string::npos; }

// snprintf into a string of the length it needs.
template <class T>
std::string c_printf(const Spec& s, const char* length, T x) {
  std::string f = "%" + s.flags + (s.width > 0 ? std::to_string(s.width) : "");
  if (s.precision >= 0) f += "." + std::to_string(s.precision);
  f += length;
  f += s.type;
  const int n = std::snprintf(nullptr, 0, f.c_str(), x);
  if (n < 0) fail("format: %" + std::string(1, s.type) + " could not be printed");
  std::string out(size_t(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), f.c_str(), x);
  out.resize(size_t(n));
  return out;
}

// A string padded to the width (left-aligned with '-') and cut to the precision, by character.
std::string padded_text(const std::string& text, const Spec& s) {
  std::string body;
  if (s.precision >= 0) {
    const auto cs = utf8_chars(text);
    for (size_t i = 0; i < cs.size() && int64_t(i) < s.precision; ++i) body += cs[i];
  } else {
    body = text;
  }
  const int64_t n = int64_t(utf8_length(body));
  if (n >= s.width) return body;
  const std::string fill(size_t(s.width - n), ' ');
  return has(s, '-') ? body + fill : fill + body;
}

int64_t integer_of(const Value& v, char type) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_float() && (type == 'd' || type == 'i' || type == 'u')) {
    const double d = std::trunc(v.as_double());
    if (std::isnan(d)) fail("format: cannot convert float NaN to integer");
    if (!(d > -9223372036854775809.0 && d < 9223372036854775808.0))
      fail("format: %" + std::string(1, type) + " of " + python_float_repr(v.as_double()) + " is past 64 bits");
    return int64_t(d);
  }
  fail(std::string("format: %") + type + " format: " + (type == 'd' || type == 'i' || type == 'u' ? "a real number" : "an integer") +
       " is required, not " + v.type_name());
}

std::string convert(const Spec& s, const Value& v) {
  switch (s.type) {
    case 's':
      return padded_text(v.str(), s);
    case 'r':
      return padded_text(v.repr(), s);
    case 'c': {
      std::string ch;
      if (v.is_string() && utf8_length(v.as_string()) == 1) {
        ch = v.as_string();
      } else if (v.is_int()) {
        const int64_t cp = v.as_int();
        if (cp < 0 || cp > 0x10ffff) fail("format: %c arg not in range(0x110000)");
        append_utf8(ch, uint32_t(cp));
      } else {
        fail("format: %c requires an int or a single character");
      }
      Spec t = s;
      t.precision = -1;
      return padded_text(ch, t);
    }
    case 'd':
    case 'i':
    case 'u': {
      Spec t = s;
      t.type = 'd';
      return c_printf(t, "ll", static_cast<long long>(integer_of(v, s.type)));
    }
    case 'o':
    case 'x':
    case 'X': {
      const int64_t x = integer_of(v, s.type);
      // Python prints the sign and the magnitude (C would print the two's complement), and its
      // alternate form of octal is 0o, not 0.
      Spec t = s;
      t.flags.erase(std::remove(t.flags.begin(), t.flags.end(), '#'), t.flags.end());
      const bool neg = x < 0;
      const unsigned long long mag = neg ? 0ull - static_cast<unsigned long long>(x) : static_cast<unsigned long long>(x);
      std::string digits = c_printf(Spec{"", 0, s.precision, s.type}, "ll", mag);
      std::string prefix = neg ? "-" : has(s, '+') ? "+" : has(s, ' ') ? " " : "";
      if (has(s, '#')) prefix += s.type == 'o' ? "0o" : s.type == 'x' ? "0x" : "0X";
      const int64_t n = int64_t(prefix.size() + digits.size());
      if (n >= s.width) return prefix + digits;
      const size_t fill = size_t(s.width - n);
      if (has(s, '-')) return prefix + digits + std::string(fill, ' ');
      if (has(s, '0')) return prefix + std::string(fill, '0') + digits;
      return std::string(fill, ' ') + prefix + digits;
    }
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G': {
      if (!v.is_number()) fail(std::string("format: %") + s.type + " format: a real number is required, not " + v.type_name());
      return c_printf(s, "", v.as_double());
    }
    default:
      fail(std::string("format: unsupported format character '") + s.type + "'");
  }
}

int64_t number_in(std::string_view fmt, size_t& i, const char* what) {
  int64_t n = 0;
  while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
    n = n * 10 + (fmt[i++] - '0');
    if (n > limits::kMaxPadding)
      fail_limit(std::string("format: a ") + what + " past " + std::to_string(limits::kMaxPadding));
  }
  return n;
}

}  // namespace

std::string percent_format(std::string_view fmt, const std::vector<Value>& positional,
                           const std::vector<std::pair<std::string, Value>>& keyword) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      append_capped(out, std::string_view(&fmt[i], 1), "format");
      continue;
    }
    if (++i >= fmt.size()) fail("format: incomplete format");
    if (fmt[i] == '%') {
      append_capped(out, "%", "format");
      continue;
    }
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string_view::npos) fail("format: incomplete format key");
      const std::string_view key = fmt.substr(i + 1, close - i - 1);
      if (keyword.empty()) fail("format: format requires a mapping");
      for (const auto& [k, v] : keyword)
        if (k == key) arg = &v;
      if (!arg) fail("format: no argument named '" + std::string(key) + "'");
      i = close + 1;
    }
    Spec s;
    while (i < fmt.size() && std::string_view("#0- +").find(fmt[i]) != std::string_view::npos) s.flags += fmt[i++];
    s.width = number_in(fmt, i, "width");
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      s.precision = number_in(fmt, i, "precision");
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;  // Python ignores them
    if (i >= fmt.size()) fail("format: incomplete format");
    s.type = fmt[i];
    if (!arg) {
      if (!keyword.empty()) fail("format: format requires a mapping");
      if (next >= positional.size()) fail("format: not enough arguments for the format string");
      arg = &positional[next++];
    }
    append_capped(out, convert(s, *arg), "format");
  }
  if (keyword.empty() && next != positional.size())
    fail("format: not all arguments converted during string formatting");
  return out;
}

}  // namespace tandem::jinja::pystr
