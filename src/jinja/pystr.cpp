#include "jinja/pystr.h"

#include <cstdio>
#include <cstdlib>

#include <cmath>
#include <unordered_set>

#include "jinja/budget.h"
#include "jinja/error.h"
#include "jinja/limits.h"

namespace tandem::jinja::pystr {
namespace {

constexpr size_t kMaxWidth = size_t(limits::kMaxPadding);

bool in_set(std::string_view ch, const std::vector<std::string_view>& set) {
  for (std::string_view c : set)
    if (c == ch) return true;
  return false;
}

char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? char(c - 32) : c; }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? char(c + 32) : c; }
bool ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

size_t char_count(std::string_view s) { return utf8_chars(s).size(); }

// Pads `text` to `width` characters by a format spec's fill and alignment.
std::string pad(const std::string& text, size_t width, char align, std::string_view fill) {
  const size_t n = char_count(text);
  if (n >= width) return text;
  const size_t extra = width - n;
  auto repeat = [&](size_t k) {
    std::string r;
    for (size_t i = 0; i < k; ++i) r += fill;
    return r;
  };
  if (align == '<') return text + repeat(extra);
  if (align == '^') return repeat(extra / 2) + text + repeat(extra - extra / 2);
  return repeat(extra) + text;
}

// snprintf into a string of the length it needs (1e300 at precision 4096 is 4400 characters).
std::string printed(const char* format, int precision, double x) {
  const int n = std::snprintf(nullptr, 0, format, precision, x);
  if (n < 0) fail("format: the number could not be printed");
  std::string out(size_t(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), format, precision, x);
  out.resize(size_t(n));
  return out;
}

std::string apply_spec(const Value& v, std::string_view spec) {
  if (spec.empty()) return v.str();
  const auto chars = utf8_chars(spec);
  size_t i = 0;
  std::string fill = " ";
  char align = 0;
  auto is_align = [](std::string_view c) { return c == "<" || c == ">" || c == "^"; };
  if (chars.size() >= 2 && is_align(chars[1])) {
    fill = std::string(chars[0]);
    align = chars[1][0];
    i = 2;
  } else if (!chars.empty() && is_align(chars[0])) {
    align = chars[0][0];
    i = 1;
  }
  std::string rest;
  for (size_t k = i; k < chars.size(); ++k) rest += chars[k];
  size_t p = 0;
  char sign = 0;
  if (p < rest.size() && (rest[p] == '+' || rest[p] == '-' || rest[p] == ' ')) sign = rest[p++];
  if (p < rest.size() && rest[p] == '0' && !align) {
    fill = "0";
    align = '=';
    ++p;
  }
  // Widths and precisions past kMaxWidth are refused: a template must not ask for gigabytes.
  size_t width = 0;
  while (p < rest.size() && rest[p] >= '0' && rest[p] <= '9') {
    width = width * 10 + size_t(rest[p++] - '0');
    if (width > kMaxWidth) fail("format spec '" + std::string(spec) + "': width past 4096");
  }
  int precision = -1;
  if (p < rest.size() && rest[p] == '.') {
    ++p;
    precision = 0;
    while (p < rest.size() && rest[p] >= '0' && rest[p] <= '9') {
      precision = precision * 10 + (rest[p++] - '0');
      if (precision > int(kMaxWidth)) fail("format spec '" + std::string(spec) + "': precision past 4096");
    }
  }
  const char type = p < rest.size() ? rest[p++] : 0;
  if (p != rest.size()) fail("format spec '" + std::string(spec) + "' is not supported");
  std::string text;
  if (type == 'd' || (type == 0 && (v.is_int() || v.is_bool()) && precision < 0)) {
    if (!v.is_number() || v.is_float()) fail("format code 'd' needs an integer");
    text = std::to_string(v.as_int());
  } else if (type == 'f' || type == 'F' || type == 'e' || type == 'E' || type == '%' || (type == 0 && v.is_number())) {
    if (!v.is_number()) fail(std::string("format code '") + (type ? type : 'g') + "' needs a number");
    const int prec = precision < 0 ? 6 : precision;
    if (type == 0 && precision < 0)
      text = python_float_repr(v.as_double());
    else if (type == '%') {
      text = printed("%.*f%%", prec, v.as_double() * 100);
    } else {
      const char f[] = {'%', '.', '*', type ? type : 'g', 0};
      text = printed(f, prec, v.as_double());
    }
  } else if (type == 's' || type == 0) {
    text = v.str();
    if (precision >= 0) {
      const auto cs = utf8_chars(text);
      std::string cut;
      for (size_t k = 0; k < cs.size() && k < size_t(precision); ++k) cut += cs[k];
      text = cut;
    }
  } else {
    fail(std::string("format code '") + type + "' is not supported");
  }
  if (sign == '+' && v.is_number() && !text.empty() && text[0] != '-') text = "+" + text;
  if (align == '=') {
    const bool neg = !text.empty() && (text[0] == '-' || text[0] == '+');
    std::string body = neg ? text.substr(1) : text;
    std::string padded = pad(body, width > (neg ? 1 : 0) ? width - (neg ? 1 : 0) : 0, '>', fill);
    return (neg ? text.substr(0, 1) : "") + padded;
  }
  if (!align) align = v.is_number() ? '>' : '<';
  return pad(text, width, align, fill);
}

}  // namespace

bool is_space(std::string_view ch) {
  static const std::vector<std::string_view> kUnicodeSpaces = {
      "\u0085", "\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006",
      "\u2007", "\u2008", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"};
  if (ch.size() == 1) {
    const char c = ch[0];
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
  }
  return in_set(ch, kUnicodeSpaces);
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  std::unordered_set<std::string_view> set;
  if (chars)
    for (std::string_view c : utf8_chars(*chars)) set.insert(c);
  auto strippable = [&](std::string_view c) { return chars ? set.count(c) > 0 : is_space(c); };
  // One walk by character, no list of them: the first kept character and the end of the last.
  charge_work(s.size());
  size_t first_kept = std::string_view::npos, last_kept_end = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_char_size(s, i);
    if (!strippable(s.substr(i, n))) {
      if (first_kept == std::string_view::npos) first_kept = i;
      last_kept_end = i + n;
    }
    i += n;
  }
  if (first_kept == std::string_view::npos) return left || right ? std::string() : std::string(s);
  const size_t b = left ? first_kept : 0, e = right ? last_kept_end : s.size();
  return std::string(s.substr(b, e - b));
}

namespace {

// A part of a split is a string and, soon, a Value: charged as it is made, so a split into
// millions of parts stops at the work limit, not after it has been allocated.
void charge_part(size_t bytes) { charge_work(bytes + sizeof(std::string) + sizeof(Value)); }

}  // namespace

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                               bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) fail("split(): empty separator");
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit < 0 || int64_t(parts.size()) < maxsplit) {
        const size_t f = s.find(*sep, pos);
        if (f == std::string_view::npos) break;
        charge_part(f - pos);
        parts.emplace_back(s.substr(pos, f - pos));
        pos = f + sep->size();
      }
      parts.emplace_back(s.substr(pos));
      return parts;
    }
    size_t end = s.size();
    std::vector<std::string> rev;
    while (maxsplit < 0 || int64_t(rev.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t f = s.rfind(*sep, end - sep->size());
      if (f == std::string_view::npos) break;
      charge_part(end - f - sep->size());
      rev.emplace_back(s.substr(f + sep->size(), end - f - sep->size()));
      end = f;
    }
    rev.emplace_back(s.substr(0, end));
    return {rev.rbegin(), rev.rend()};
  }
  // Whitespace runs; leading and trailing whitespace give no empty parts.
  const auto cs = utf8_chars(s);
  if (from_right) {
    std::vector<std::string> rev;
    int64_t e = int64_t(cs.size());
    while (true) {
      while (e > 0 && is_space(cs[size_t(e - 1)])) --e;
      if (e == 0) break;
      if (maxsplit >= 0 && int64_t(rev.size()) == maxsplit) {
        std::string tail;
        for (int64_t i = 0; i < e; ++i) tail += cs[size_t(i)];
        rev.push_back(tail);
        break;
      }
      int64_t b = e;
      while (b > 0 && !is_space(cs[size_t(b - 1)])) --b;
      std::string w;
      for (int64_t i = b; i < e; ++i) w += cs[size_t(i)];
      charge_part(w.size());
      rev.push_back(w);
      e = b;
    }
    return {rev.rbegin(), rev.rend()};
  }
  size_t i = 0;
  while (true) {
    while (i < cs.size() && is_space(cs[i])) ++i;
    if (i == cs.size()) break;
    if (maxsplit >= 0 && int64_t(parts.size()) == maxsplit) {
      std::string tail;
      for (size_t k = i; k < cs.size(); ++k) tail += cs[k];
      // Python keeps the remainder's trailing whitespace only when it is not stripped: it is.
      parts.push_back(strip(tail, std::nullopt, false, true));
      break;
    }
    std::string w;
    while (i < cs.size() && !is_space(cs[i])) w += cs[i++];
    charge_part(w.size());
    parts.push_back(w);
  }
  return parts;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  static const std::vector<std::string_view> kBreaks = {"\n",   "\r",   "\v",     "\f",     "\x1c",
                                                        "\x1d", "\x1e", "\u0085", "\u2028", "\u2029"};
  std::vector<std::string> lines;
  const auto cs = utf8_chars(s);
  std::string cur;
  for (size_t i = 0; i < cs.size(); ++i) {
    if (!in_set(cs[i], kBreaks)) {
      cur += cs[i];
      continue;
    }
    std::string end(cs[i]);
    if (cs[i] == "\r" && i + 1 < cs.size() && cs[i + 1] == "\n") {
      end += "\n";
      ++i;
    }
    charge_part(cur.size());
    lines.push_back(keepends ? cur + end : cur);
    cur.clear();
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count) {
  // Capped as it grows: s.replace("x", s) squares the size.
  std::string out;
  if (old.empty()) {
    // Python inserts `with` between characters and at both ends.
    const auto cs = utf8_chars(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cs.size(); ++i) {
      if (count < 0 || done < count) {
        append_capped(out, with, "replace()");
        ++done;
      }
      if (i < cs.size()) append_capped(out, cs[i], "replace()");
    }
    return out;
  }
  charge_work(s.size());
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t f = s.find(old, pos);
    if (f == std::string_view::npos) break;
    append_capped(out, s.substr(pos, f - pos), "replace()");
    append_capped(out, with, "replace()");
    pos = f + old.size();
    ++done;
  }
  append_capped(out, s.substr(pos), "replace()");
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_upper(c);
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

std::string title(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    if (ascii_alpha(c)) {
      c = prev_cased ? ascii_lower(c) : ascii_upper(c);
      prev_cased = true;
    } else {
      // Non-ASCII letters keep the run going as Python's cased characters would.
      prev_cased = static_cast<unsigned char>(c) >= 0x80 && prev_cased;
    }
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out = lower(s);
  if (!out.empty()) out[0] = ascii_upper(out[0]);
  return out;
}

std::string format(std::string_view fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        append_capped(out, "}", "format()");
        ++i;
        continue;
      }
      fail("format(): single '}' encountered in the format string");
    }
    if (c != '{') {
      append_capped(out, std::string_view(&fmt[i], 1), "format()");
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      append_capped(out, "{", "format()");
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string_view::npos) fail("format(): single '{' encountered in the format string");
    std::string_view field = fmt.substr(i + 1, close - i - 1);
    std::string_view spec, conversion;
    if (const size_t colon = field.find(':'); colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    if (const size_t bang = field.find('!'); bang != std::string_view::npos) {
      conversion = field.substr(bang + 1);
      field = field.substr(0, bang);
    }
    const Value* v = nullptr;
    if (field.empty()) {
      if (auto_index >= args.positional.size())
        fail("format(): replacement index " + std::to_string(auto_index) + " out of range");
      v = &args.positional[auto_index++];
    } else if (field[0] >= '0' && field[0] <= '9') {
      if (field.size() > 9 || field.find_first_not_of("0123456789") != std::string_view::npos)
        fail("format(): field '" + std::string(field) + "' is not supported");
      const size_t k = size_t(std::strtoul(std::string(field).c_str(), nullptr, 10));
      if (k >= args.positional.size()) fail("format(): replacement index " + std::string(field) + " out of range");
      v = &args.positional[k];
    } else {
      for (const auto& [name, value] : args.keyword)
        if (name == field) v = &value;
      if (!v) fail("format(): no argument named '" + std::string(field) + "'");
    }
    if (conversion == "r")
      append_capped(out, apply_spec(Value(v->repr()), spec), "format()");
    else if (conversion.empty() || conversion == "s")
      append_capped(out, conversion.empty() ? apply_spec(*v, spec) : apply_spec(Value(v->str()), spec), "format()");
    else
      fail("format(): unknown conversion '!" + std::string(conversion) + "'");
    i = close;
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  check_string_size(s.size(), "escape");
  charge_work(s.size());
  out.reserve(s.size());
  for (char c : s) {
    if (out.size() > limits::kMaxStringBytes) check_string_size(out.size(), "escape");
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace tandem::jinja::pystr
