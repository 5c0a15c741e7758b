#include "tools/tandem/numeric_options.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>

namespace tandem::cli {
namespace {

// Decimal digits after an optional sign, as a value wider than any option (past 2^64 it saturates
// to +-2^64, which is past every bound); nullopt when the text is not such an integer.
std::optional<__int128> read_decimal(const std::string& s) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  if (i == s.size()) return std::nullopt;
  constexpr __int128 kPastAll = __int128(1) << 64;
  __int128 magnitude = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    magnitude = std::min<__int128>(magnitude * 10 + (s[i] - '0'), kPastAll);
  }
  return negative ? -magnitude : magnitude;
}

std::string not_an(const std::string& text, const char* what) {
  return text.empty() ? std::string("an empty value is not ") + what : "'" + text + "' is not " + what;
}

// Bounds as the --help lines and docs/bad-input.md write them.
std::string bound_text(int64_t v) {
  if (v == INT32_MAX) return "2^31-1";
  if (v == INT64_MAX) return "2^63-1";
  return std::to_string(v);
}

std::string integer_range(int64_t lo, int64_t hi) {
  return hi == INT32_MAX ? ">= " + bound_text(lo) : bound_text(lo) + ".." + bound_text(hi);
}

// The shortest text that reads back as v, its exponent as a person writes it: 0.5, 1, 1048576, 1e9
// (std::to_chars writes 1e+09).
std::string real_text(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (const size_t e = s.find('e'); e != std::string::npos) {
    size_t digits = e + 1;
    const bool negative = digits < s.size() && s[digits] == '-';
    if (digits < s.size() && (s[digits] == '+' || s[digits] == '-')) ++digits;
    while (digits + 1 < s.size() && s[digits] == '0') ++digits;
    s = s.substr(0, e + 1) + (negative ? "-" : "") + s.substr(digits);
  }
  return s;
}

std::string real_range(const RealRange& r) {
  if (std::isinf(r.hi)) return (r.lo_open ? "> " : ">= ") + real_text(r.lo);
  return (r.lo_open ? "(" : "[") + real_text(r.lo) + ", " + real_text(r.hi) + "]";
}

CLI::Validator transform(std::function<std::string(std::string&)> check, std::string description) {
  return CLI::Validator(std::move(check), std::move(description));
}

}  // namespace

std::string check_integer(std::string& text, int64_t lo, int64_t hi) {
  const std::optional<__int128> v = read_decimal(text);
  if (!v) return not_an(text, "an integer");
  if (*v < lo) {
    return text + (lo == 0 ? " is negative" : " is below " + bound_text(lo)) + " (" + integer_range(lo, hi) + ")";
  }
  if (*v > hi) return text + " is past " + bound_text(hi) + (hi == INT32_MAX ? "" : " (" + integer_range(lo, hi) + ")");
  text = std::to_string(int64_t(*v));
  return "";
}

std::string check_uint64(std::string& text) {
  const std::optional<__int128> v = read_decimal(text);
  if (!v) return not_an(text, "an integer");
  if (*v < 0) return text + " is negative (0..2^64-1)";
  if (*v > __int128(UINT64_MAX)) return text + " is past 2^64-1";
  text = std::to_string(uint64_t(*v));
  return "";
}

std::string check_real(const std::string& text, RealRange r) {
  // strtod also reads leading spaces, hex ("0x1p3") and "infinity"; a person writes none of them
  // for these options, and the first two would be read differently by CLI11's own conversion.
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ||
      text.find_first_of("xX") != std::string::npos) {
    return not_an(text, "a number");
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || std::isnan(v)) return not_an(text, "a number");
  const std::string range = " (" + real_range(r) + ")";
  if (std::isinf(v)) return text + " is not finite" + range;
  if (std::fabs(v) > FLT_MAX) return text + " is past the largest float, 3.4e38" + range;
  const bool below = r.lo_open ? !(v > r.lo) : v < r.lo;
  if (std::isinf(r.hi) && below) {
    if (r.lo == 0) return text + (r.lo_open ? " is not positive" : " is negative") + range;
    return text + (r.lo_open ? " is not above " : " is below ") + real_text(r.lo) + range;
  }
  if (below || v > r.hi) return text + " is outside " + real_range(r);
  return "";
}

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return transform([lo, hi](std::string& text) { return check_integer(text, lo, hi); }, integer_range(lo, hi));
}

CLI::Validator any_uint64() {
  return transform([](std::string& text) { return check_uint64(text); }, "0..2^64-1");
}

CLI::Validator real_in(RealRange range) {
  return transform([range](std::string& text) { return check_real(text, range); }, real_range(range));
}

}  // namespace tandem::cli
