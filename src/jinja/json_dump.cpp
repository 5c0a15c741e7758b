#include "jinja/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/budget.h"
#include "jinja/error.h"

namespace tandem::jinja {
namespace {

uint32_t decode(std::string_view ch) {
  const unsigned char c = static_cast<unsigned char>(ch[0]);
  if (ch.size() == 1) return c;
  uint32_t cp = ch.size() == 2 ? c & 0x1f : ch.size() == 3 ? c & 0x0f : c & 0x07;
  for (size_t i = 1; i < ch.size(); ++i) cp = (cp << 6) | (static_cast<unsigned char>(ch[i]) & 0x3f);
  return cp;
}

void dump_string(std::string_view s, bool ensure_ascii, std::string& out) {
  out += '"';
  char buf[16];
  charge_work(s.size());
  for (size_t at = 0; at < s.size(); at += utf8_char_size(s, at)) {
    const std::string_view ch = s.substr(at, utf8_char_size(s, at));
    const unsigned char c = static_cast<unsigned char>(ch[0]);
    if (ch.size() == 1) {
      switch (c) {
        case '"':
          out += "\\\"";
          continue;
        case '\\':
          out += "\\\\";
          continue;
        case '\n':
          out += "\\n";
          continue;
        case '\r':
          out += "\\r";
          continue;
        case '\t':
          out += "\\t";
          continue;
        case '\b':
          out += "\\b";
          continue;
        case '\f':
          out += "\\f";
          continue;
        default:
          break;
      }
      if (c < 0x20 || (ensure_ascii && c >= 0x7f)) {
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
      continue;
    }
    if (!ensure_ascii) {
      out += ch;
      continue;
    }
    const uint32_t cp = decode(ch);
    if (cp >= 0x10000) {
      const uint32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    }
    out += buf;
  }
  out += '"';
}

// The containers being dumped now: Python's json.dumps refuses one met again.
thread_local std::vector<const void*> dumping;

struct Dumping {
  explicit Dumping(const void* p) {
    if (std::find(dumping.begin(), dumping.end(), p) != dumping.end()) fail("tojson: Circular reference detected");
    dumping.push_back(p);
  }
  ~Dumping() { dumping.pop_back(); }
};

// The output is checked against the string limit as it grows (an indent of 4096 at every level
// of a deep value multiplies its size) and charged as work.
void grown(const std::string& out, size_t before) {
  check_string_size(out.size(), "tojson");
  charge_work(out.size() - before);
}

void dump(const Value& v, const JsonDumpOptions& o, int level, std::string& out) {
  const size_t before = out.size();
  charge_steps(1);
  auto newline = [&](int lvl) {
    if (!o.indent) return;
    const size_t at = out.size();
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += *o.indent;
    grown(out, at);
  };
  switch (v.kind()) {
    case Value::Kind::kNone:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat: {
      const double d = v.as_double();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d < 0 ? "-Infinity" : "Infinity";
      else
        out += python_float_repr(d);
      return;
    }
    case Value::Kind::kString:
      check_string_size(out.size() + v.as_string().size(), "tojson");
      dump_string(v.as_string(), o.ensure_ascii, out);
      grown(out, before);
      return;
    case Value::Kind::kArray: {
      const Array& a = v.as_array();
      if (a.empty()) {
        out += "[]";
        return;
      }
      const Dumping mark(&a);
      const ValueDepthGuard depth("tojson");
      out += '[';
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out += o.item_separator;
        newline(level + 1);
        dump(a[i], o, level + 1, out);
        check_string_size(out.size(), "tojson");
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::kObject: {
      if (v.as_object().is_namespace) fail("Object of type Namespace is not JSON serializable");
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.as_object().items()) items.push_back(&kv);
      if (items.empty()) {
        out += "{}";
        return;
      }
      if (o.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      const Dumping mark(&v.as_object());
      const ValueDepthGuard depth("tojson");
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += o.item_separator;
        newline(level + 1);
        dump_string(items[i]->first, o.ensure_ascii, out);
        out += o.key_separator;
        grown(out, before);
        dump(items[i]->second, o, level + 1, out);
      }
      newline(level);
      out += '}';
      return;
    }
    case Value::Kind::kUndefined:
      fail("Object of type Undefined is not JSON serializable");
    case Value::Kind::kCallable:
      fail("Object of type function is not JSON serializable");
    case Value::Kind::kIteration:
      fail("Object of type " + v.as_iteration().type + " is not JSON serializable");
  }
}

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  dump(v, options, 0, out);
  return out;
}

}  // namespace tandem::jinja
