#include "jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "jinja/error.h"

namespace tandem::jinja {

const Value* CallArgs::find(size_t index, std::string_view name, std::string_view callee) const {
  const Value* by_name = nullptr;
  for (const auto& [k, v] : keyword)
    if (k == name) by_name = &v;
  if (index < positional.size()) {
    if (by_name) fail(std::string(callee) + "() got multiple values for argument '" + std::string(name) + "'");
    return &positional[index];
  }
  return by_name;
}

const Value& CallArgs::require(size_t index, std::string_view name, std::string_view callee) const {
  const Value* v = find(index, name, callee);
  if (!v) fail(std::string(callee) + "() missing required argument '" + std::string(name) + "'");
  return *v;
}

void CallArgs::expect(std::string_view callee, size_t max_positional,
                      std::initializer_list<std::string_view> known) const {
  if (positional.size() > max_positional)
    fail(std::string(callee) + "() takes at most " + std::to_string(max_positional) + " positional arguments (" +
         std::to_string(positional.size()) + " given)");
  for (const auto& [k, v] : keyword) {
    bool ok = false;
    for (std::string_view n : known) ok = ok || n == k;
    if (!ok) fail(std::string(callee) + "() got an unexpected keyword argument '" + k + "'");
  }
}

const Value* Object::find(std::string_view key) const {
  for (size_t i = 0; i < items_.size(); ++i)
    if (!other_keys_[i] && items_[i].first == key) return &items_[i].second;
  return nullptr;
}

Value* Object::find(std::string_view key) { return const_cast<Value*>(static_cast<const Object*>(this)->find(key)); }

const Value* Object::find_key(const Value& key) const {
  if (key.is_string()) return find(key.as_string());
  for (size_t i = 0; i < items_.size(); ++i)
    if (other_keys_[i] && values_equal(*other_keys_[i], key)) return &items_[i].second;
  return nullptr;
}

void Object::set(std::string key, Value value) {
  if (Value* v = find(key)) {
    *v = std::move(value);
    return;
  }
  items_.emplace_back(std::move(key), std::move(value));
  other_keys_.push_back(nullptr);
}

void Object::set_key(const Value& key, Value value) {
  if (key.is_string()) return set(key.as_string(), std::move(value));
  if (key.is_array() || key.is_object() || key.is_undefined() || key.is_callable())
    fail(std::string("unhashable type: '") + key.type_name() + "'");
  if (const Value* v = find_key(key)) {
    *const_cast<Value*>(v) = std::move(value);
    return;
  }
  items_.emplace_back(key.repr(), std::move(value));
  other_keys_.push_back(std::make_shared<const Value>(key));
}

Value Object::key(size_t i) const { return other_keys_[i] ? *other_keys_[i] : Value(items_[i].first); }

Value Value::callable(std::string name, std::function<Value(const CallArgs&, Context&)> fn) {
  return Value(std::make_shared<Callable>(Callable{std::move(name), std::move(fn)}));
}

Value Value::iteration(std::string type, Array items, bool one_shot, bool has_len) {
  return Value(std::make_shared<Iteration>(Iteration{std::move(type), std::move(items), one_shot, has_len, false}));
}

void Value::type_error(const char* want) const {
  if (is_undefined()) fail(undefined_hint());
  fail(std::string("expected ") + want + ", got '" + type_name() + "'");
}

int64_t Value::as_int() const { return is_bool() ? int64_t(as_bool()) : checked<int64_t>("an integer"); }

double Value::as_double() const {
  if (is_float()) return std::get<double>(v_);
  if (!is_int() && !is_bool()) type_error("a number");
  return double(as_int());
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_double() != 0.0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kArray:
      return !as_array().empty();
    case Kind::kObject:
      return as_object().size() != 0 || as_object().is_namespace;
    case Kind::kCallable:
      return true;
    case Kind::kIteration:
      return as_iteration().one_shot || !as_iteration().items.empty();
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kArray:
      return "list";
    case Kind::kObject:
      return as_object().is_namespace ? "Namespace" : "dict";
    case Kind::kCallable:
      return "function";
    case Kind::kIteration:
      return as_iteration().type.c_str();
  }
  return "?";
}

std::string Value::str() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return as_string();
    default:
      return repr();
  }
}

std::string Value::repr() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return as_bool() ? "True" : "False";
    case Kind::kInt:
      return std::to_string(as_int());
    case Kind::kFloat:
      return python_float_repr(as_double());
    case Kind::kString:
      return python_string_repr(as_string());
    case Kind::kArray: {
      std::string out = is_tuple() ? "(" : "[";
      const Array& a = as_array();
      for (size_t i = 0; i < a.size(); ++i) out += (i ? ", " : "") + a[i].repr();
      if (is_tuple()) return out + (a.size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Kind::kObject: {
      const Object& o = as_object();
      std::string out = o.is_namespace ? "<Namespace {" : "{";
      for (size_t i = 0; i < o.items().size(); ++i)
        out += (i ? ", " : "") + o.key(i).repr() + ": " + o.items()[i].second.repr();
      return out + (o.is_namespace ? "}>" : "}");
    }
    case Kind::kCallable:
      return "<function " + as_callable().name + ">";
    case Kind::kIteration: {
      const Iteration& it = as_iteration();
      if (it.one_shot) return "<" + it.type + " object>";
      std::string out = it.type + "([";
      for (size_t i = 0; i < it.items.size(); ++i) out += (i ? ", " : "") + it.items[i].repr();
      return out + "])";
    }
  }
  return "";
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      return u <= uint64_t(INT64_MAX) ? Value(int64_t(u)) : Value(double(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      for (const auto& e : j) a.push_back(from_json(e));
      return Value(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto o = std::make_shared<Object>();
      for (const auto& [k, v] : j.items()) o->set(k, from_json(v));
      return Value(std::move(o));
    }
    default:
      return none();  // binary / discarded: not produced by the JSON parser
  }
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kArray: {
      const Array &x = a.as_array(), &y = b.as_array();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!values_equal(x[i], y[i])) return false;
      return true;
    }
    case Value::Kind::kObject: {
      const Object &x = a.as_object(), &y = b.as_object();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items()) {
        const Value* w = y.find(k);
        if (!w || !values_equal(v, *w)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable:
      return &a.as_callable() == &b.as_callable();
    case Value::Kind::kIteration:
      return &a.as_iteration() == &b.as_iteration();
    default:
      return false;
  }
}

int compare_values(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    const double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order, which is Python's str order.
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_array() && b.is_array()) {
    const Array &x = a.as_array(), &y = b.as_array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (values_equal(x[i], y[i])) continue;
      return compare_values(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  fail(std::string("'<' not supported between instances of '") + a.type_name() + "' and '" + b.type_name() + "'");
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  // Shortest round-trip digits in the form d.ddde±XX, then laid out as Python's repr does.
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string s(buf, res.ptr);
  const size_t e = s.find('e');
  std::string mantissa = s.substr(0, e);
  const int exponent = std::stoi(s.substr(e + 1));
  std::string sign;
  if (mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + ebuf;
  }
  if (exponent < 0) return sign + "0." + std::string(size_t(-exponent - 1), '0') + digits;
  const size_t int_digits = size_t(exponent) + 1;
  if (digits.size() <= int_digits) return sign + digits + std::string(int_digits - digits.size(), '0') + ".0";
  return sign + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

std::string python_string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (std::string_view ch : utf8_chars(s)) {
    const unsigned char c = static_cast<unsigned char>(ch[0]);
    char buf[16];
    if (ch.size() == 1) {
      if (c == static_cast<unsigned char>(quote) || c == '\\') {
        out += '\\';
        out += char(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c >= 0x7f) {
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      } else {
        out += char(c);
      }
    } else if (ch.size() == 2 && c == 0xc2 && static_cast<unsigned char>(ch[1]) < 0xa0) {
      // C1 controls (U+0080..U+009F) are not printable in Python.
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(ch[1]));
      out += buf;
    } else if (ch == "\u2028" || ch == "\u2029") {
      out += ch == "\u2028" ? "\\u2028" : "\\u2029";
    } else {
      out += ch;
    }
  }
  return out + quote;
}

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 1;
    if (i + n > s.size()) n = 1;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) n = 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace tandem::jinja
