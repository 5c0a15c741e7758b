#include "jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "jinja/budget.h"
#include "jinja/error.h"
#include "jinja/limits.h"

namespace tandem::jinja {
namespace detail {

void deferred_delete(void* p, void (*destroy)(void*)) {
  thread_local bool draining = false;
  thread_local std::vector<std::pair<void*, void (*)(void*)>> pending;
  if (draining) {
    pending.emplace_back(p, destroy);
    return;
  }
  draining = true;
  destroy(p);
  while (!pending.empty()) {
    const auto [q, d] = pending.back();
    pending.pop_back();
    d(q);
  }
  draining = false;
}

}  // namespace detail

namespace {

// The containers a repr() is inside now: one met again is a value that holds itself (only a
// namespace can), printed as Python prints it ([...], {...}).
thread_local std::vector<const void*> printing;

struct Printing {
  explicit Printing(const void* p) { printing.push_back(p); }
  ~Printing() { printing.pop_back(); }
  static bool inside(const void* p) { return std::find(printing.begin(), printing.end(), p) != printing.end(); }
};

}  // namespace

Value::Value(std::string s) {
  check_string_size(s.size(), "a string");
  const size_t held = s.capacity() + sizeof(std::string);
  v_ = make_node_holding<const std::string>(held, std::move(s));
}

Value::Value(Array a) {
  check_list_size(a.size(), "a list");
  const size_t held = a.capacity() * sizeof(Value);
  v_ = make_node_holding<Array>(held, std::move(a));
}

Value Value::undefined(std::string hint) {
  return Value(Undefined{std::make_shared<const std::string>(std::move(hint))});
}

const std::string& Value::undefined_hint() const {
  static const std::string none = "undefined value";
  const Undefined& u = std::get<Undefined>(v_);
  return u.hint ? *u.hint : none;
}

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
  if (!by_name_.empty()) {
    auto it = by_name_.find(std::string(key));
    return it == by_name_.end() ? nullptr : &items_[it->second].second;
  }
  charge_steps(int64_t(items_.size() / 8));  // a walk of a small dict: a step per 8 keys
  for (size_t i = 0; i < items_.size(); ++i)
    if (!other_keys_[i] && items_[i].first == key) return &items_[i].second;
  return nullptr;
}

Object::~Object() { release_bytes(charged_to_, charged_); }

void Object::hold_entry(size_t bytes) {
  if (RenderBudget* b = hold_bytes(bytes)) {
    if (!charged_to_) charged_to_ = b;
    if (charged_to_ == b) charged_ += bytes;
    else release_bytes(b, bytes);  // (an object of another render: never held twice)
  }
}

void Object::clear() {
  // Moved out first: the values may free other objects (their destructors run after this one's
  // members are consistent again).
  auto items = std::move(items_);
  auto keys = std::move(other_keys_);
  items_.clear();
  other_keys_.clear();
  by_name_.clear();
}

Value* Object::find(std::string_view key) { return const_cast<Value*>(static_cast<const Object*>(this)->find(key)); }

const Value* Object::find_key(const Value& key) const {
  if (key.is_string()) return find(key.as_string());
  charge_steps(int64_t(items_.size()));
  for (size_t i = 0; i < items_.size(); ++i)
    if (other_keys_[i] && values_equal(*other_keys_[i], key)) return &items_[i].second;
  return nullptr;
}

void Object::set(std::string key, Value value) {
  if (Value* v = find(key)) {
    *v = std::move(value);
    return;
  }
  hold_entry(key.size() + sizeof(std::pair<std::string, Value>));
  if (!by_name_.empty()) by_name_.emplace(key, items_.size());
  items_.emplace_back(std::move(key), std::move(value));
  other_keys_.push_back(nullptr);
  if (by_name_.empty() && items_.size() >= kIndexFrom) {
    for (size_t i = 0; i < items_.size(); ++i)
      if (!other_keys_[i]) by_name_.emplace(items_[i].first, i);
  }
}

void Object::set_key(const Value& key, Value value) {
  if (key.is_string()) return set(key.as_string(), std::move(value));
  if (key.is_array() || key.is_object() || key.is_undefined() || key.is_callable())
    fail(std::string("unhashable type: '") + key.type_name() + "'");
  if (const Value* v = find_key(key)) {
    *const_cast<Value*>(v) = std::move(value);
    return;
  }
  hold_entry(2 * sizeof(std::pair<std::string, Value>));
  items_.emplace_back(key.repr(), std::move(value));
  other_keys_.push_back(std::make_shared<const Value>(key));
}

Value Object::key(size_t i) const { return other_keys_[i] ? *other_keys_[i] : Value(items_[i].first); }

Value Value::callable(std::string name, std::function<Value(const CallArgs&, Context&)> fn) {
  return Value(make_node<Callable>(Callable{std::move(name), std::move(fn)}));
}

Value Value::iteration(std::string type, Array items, bool one_shot, bool has_len) {
  const size_t held = items.capacity() * sizeof(Value);
  return Value(make_node_holding<Iteration>(held, Iteration{std::move(type), std::move(items), one_shot, has_len, false}));
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
      const Array& a = as_array();
      if (Printing::inside(&a)) return is_tuple() ? "(...)" : "[...]";
      const Printing mark(&a);
      const ValueDepthGuard depth("printing");
      std::string out = is_tuple() ? "(" : "[";
      for (size_t i = 0; i < a.size(); ++i) {
        charge_steps(1);
        if (i) append_capped(out, ", ", "printing a list");
        append_capped(out, a[i].repr(), "printing a list");
      }
      if (is_tuple()) return out + (a.size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Kind::kObject: {
      const Object& o = as_object();
      // Python's dict repr prints a dict it is already inside as {...}; Jinja2's Namespace
      // prints its dict of attributes, so a namespace inside itself shows <Namespace {...}>.
      if (Printing::inside(&o)) return o.is_namespace ? "<Namespace {...}>" : "{...}";
      const Printing mark(&o);
      const ValueDepthGuard depth("printing");
      std::string out = o.is_namespace ? "<Namespace {" : "{";
      for (size_t i = 0; i < o.items().size(); ++i) {
        charge_steps(1);
        if (i) append_capped(out, ", ", "printing a dict");
        append_capped(out, o.key(i).repr(), "printing a dict");
        append_capped(out, ": ", "printing a dict");
        append_capped(out, o.items()[i].second.repr(), "printing a dict");
      }
      return out + (o.is_namespace ? "}>" : "}");
    }
    case Kind::kCallable:
      return "<function " + as_callable().name + ">";
    case Kind::kIteration: {
      const Iteration& it = as_iteration();
      if (it.one_shot) return "<" + it.type + " object>";
      if (Printing::inside(&it)) return it.type + "([...])";
      const Printing mark(&it);
      const ValueDepthGuard depth("printing");
      std::string out = it.type + "([";
      for (size_t i = 0; i < it.items.size(); ++i) {
        charge_steps(1);
        if (i) append_capped(out, ", ", "printing a view");
        append_capped(out, it.items[i].repr(), "printing a view");
      }
      return out + "])";
    }
  }
  return "";
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  const ValueDepthGuard depth("reading JSON");
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
      auto o = make_node<Object>();
      for (const auto& [k, v] : j.items()) o->set(k, from_json(v));
      return Value(std::move(o));
    }
    default:
      return none();  // binary / discarded: not produced by the JSON parser
  }
}

bool values_equal(const Value& a, const Value& b) {
  charge_steps(1);
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
      if (a.as_string().size() != b.as_string().size()) return false;
      charge_work(a.as_string().size());
      return a.as_string() == b.as_string();
    case Value::Kind::kArray: {
      const Array &x = a.as_array(), &y = b.as_array();
      if (&x == &y) return true;  // (Python: identity first, so a list equals itself)
      if (x.size() != y.size()) return false;
      const ValueDepthGuard depth("comparing");
      for (size_t i = 0; i < x.size(); ++i)
        if (!values_equal(x[i], y[i])) return false;
      return true;
    }
    case Value::Kind::kObject: {
      const Object &x = a.as_object(), &y = b.as_object();
      if (&x == &y) return true;
      if (x.is_namespace || y.is_namespace) return false;  // a Namespace compares by identity
      if (x.size() != y.size()) return false;
      const ValueDepthGuard depth("comparing");
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
  charge_steps(1);
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    const double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order, which is Python's str order.
    charge_work(std::min(a.as_string().size(), b.as_string().size()));
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_array() && b.is_array()) {
    const Array &x = a.as_array(), &y = b.as_array();
    const ValueDepthGuard depth("comparing");
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
  charge_work(s.size());
  out.reserve(s.size() + 2);
  for (size_t at = 0; at < s.size(); at += utf8_char_size(s, at)) {
    if (out.size() > limits::kMaxStringBytes) check_string_size(out.size(), "printing a string");
    const std::string_view ch = s.substr(at, utf8_char_size(s, at));
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

size_t utf8_char_size(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 1;
  return n;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

size_t utf8_length(std::string_view s) {
  charge_work(s.size());
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += utf8_char_size(s, i)) ++n;
  return n;
}

std::vector<std::string_view> utf8_chars(std::string_view s) {
  charge_work(s.size() * (1 + sizeof(std::string_view)));
  std::vector<std::string_view> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = utf8_char_size(s, i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace tandem::jinja
