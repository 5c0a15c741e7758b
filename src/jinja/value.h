// The values a Jinja template computes with, behaving as the Python objects Jinja2 gives a chat
// template (str, int, float, bool, None, list, dict, Undefined), so that printing, comparing and
// testing them gives Python's answers byte for byte: `{{ 1.0 }}` prints "1.0", `{{ [1, 'a'] }}`
// prints "[1, 'a']", 1 == 1.0 == True, and a dict keeps its insertion order.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "jinja/budget.h"
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace tandem::jinja {

class Value;
class Context;
class Object;
struct Callable;
struct CallArgs;
struct Iteration;

using Array = std::vector<Value>;

namespace detail {
// Frees a container without recursion: its members' destructors, when they free containers of
// their own, queue them here and this loop frees them one by one. A list nested a million deep (a
// template's loop can build one) would otherwise overflow the stack in its destructor.
void deferred_delete(void* p, void (*destroy)(void*));
// Also gives back the bytes the node's render was charged for it (budget.h's hold_bytes).
template <class T>
struct DeferredDelete {
  RenderBudget* charged = nullptr;
  size_t bytes = 0;
  void operator()(T* p) const {
    release_bytes(charged, bytes);
    deferred_delete(const_cast<std::remove_const_t<T>*>(p), [](void* q) { delete static_cast<T*>(q); });
  }
};
}  // namespace detail

// Every string, list, dict, callable and iteration of a render is made by this (freed without
// recursion); `held` bytes are charged to the render while the node lives.
template <class T, class... A>
std::shared_ptr<T> make_node_holding(size_t held, A&&... a) {
  T* p = new T(std::forward<A>(a)...);
  RenderBudget* charged = nullptr;
  try {
    charged = hold_bytes(held);
  } catch (...) {
    delete p;
    throw;
  }
  return std::shared_ptr<T>(p, detail::DeferredDelete<T>{charged, held});
}
template <class T, class... A>
std::shared_ptr<T> make_node(A&&... a) {
  return make_node_holding<T>(0, std::forward<A>(a)...);
}

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kCallable, kIteration };

  // Undefined remembers what was missing, for the error when it is used.
  struct Undefined {
    std::shared_ptr<const std::string> hint;
  };
  struct None {};

  Value() : v_(Undefined{}) {}
  explicit Value(Undefined u) : v_(std::move(u)) {}
  explicit Value(None n) : v_(n) {}
  static Value undefined(std::string hint);
  static Value none() { return Value(None{}); }
  Value(bool b) : v_(b) {}                                       // NOLINT: implicit, as Python's literals
  Value(int64_t i) : v_(i) {}                                    // NOLINT
  Value(int i) : v_(int64_t(i)) {}                               // NOLINT
  Value(double d) : v_(d) {}                                     // NOLINT
  // A string is shared, never copied: reading a variable is O(1) whatever its size. Making one
  // is checked against limits::kMaxStringBytes and charged to the render's work.
  Value(std::string s);                                          // NOLINT
  Value(const char* s) : Value(std::string(s)) {}                // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}           // NOLINT
  Value(Array a);                                                // NOLINT: checked and charged as a string
  Value(std::shared_ptr<Array> a) : v_(std::move(a)) {}          // NOLINT
  Value(std::shared_ptr<Object> o) : v_(std::move(o)) {}         // NOLINT
  Value(std::shared_ptr<Callable> c) : v_(std::move(c)) {}       // NOLINT
  Value(std::shared_ptr<Iteration> g) : v_(std::move(g)) {}      // NOLINT
  // Markupsafe's Markup (what |safe and |escape return): `markup + str` escapes the str.
  static Value markup(std::string s) {
    Value v(std::move(s));
    v.flags_ |= kMarkupFlag;
    return v;
  }
  // A tuple: a list that prints as (a, b), as dict items and (a, b) literals do in Python.
  static Value tuple(Array a) {
    Value v(std::move(a));
    v.flags_ |= kTupleFlag;
    return v;
  }
  static Value iteration(std::string type, Array items, bool one_shot, bool has_len);
  static Value callable(std::string name, std::function<Value(const CallArgs&, Context&)> fn);

  Kind kind() const { return Kind(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // bool is an int in Python
  bool is_string() const { return kind() == Kind::kString; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_iteration() const { return kind() == Kind::kIteration; }
  bool is_markup() const { return is_string() && (flags_ & kMarkupFlag); }
  bool is_tuple() const { return is_array() && (flags_ & kTupleFlag); }

  // The typed views. A template that hands a value of another type where one is needed gets a
  // TemplateError ("expected an integer, got 'str'"), never an exception from the variant.
  bool as_bool() const { return checked<bool>("a bool"); }
  int64_t as_int() const;    // bool or int
  double as_double() const;  // bool, int or float
  const std::string& as_string() const { return *checked<std::shared_ptr<const std::string>>("a string"); }
  const Array& as_array() const { return *checked<std::shared_ptr<Array>>("a list"); }
  Array& as_array() { return *checked<std::shared_ptr<Array>>("a list"); }
  const Object& as_object() const { return *checked<std::shared_ptr<Object>>("a dict"); }
  Object& as_object() { return *checked<std::shared_ptr<Object>>("a dict"); }
  const Callable& as_callable() const { return *checked<std::shared_ptr<Callable>>("a callable"); }
  Iteration& as_iteration() const { return *checked<std::shared_ptr<Iteration>>("an iterator"); }
  const std::string& undefined_hint() const;

  // Python's bool(x).
  bool truthy() const;
  // Python's str(x) (Undefined prints as nothing, as Jinja2's default Undefined).
  std::string str() const;
  // Python's repr(x): what str() of a list or dict shows for its members.
  std::string repr() const;
  // Python's type name, for errors ("'int' object is not iterable").
  const char* type_name() const;

  // From and to JSON (messages in, tojson out). Numbers keep int vs float. Throws TemplateError
  // for JSON nested past limits::kMaxValueDepth.
  static Value from_json(const nlohmann::ordered_json& j);

 private:
  template <class T>
  const T& checked(const char* want) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    type_error(want);
  }
  [[noreturn]] void type_error(const char* want) const;

  static constexpr uint8_t kMarkupFlag = 1, kTupleFlag = 2;
  std::variant<Undefined, None, bool, int64_t, double, std::shared_ptr<const std::string>, std::shared_ptr<Array>,
               std::shared_ptr<Object>, std::shared_ptr<Callable>, std::shared_ptr<Iteration>>
      v_;
  uint8_t flags_ = 0;
};

// The arguments of a call: positional, then keyword (in the order written).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument named `name`, or the positional one at `index`, or nullptr. Refuses an
  // argument given both ways, as Python does.
  const Value* find(size_t index, std::string_view name, std::string_view callee) const;
  // As find, but "missing required argument" when absent.
  const Value& require(size_t index, std::string_view name, std::string_view callee) const;
  // Refuses positional arguments past `max_positional` and keywords not in `known`.
  void expect(std::string_view callee, size_t max_positional, std::initializer_list<std::string_view> known) const;
};

// Something callable from a template: a global (range, namespace, raise_exception), a bound
// method ('a b'.split), a macro, or a caller() block.
struct Callable {
  std::string name;
  std::function<Value(const CallArgs&, Context&)> call;
};

// A dict in insertion order, as Python's. Keys are strings (what JSON gives and templates
// mostly write); a literal like {0: 'a'} keeps its other keys beside their repr text.
class Object {
 public:
  const Value* find(std::string_view key) const;  // a string key
  Value* find(std::string_view key);
  const Value* find_key(const Value& key) const;  // any key, by Python equality (1 == 1.0 == True)
  void set(std::string key, Value value);         // replaces in place, or appends
  void set_key(const Value& key, Value value);
  // items()[i].first is the key's text; key(i) the key itself (a str, or what the literal wrote).
  const std::vector<std::pair<std::string, Value>>& items() const { return items_; }
  Value key(size_t i) const;
  size_t size() const { return items_.size(); }
  void clear();

  Object() = default;
  Object(const Object&) = delete;  // it gives back what it was charged, once
  Object& operator=(const Object&) = delete;
  ~Object();
  // A namespace() object: the one kind of object `{% set ns.x = ... %}` may change.
  bool is_namespace = false;

 private:
  // Lookups by string key go through an index once a dict has this many items (a template's
  // dict literal may have thousands of keys; each lookup must not walk them all).
  static constexpr size_t kIndexFrom = 16;
  std::vector<std::pair<std::string, Value>> items_;
  std::vector<std::shared_ptr<const Value>> other_keys_;  // per item: null for a string key
  std::unordered_map<std::string, size_t> by_name_;        // string key -> item, once indexed
  RenderBudget* charged_to_ = nullptr;                     // the render its entries are held by
  size_t charged_ = 0;
  void hold_entry(size_t bytes);
};

// What Jinja2's filters and dict methods return instead of a list: a generator (map, select,
// selectattr, unique, items; used once, no len(), not JSON) or a view (d.items(); len() works).
// Templates that pass one where a list is needed fail in Jinja2, and must fail here too.
struct Iteration {
  std::string type;  // Python's type name: generator, dict_items, list_reverseiterator, ...
  Array items;
  bool one_shot = true;  // a generator or iterator: the second pass sees nothing
  bool has_len = false;  // a view
  bool consumed = false;
};

// Python's ==, and the ordering of <, <= (numbers with numbers, strings with strings, lists
// elementwise); ordering anything else is an error. Both charge the render a step per element
// and the bytes they compare.
bool values_equal(const Value& a, const Value& b);
int compare_values(const Value& a, const Value& b);  // <0, 0, >0; throws on unorderable types

// Python's repr of a float: shortest round-trip digits, exponent below 1e-4 and from 1e16.
std::string python_float_repr(double d);
// Python's repr of a str: single quotes unless the text holds ' and no ".
std::string python_string_repr(std::string_view s);

// The code points of a UTF-8 string (Python indexes and measures str by code point). Invalid
// bytes count as one each, so nothing is ever dropped. Charged to the render as work.
std::vector<std::string_view> utf8_chars(std::string_view s);
// Appends code point `cp` (at most U+10FFFF) as UTF-8.
void append_utf8(std::string& out, uint32_t cp);
// How many code points utf8_chars would give, without making the list.
size_t utf8_length(std::string_view s);
// The byte length of the code point at s[i], as utf8_chars splits it (1 for an invalid byte).
size_t utf8_char_size(std::string_view s, size_t i);

}  // namespace tandem::jinja
