// Methods of str, dict and list values, as Jinja2's immutable sandbox (Hugging Face's choice)
// allows them: reading methods work; methods that change a list or dict are refused.
#include <algorithm>

#include "jinja/budget.h"
#include "jinja/context.h"
#include "jinja/error.h"
#include "jinja/pystr.h"

namespace tandem::jinja {
namespace {

std::optional<std::string> string_or_none(const Value* v, const std::string& what) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) fail(what + " must be a string or None, not '" + v->type_name() + "'");
  return v->as_string();
}

int64_t int_or(const Value* v, int64_t dflt, const std::string& what) {
  if (!v || v->is_none()) return dflt;
  if (!v->is_int() && !v->is_bool()) fail(what + " must be an integer, not '" + v->type_name() + "'");
  return v->as_int();
}

// startswith / endswith take a str or a tuple (list) of str.
bool affix_match(const std::string& s, const Value& affix, bool prefix, const std::string& method) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) fail(method + "() arguments must be str or a tuple of str, not '" + a.type_name() + "'");
    const std::string& x = a.as_string();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_array()) return std::any_of(affix.as_array().begin(), affix.as_array().end(), one);
  return one(affix);
}

// Character-indexed find (Python's str.find answers in characters, not bytes).
int64_t char_index(const std::string& s, size_t byte_pos) {
  return byte_pos == std::string::npos ? -1 : int64_t(utf8_length(std::string_view(s).substr(0, byte_pos)));
}

bool all_chars(const std::string& s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}

// markup: the string is a Markup, whose strip and case methods return Markup again. The bound
// method holds the string's Value (shared), never a copy of its text.
Value string_method(const Value& self, const std::string& name, bool markup) {
  using Fn = std::function<Value(const std::string&, const CallArgs&)>;
  Fn fn;
  const std::string m = "str." + name;
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip", right = name != "lstrip";
    fn = [left, right, m, markup](const std::string& s, const CallArgs& a) {
      a.expect(m, 1, {});
      std::string r = pystr::strip(s, string_or_none(a.find(0, "chars", m), m + "(): chars"), left, right);
      return markup ? Value::markup(std::move(r)) : Value(std::move(r));
    };
  } else if (name == "split" || name == "rsplit") {
    const bool right = name == "rsplit";
    fn = [right, m](const std::string& s, const CallArgs& a) {
      a.expect(m, 2, {"sep", "maxsplit"});
      Array out;
      for (auto& part : pystr::split(s, string_or_none(a.find(0, "sep", m), m + "(): sep"),
                                     int_or(a.find(1, "maxsplit", m), -1, m + "(): maxsplit"), right))
        out.push_back(Value(std::move(part)));
      return Value(std::move(out));
    };
  } else if (name == "splitlines") {
    fn = [m](const std::string& s, const CallArgs& a) {
      Array out;
      const Value* keep = a.find(0, "keepends", m);
      for (auto& line : pystr::splitlines(s, keep && keep->truthy())) out.push_back(Value(std::move(line)));
      return Value(std::move(out));
    };
  } else if (name == "startswith" || name == "endswith") {
    const bool prefix = name == "startswith";
    fn = [prefix, m](const std::string& s, const CallArgs& a) {
      a.expect(m, 1, {});
      return Value(affix_match(s, a.require(0, "prefix", m), prefix, m));
    };
  } else if (name == "replace") {
    fn = [m](const std::string& s, const CallArgs& a) {
      a.expect(m, 3, {"count"});
      const Value &old = a.require(0, "old", m), &with = a.require(1, "new", m);
      if (!old.is_string() || !with.is_string()) fail(m + "() arguments must be str");
      return Value(
          pystr::replace(s, old.as_string(), with.as_string(), int_or(a.find(2, "count", m), -1, m + "(): count")));
    };
  } else if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    fn = [name, markup](const std::string& s, const CallArgs&) {
      std::string r = name == "upper"   ? pystr::upper(s)
                      : name == "lower" ? pystr::lower(s)
                      : name == "title" ? pystr::title(s)
                                        : pystr::capitalize(s);
      return markup ? Value::markup(std::move(r)) : Value(std::move(r));
    };
  } else if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    fn = [name, m](const std::string& s, const CallArgs& a) {
      const Value& sub = a.require(0, "sub", m);
      if (!sub.is_string()) fail(m + "() argument must be str, not '" + std::string(sub.type_name()) + "'");
      const std::string& x = sub.as_string();
      charge_work(s.size());
      if (name == "count") {
        if (x.empty()) return Value(int64_t(utf8_length(s)) + 1);
        int64_t n = 0;
        for (size_t p = s.find(x); p != std::string::npos; p = s.find(x, p + x.size())) ++n;
        return Value(n);
      }
      const size_t p = name == "find" || name == "index" ? s.find(x) : s.rfind(x);
      if (p == std::string::npos && (name == "index" || name == "rindex")) fail(m + "(): substring not found");
      return Value(char_index(s, p));
    };
  } else if (name == "join") {
    fn = [m](const std::string& s, const CallArgs& a) {
      std::string out;
      const Array items = iterate(a.require(0, "iterable", m));
      for (size_t i = 0; i < items.size(); ++i) {
        charge_steps(1);
        if (!items[i].is_string())
          fail(m + "(): item " + std::to_string(i) + " is '" + items[i].type_name() + "', not str");
        if (i) append_capped(out, s, "str.join()");
        append_capped(out, items[i].as_string(), "str.join()");
      }
      return Value(std::move(out));
    };
  } else if (name == "format") {
    fn = [](const std::string& s, const CallArgs& a) { return Value(pystr::format(s, a)); };
  } else if (name == "removeprefix" || name == "removesuffix") {
    const bool prefix = name == "removeprefix";
    fn = [prefix, m](const std::string& s, const CallArgs& a) {
      const Value& x = a.require(0, "affix", m);
      if (!x.is_string()) fail(m + "() argument must be str");
      if (!affix_match(s, x, prefix, m)) return Value(s);
      const size_t n = x.as_string().size();
      return Value(prefix ? s.substr(n) : s.substr(0, s.size() - n));
    };
  } else if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" || name == "isupper" ||
             name == "islower") {
    fn = [name](const std::string& s, const CallArgs&) {
      if (name == "isdigit") return Value(all_chars(s, [](char c) { return c >= '0' && c <= '9'; }));
      if (name == "isalpha") return Value(all_chars(s, [](char c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }));
      if (name == "isalnum")
        return Value(
            all_chars(s, [](char c) { return ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9'); }));
      if (name == "isspace") {
        const auto cs = utf8_chars(s);
        return Value(!cs.empty() && std::all_of(cs.begin(), cs.end(), pystr::is_space));
      }
      bool cased = false, ok = true;
      for (char c : s) {
        if (c >= 'a' && c <= 'z') {
          cased = true;
          ok = ok && name == "islower";
        } else if (c >= 'A' && c <= 'Z') {
          cased = true;
          ok = ok && name == "isupper";
        }
      }
      return Value(cased && ok);
    };
  } else {
    return Value::undefined("'str object' has no attribute '" + name + "'");
  }
  return Value::callable(m, [fn, self](const CallArgs& a, Context&) { return fn(self.as_string(), a); });
}

Value dict_method(const Value& self, const std::string& name) {
  const std::string m = "dict." + name;
  if (name == "items" || name == "keys" || name == "values") {
    return Value::callable(m, [self, name](const CallArgs&, Context&) {
      Array out;
      const Object& o = self.as_object();
      for (size_t i = 0; i < o.size(); ++i) {
        const Value& v = o.items()[i].second;
        out.push_back(name == "items" ? Value::tuple(Array{o.key(i), v}) : name == "keys" ? o.key(i) : v);
      }
      return Value::iteration("dict_" + name, std::move(out), /*one_shot=*/false, /*has_len=*/true);
    });
  }
  if (name == "get") {
    return Value::callable(m, [self, m](const CallArgs& a, Context&) {
      a.expect(m, 2, {});
      const Value& key = a.require(0, "key", m);
      const Value* dflt = a.find(1, "default", m);
      const Value* v = self.as_object().find_key(key);
      return v ? *v : dflt ? *dflt : Value::none();
    });
  }
  return Value::undefined("'dict object' has no attribute '" + name + "'");
}

bool is_mutating(const Value& self, const std::string& name) {
  static const char* const kList[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
  static const char* const kDict[] = {"pop", "popitem", "setdefault", "update", "clear"};
  if (self.is_array()) return std::any_of(std::begin(kList), std::end(kList), [&](const char* n) { return name == n; });
  if (self.is_object())
    return std::any_of(std::begin(kDict), std::end(kDict), [&](const char* n) { return name == n; });
  return false;
}

}  // namespace

Value find_method(const Value& self, const std::string& name) {
  if (is_mutating(self, name)) {
    // Hugging Face renders with ImmutableSandboxedEnvironment: the same template fails there.
    return Value::callable(name, [self, name](const CallArgs&, Context&) -> Value {
      fail(std::string("access to attribute '") + name + "' of '" + self.type_name() +
           "' object is unsafe (chat templates render in an immutable sandbox)");
    });
  }
  if (self.is_string()) return string_method(self, name, self.is_markup());
  if (self.is_object() && !self.as_object().is_namespace) return dict_method(self, name);
  if (self.is_array() && (name == "index" || name == "count")) {
    return Value::callable("list." + name, [self, name](const CallArgs& a, Context&) {
      const Value& x = a.require(0, "value", "list." + name);
      int64_t n = 0;
      for (size_t i = 0; i < self.as_array().size(); ++i) {
        if (!values_equal(self.as_array()[i], x)) continue;
        if (name == "index") return Value(int64_t(i));
        ++n;
      }
      if (name == "index") fail("list.index(x): x not in list");
      return Value(n);
    });
  }
  return Value::undefined(std::string("'") + self.type_name() + " object' has no attribute '" + name + "'");
}

Array iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kArray:
      charge_work(v.as_array().size() * sizeof(Value));
      return v.as_array();
    case Value::Kind::kString: {
      Array out;
      for (std::string_view c : utf8_chars(v.as_string())) out.push_back(Value(c));
      return out;
    }
    case Value::Kind::kObject: {
      Array out;
      charge_work(v.as_object().size() * sizeof(Value));
      for (size_t i = 0; i < v.as_object().size(); ++i) out.push_back(v.as_object().key(i));
      return out;
    }
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kIteration: {
      Iteration& it = v.as_iteration();
      if (it.one_shot && it.consumed) return {};  // a generator runs once
      it.consumed = it.one_shot;
      charge_work(it.items.size() * sizeof(Value));
      return it.items;
    }
    default:
      fail(std::string("'") + v.type_name() + "' object is not iterable");
  }
}

}  // namespace tandem::jinja
