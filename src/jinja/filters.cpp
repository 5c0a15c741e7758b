// Jinja2's built-in filters that chat templates use, with Hugging Face's tojson.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include <charconv>
#include <limits>

#include "jinja/budget.h"
#include "jinja/context.h"
#include "jinja/error.h"
#include "jinja/limits.h"
#include "jinja/json_dump.h"
#include "jinja/pystr.h"

namespace tandem::jinja {
namespace {

constexpr size_t kKeywordOnly = SIZE_MAX;  // find(): an argument that cannot be positional
using limits::kMaxPadding;

std::optional<std::string> optional_string(const Value* v, const char* what) {
  if (!v || v->is_none() || v->is_undefined()) return std::nullopt;
  if (!v->is_string()) fail(std::string(what) + " must be a string, not '" + v->type_name() + "'");
  return v->as_string();
}

bool flag(const Value* v, bool dflt) { return v ? v->truthy() : dflt; }

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString:
      return int64_t(utf8_length(v.as_string()));
    case Value::Kind::kArray:
      return int64_t(v.as_array().size());
    case Value::Kind::kObject:
      return int64_t(v.as_object().size());
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kIteration:
      if (v.as_iteration().has_len) return int64_t(v.as_iteration().items.size());
      [[fallthrough]];
    default:
      fail(std::string("object of type '") + v.type_name() + "' has no len()");
  }
}

// Jinja2's attribute lookup for filters' attribute= arguments: dotted paths, integer parts index.
Value attribute_of(const Value& item, const std::string& path) {
  Value cur = item;
  for (const std::string& part : pystr::split(path, std::string("."), -1)) {
    if (cur.is_object()) {
      const Value* v = cur.as_object().find(part);
      cur = v ? *v : Value::undefined("'dict object' has no attribute '" + part + "'");
    } else if (cur.is_array() && !part.empty() && part.size() < 10 &&
               std::all_of(part.begin(), part.end(), ::isdigit)) {
      const size_t i = size_t(std::strtoul(part.c_str(), nullptr, 10));
      cur = i < cur.as_array().size() ? cur.as_array()[i] : Value::undefined("no element " + part);
    } else {
      return Value::undefined(std::string("'") + cur.type_name() + " object' has no attribute '" + part + "'");
    }
  }
  return cur;
}

// select / reject / selectattr / rejectattr.
Value select_items(const Value& in, const CallArgs& args, bool by_attribute, bool keep_when) {
  const Array items = in.truthy() ? iterate(in) : Array{};  // Jinja2 tests `if value:` first
  size_t next = 0;
  std::string attr;
  if (by_attribute) {
    if (args.positional.empty() || !args.positional[0].is_string())
      fail("selectattr/rejectattr need an attribute name");
    attr = args.positional[next++].as_string();
  }
  const TestFn* test = nullptr;
  CallArgs test_args;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string()) fail("the test name must be a string");
    const std::string name = args.positional[next++].as_string();
    test = find_test(name);
    if (!test) fail("no test named '" + name + "'");
    test_args.positional.assign(args.positional.begin() + long(next), args.positional.end());
  }
  Array out;
  for (const Value& item : items) {
    const Value subject = by_attribute ? attribute_of(item, attr) : item;
    const bool pass = test ? (*test)(subject, test_args) : subject.truthy();
    if (pass == keep_when) out.push_back(item);
  }
  return Value::iteration("generator", std::move(out), true, false);
}

// A filter's string result, Markup when its input was.
Value same_kind(const Value& in, std::string out) {
  return in.is_markup() ? Value::markup(std::move(out)) : Value(std::move(out));
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(pystr::lower(v.as_string()));
  return v;
}

// Python's round(x, ndigits): the decimal nearest x at that many digits (halves to even, on x's
// exact binary value), as CPython does it: through the correctly rounded decimal text. An int
// stays an int (round(5) is 5; round(1234, -2) is 1200).
Value python_round(const Value& in, int64_t digits) {
  if (!in.is_float()) {
    const int64_t x = in.as_int();
    if (digits >= 0) return Value(x);
    if (digits < -18) return Value(int64_t(0));
    int64_t pow10 = 1;
    for (int64_t i = 0; i < -digits; ++i) pow10 *= 10;
    // Nearest multiple of pow10, halves to even (Python's int.__round__).
    int64_t q = x / pow10, r = x % pow10;
    if (r < 0) {
      --q;
      r += pow10;
    }
    if (2 * __int128(r) > pow10 || (2 * __int128(r) == pow10 && (q & 1))) ++q;
    __int128 out = __int128(q) * pow10;
    if (out > std::numeric_limits<int64_t>::max() || out < std::numeric_limits<int64_t>::min())
      fail("round() overflows 64 bits");
    return Value(int64_t(out));
  }
  const double x = in.as_double();
  if (!std::isfinite(x) || x == 0) return Value(x);
  // CPython: past these many digits a double is already exact; before them it rounds to 0.
  if (digits > 323) return Value(x);
  if (digits < -308) return Value(0.0 * x);
  if (digits < 0) {
    const double scale = std::pow(10.0, double(-digits));
    const double y = std::nearbyint(x / scale) * scale;
    if (!std::isfinite(y)) fail("round(): the rounded value is too large for a float");
    return Value(y);
  }
  char buf[512];
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, int(digits));
  if (r.ec != std::errc()) return Value(x);
  double y = 0;
  std::from_chars(buf, r.ptr, y);
  return Value(y);
}

Value filter_tojson(const Value& in, const CallArgs& args, Context&) {
  args.expect("tojson", 5, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = flag(args.find(0, "ensure_ascii", "tojson"), false);
  if (const Value* indent = args.find(1, "indent", "tojson"); indent && !indent->is_none()) {
    if (indent->is_string())
      o.indent = indent->as_string();
    else if (indent->is_int() && indent->as_int() > kMaxPadding)
      fail_limit("tojson(): indent past " + std::to_string(kMaxPadding));
    else if (indent->is_int())
      o.indent = std::string(size_t(std::max<int64_t>(0, indent->as_int())), ' ');
    else
      fail("tojson(): indent must be an integer or a string");
    o.item_separator = ",";
  }
  if (const Value* sep = args.find(2, "separators", "tojson"); sep && !sep->is_none()) {
    if (!sep->is_array() || sep->as_array().size() != 2 || !sep->as_array()[0].is_string() ||
        !sep->as_array()[1].is_string())
      fail("tojson(): separators must be two strings");
    o.item_separator = sep->as_array()[0].as_string();
    o.key_separator = sep->as_array()[1].as_string();
  }
  o.sort_keys = flag(args.find(3, "sort_keys", "tojson"), false);
  return Value(json_dumps(in, o));
}

Value filter_indent(const Value& in, const CallArgs& args, Context&) {
  args.expect("indent", 3, {"width", "first", "blank"});
  std::string pad = "    ";
  if (const Value* w = args.find(0, "width", "indent")) {
    if (!w->is_string() && w->as_int() > kMaxPadding) fail_limit("indent(): width past " + std::to_string(kMaxPadding));
    pad = w->is_string() ? w->as_string() : std::string(size_t(std::max<int64_t>(0, w->as_int())), ' ');
  }
  const bool first = flag(args.find(1, "first", "indent"), false);
  const bool blank = flag(args.find(2, "blank", "indent"), false);
  const std::string s = in.str() + "\n";  // Jinja2's own quirk, for splitlines
  const std::vector<std::string> lines = pystr::splitlines(s);
  // Every line can gain the pad: the result is capped as it grows.
  std::string out;
  if (first) append_capped(out, pad, "indent()");
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) {
      append_capped(out, "\n", "indent()");
      if (blank || !lines[i].empty()) append_capped(out, pad, "indent()");
    }
    append_capped(out, lines[i], "indent()");
  }
  return Value(std::move(out));
}

Value filter_map(const Value& in, const CallArgs& args, Context& ctx) {
  const Array items = in.truthy() ? iterate(in) : Array{};  // Jinja2 tests `if value:` first
  Array out;
  if (const Value* attr = args.find(kKeywordOnly, "attribute", "map")) {
    if (!attr->is_string()) fail("map(): attribute must be a string");
    const Value* dflt = args.find(kKeywordOnly, "default", "map");
    for (const Value& item : items) {
      Value v = attribute_of(item, attr->as_string());
      out.push_back(v.is_undefined() && dflt ? *dflt : v);
    }
    return Value::iteration("generator", std::move(out), true, false);
  }
  if (args.positional.empty() || !args.positional[0].is_string()) fail("map() needs a filter name or attribute=");
  const std::string name = args.positional[0].as_string();
  const FilterFn* f = find_filter(name);
  if (!f) fail("no filter named '" + name + "'");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : items) {
    ctx.budget().step();
    out.push_back((*f)(item, rest, ctx));
  }
  return Value::iteration("generator", std::move(out), true, false);
}

Value filter_sort(const Value& in, const CallArgs& args, Context&) {
  args.expect("sort", 3, {"reverse", "case_sensitive", "attribute"});
  Array items = iterate(in);
  const bool reverse = flag(args.find(0, "reverse", "sort"), false);
  const bool cs = flag(args.find(1, "case_sensitive", "sort"), false);
  const auto attr = optional_string(args.find(2, "attribute", "sort"), "sort(): attribute");
  auto key = [&](const Value& v) { return sort_key(attr ? attribute_of(v, *attr) : v, cs); };
  std::stable_sort(items.begin(), items.end(),
                   [&](const Value& a, const Value& b) { return compare_values(key(a), key(b)) < 0; });
  if (reverse) std::reverse(items.begin(), items.end());
  return Value(std::move(items));
}

Value min_max(const Value& in, const CallArgs& args, bool want_max) {
  const Array items = iterate(in);
  if (items.empty()) return Value::undefined("min/max of an empty sequence");
  const bool cs = flag(args.find(0, "case_sensitive", "min"), false);
  const auto attr = optional_string(args.find(1, "attribute", "min"), "attribute");
  auto key = [&](const Value& v) { return sort_key(attr ? attribute_of(v, *attr) : v, cs); };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const int c = compare_values(key(items[i]), key(items[best]));
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}

const std::unordered_map<std::string, FilterFn>& filter_registry() {
  static const std::unordered_map<std::string, FilterFn> filters = [] {
    std::unordered_map<std::string, FilterFn> f;
    f["length"] = [](const Value& in, const CallArgs&, Context&) { return Value(length(in)); };
    f["count"] = f["length"];
    // Markup stays Markup through string, trim and the case filters (markupsafe's methods).
    f["string"] = [](const Value& in, const CallArgs&, Context&) { return in.is_markup() ? in : Value(in.str()); };
    f["safe"] = [](const Value& in, const CallArgs&, Context&) { return Value::markup(in.str()); };
    f["trim"] = [](const Value& in, const CallArgs& a, Context&) {
      a.expect("trim", 1, {"chars"});
      return same_kind(
          in, pystr::strip(in.str(), optional_string(a.find(0, "chars", "trim"), "trim(): chars"), true, true));
    };
    f["upper"] = [](const Value& in, const CallArgs&, Context&) { return same_kind(in, pystr::upper(in.str())); };
    f["lower"] = [](const Value& in, const CallArgs&, Context&) { return same_kind(in, pystr::lower(in.str())); };
    f["title"] = [](const Value& in, const CallArgs&, Context&) { return same_kind(in, pystr::title(in.str())); };
    f["capitalize"] = [](const Value& in, const CallArgs&, Context&) {
      return same_kind(in, pystr::capitalize(in.str()));
    };
    f["default"] = [](const Value& in, const CallArgs& a, Context&) {
      a.expect("default", 2, {"default_value", "boolean"});
      const Value* d = a.find(0, "default_value", "default");
      const bool boolean = flag(a.find(1, "boolean", "default"), false);
      if (in.is_undefined() || (boolean && !in.truthy())) return d ? *d : Value("");
      return in;
    };
    f["d"] = f["default"];
    f["tojson"] = filter_tojson;
    f["join"] = [](const Value& in, const CallArgs& a, Context&) {
      a.expect("join", 2, {"d", "attribute"});
      const Value* sep = a.find(0, "d", "join");
      const auto attr = optional_string(a.find(1, "attribute", "join"), "join(): attribute");
      std::string out;
      const Array items = in.is_undefined() ? Array{} : iterate(in);
      const std::string separator = sep ? sep->str() : std::string();
      for (size_t i = 0; i < items.size(); ++i) {
        charge_steps(1);
        if (i) append_capped(out, separator, "join()");
        append_capped(out, (attr ? attribute_of(items[i], *attr) : items[i]).str(), "join()");
      }
      return Value(std::move(out));
    };
    f["items"] = [](const Value& in, const CallArgs&, Context&) {
      if (in.is_undefined()) return Value(Array{});
      if (!in.is_object()) fail(std::string("items() needs a mapping, not '") + in.type_name() + "'");
      Array out;
      const Object& o = in.as_object();
      for (size_t i = 0; i < o.size(); ++i) out.push_back(Value::tuple(Array{o.key(i), o.items()[i].second}));
      return Value::iteration("generator", std::move(out), true, false);
    };
    f["dictsort"] = [](const Value& in, const CallArgs& a, Context&) {
      a.expect("dictsort", 3, {"case_sensitive", "by", "reverse"});
      if (!in.is_object()) fail(std::string("dictsort needs a mapping, not '") + in.type_name() + "'");
      const bool cs = flag(a.find(0, "case_sensitive", "dictsort"), false);
      const auto by = optional_string(a.find(1, "by", "dictsort"), "dictsort(): by").value_or("key");
      if (by != "key" && by != "value") fail("dictsort(): by must be 'key' or 'value'");
      const bool reverse = flag(a.find(2, "reverse", "dictsort"), false);
      Array out;
      const Object& o = in.as_object();
      for (size_t i = 0; i < o.size(); ++i) out.push_back(Value::tuple(Array{o.key(i), o.items()[i].second}));
      const size_t pick = by == "key" ? 0 : 1;
      std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
        return compare_values(sort_key(x.as_array()[pick], cs), sort_key(y.as_array()[pick], cs)) < 0;
      });
      if (reverse) std::reverse(out.begin(), out.end());
      return Value(std::move(out));
    };
    f["list"] = [](const Value& in, const CallArgs&, Context&) { return Value(iterate(in)); };
    f["first"] = [](const Value& in, const CallArgs&, Context&) {
      const Array items = iterate(in);
      return items.empty() ? Value::undefined("first() of an empty sequence") : items.front();
    };
    f["last"] = [](const Value& in, const CallArgs&, Context&) {
      if (in.is_iteration() && in.as_iteration().one_shot)
        fail(std::string("'") + in.type_name() + "' object is not reversible");
      const Array items = iterate(in);
      return items.empty() ? Value::undefined("last() of an empty sequence") : items.back();
    };
    f["reverse"] = [](const Value& in, const CallArgs&, Context&) {
      if (in.is_string()) {
        const auto cs = utf8_chars(in.as_string());
        std::string out;
        for (auto it = cs.rbegin(); it != cs.rend(); ++it) out += *it;
        return Value(out);
      }
      // reversed(): an iterator over a list; a generator is first made a list.
      const bool was_list = in.is_array();
      Array items = iterate(in);
      std::reverse(items.begin(), items.end());
      if (was_list) return Value::iteration("list_reverseiterator", std::move(items), true, false);
      return Value(std::move(items));
    };
    f["replace"] = [](const Value& in, const CallArgs& a, Context&) {
      a.expect("replace", 3, {"old", "new", "count"});
      const Value& old = a.require(0, "old", "replace");
      const Value& with = a.require(1, "new", "replace");
      const Value* count = a.find(2, "count", "replace");
      return Value(pystr::replace(in.str(), old.str(), with.str(), count && !count->is_none() ? count->as_int() : -1));
    };
    f["select"] = [](const Value& in, const CallArgs& a, Context&) { return select_items(in, a, false, true); };
    f["reject"] = [](const Value& in, const CallArgs& a, Context&) { return select_items(in, a, false, false); };
    f["selectattr"] = [](const Value& in, const CallArgs& a, Context&) { return select_items(in, a, true, true); };
    f["rejectattr"] = [](const Value& in, const CallArgs& a, Context&) { return select_items(in, a, true, false); };
    f["map"] = filter_map;
    f["indent"] = filter_indent;
    f["sort"] = filter_sort;
    f["unique"] = [](const Value& in, const CallArgs& a, Context&) {
      // Jinja2 keeps a set of the values seen: one pass, by hash. Python's equal values hash
      // alike (1 == 1.0 == True), so numbers are keyed by value, not type.
      const bool cs = flag(a.find(0, "case_sensitive", "unique"), false);
      const auto attr = optional_string(a.find(1, "attribute", "unique"), "unique(): attribute");
      Array out;
      std::unordered_set<std::string> seen;
      for (const Value& v : iterate(in)) {
        charge_steps(1);
        const Value k = sort_key(attr ? attribute_of(v, *attr) : v, cs);
        std::string key;
        if (k.is_string()) {
          key = "s" + k.as_string();
        } else if (k.is_float() && !(k.as_double() == std::trunc(k.as_double()) && std::fabs(k.as_double()) < 9.2e18)) {
          key = "f" + python_float_repr(k.as_double());
        } else if (k.is_number()) {
          key = "i" + std::to_string(k.is_float() ? int64_t(k.as_double()) : k.as_int());
        } else if (k.is_none()) {
          key = "n";
        } else {
          fail(std::string("unique(): unhashable type: '") + k.type_name() + "'");
        }
        if (seen.insert(std::move(key)).second) out.push_back(v);
      }
      return Value::iteration("generator", std::move(out), true, false);
    };
    f["min"] = [](const Value& in, const CallArgs& a, Context&) { return min_max(in, a, false); };
    f["max"] = [](const Value& in, const CallArgs& a, Context&) { return min_max(in, a, true); };
    f["sum"] = [](const Value& in, const CallArgs& a, Context&) {
      const auto attr = optional_string(a.find(0, "attribute", "sum"), "sum(): attribute");
      const Value* start = a.find(1, "start", "sum");
      Value total = start ? *start : Value(int64_t(0));
      for (const Value& v : iterate(in)) {
        const Value x = attr ? attribute_of(v, *attr) : v;
        if (!x.is_number() || !total.is_number()) fail("sum() needs numbers");
        int64_t r = 0;
        if (total.is_float() || x.is_float())
          total = Value(total.as_double() + x.as_double());
        else if (__builtin_add_overflow(total.as_int(), x.as_int(), &r))
          fail("sum() overflows 64 bits");
        else
          total = Value(r);
      }
      return total;
    };
    f["abs"] = [](const Value& in, const CallArgs&, Context&) {
      if (!in.is_number()) fail(std::string("bad operand type for abs(): '") + in.type_name() + "'");
      if (in.is_float()) return Value(std::fabs(in.as_double()));
      if (in.as_int() == std::numeric_limits<int64_t>::min()) fail("abs() of -2^63 overflows 64 bits");
      return Value(in.as_int() < 0 ? -in.as_int() : in.as_int());
    };
    f["int"] = [](const Value& in, const CallArgs& a, Context&) {
      // Jinja2: int(x), else int(float(x)), else the default. Python's int has no bound; tandem's
      // is 64 bits, so a value past it is an error rather than a wrapped number.
      const Value* dflt = a.find(0, "default", "int");
      const Value fallback = dflt ? *dflt : Value(int64_t(0));
      if (in.is_int() || in.is_bool()) return Value(in.as_int());
      auto truncated = [&](double d) -> Value {
        if (std::isnan(d)) return fallback;  // int(nan) is a ValueError: the default
        if (std::isinf(d)) fail("int(): cannot convert float infinity to integer");
        if (!(d > -9223372036854775809.0 && d < 9223372036854775808.0))
          fail("int(): " + python_float_repr(d) + " is past 64 bits");
        return Value(int64_t(d));
      };
      if (in.is_float()) return truncated(in.as_double());
      if (in.is_string()) {
        const std::string s = pystr::strip(in.as_string(), std::nullopt, true, true);
        std::string digits;
        for (char c : s)
          if (c != '_') digits += c;  // Python allows 1_000
        int64_t v = 0;
        const char* b = digits.data() + (!digits.empty() && digits[0] == '+' ? 1 : 0);
        const char* e = digits.data() + digits.size();
        const auto r = std::from_chars(b, e, v);
        if (r.ptr == e && b != e && s.find("__") == std::string::npos) {
          if (r.ec == std::errc::result_out_of_range) fail("int(): '" + s + "' is past 64 bits");
          return Value(v);
        }
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size() && !std::isspace(static_cast<unsigned char>(s[0]))) {
          return truncated(d);
        }
      }
      return fallback;
    };
    f["float"] = [](const Value& in, const CallArgs& a, Context&) {
      const Value* dflt = a.find(0, "default", "float");
      const Value fallback = dflt ? *dflt : Value(0.0);
      if (in.is_number()) return Value(in.as_double());
      if (in.is_string()) {
        try {
          size_t used = 0;
          const std::string s = pystr::strip(in.as_string(), std::nullopt, true, true);
          const double d = std::stod(s, &used);
          if (used == s.size()) return Value(d);
        } catch (const std::exception&) {
        }
      }
      return fallback;
    };
    f["round"] = [](const Value& in, const CallArgs& a, Context&) {
      const Value* p = a.find(0, "precision", "round");
      const auto method = optional_string(a.find(1, "method", "round"), "round(): method").value_or("common");
      if (method != "common" && method != "ceil" && method != "floor")
        fail("round(): method must be common, ceil or floor");
      if (!in.is_number()) fail("round() needs a number");
      const int64_t digits = p ? p->as_int() : 0;
      if (method == "common") return python_round(in, digits);
      // Jinja2: math.ceil/floor(value * 10**precision) / 10**precision, a float.
      const double x = in.as_double();
      if (!std::isfinite(x)) return Value(x);
      const double scale = std::pow(10.0, double(std::clamp<int64_t>(digits, -400, 400)));
      const double scaled = x * scale;
      if (!std::isfinite(scaled) || scale == 0) return Value(x);  // as precise as a double gets
      const double r = method == "ceil" ? std::ceil(scaled) : std::floor(scaled);
      return Value(r / scale);
    };
    f["escape"] = [](const Value& in, const CallArgs&, Context&) {
      return in.is_markup() ? in : Value::markup(pystr::html_escape(in.str()));
    };
    f["e"] = f["escape"];
    f["format"] = [](const Value& in, const CallArgs& a, Context&) {
      charge_steps(int64_t(a.positional.size()));
      if (!a.positional.empty() && !a.keyword.empty())
        fail("format(): can't handle positional and keyword arguments at the same time");
      return Value(pystr::percent_format(in.str(), a.positional, a.keyword));
    };
    f["center"] = [](const Value& in, const CallArgs& a, Context&) {
      const Value* w = a.find(0, "width", "center");
      const int64_t width = w ? w->as_int() : 80;
      if (width > kMaxPadding) fail_limit("center(): width past " + std::to_string(kMaxPadding));
      const std::string s = in.str();
      const int64_t n = int64_t(utf8_length(s));
      if (n >= width) return Value(s);
      const int64_t left = (width - n) / 2 + ((width - n) % 2 & width % 2);  // Python's str.center
      return Value(std::string(size_t(left), ' ') + s + std::string(size_t(width - n - left), ' '));
    };
    f["wordcount"] = [](const Value& in, const CallArgs&, Context&) {
      return Value(int64_t(pystr::split(in.str(), std::nullopt, -1).size()));
    };
    f["attr"] = [](const Value& in, const CallArgs& a, Context&) {
      const Value& name = a.require(0, "name", "attr");
      if (!in.is_object() || !name.is_string()) return Value::undefined("attr(): no such attribute");
      const Value* v = in.as_object().find(name.as_string());
      return v ? *v : Value::undefined("'dict object' has no attribute '" + name.as_string() + "'");
    };
    return f;
  }();
  return filters;
}

}  // namespace

const FilterFn* find_filter(const std::string& name) {
  const auto& r = filter_registry();
  auto it = r.find(name);
  return it == r.end() ? nullptr : &it->second;
}

}  // namespace tandem::jinja
