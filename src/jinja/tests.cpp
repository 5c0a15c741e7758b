// Jinja2's built-in tests ({% if x is string %}, is defined, is none, ...).
#include <unordered_map>

#include "jinja/context.h"
#include "jinja/error.h"

namespace tandem::jinja {
namespace {

const Value& argument(const CallArgs& a, const char* test) {
  if (a.positional.empty()) fail(std::string("the '") + test + "' test needs an argument");
  return a.positional[0];
}

bool is_lower(const std::string& s, bool want_lower) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') {
      if (!want_lower) return false;
      cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (want_lower) return false;
      cased = true;
    }
  }
  return cased;
}

const std::unordered_map<std::string, TestFn>& test_registry() {
  static const std::unordered_map<std::string, TestFn> tests = [] {
    std::unordered_map<std::string, TestFn> t;
    t["defined"] = [](const Value& v, const CallArgs&) { return !v.is_undefined(); };
    t["undefined"] = [](const Value& v, const CallArgs&) { return v.is_undefined(); };
    t["none"] = [](const Value& v, const CallArgs&) { return v.is_none(); };
    t["boolean"] = [](const Value& v, const CallArgs&) { return v.is_bool(); };
    t["true"] = [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); };
    t["false"] = [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); };
    t["integer"] = [](const Value& v, const CallArgs&) { return v.is_int(); };
    t["float"] = [](const Value& v, const CallArgs&) { return v.is_float(); };
    t["number"] = [](const Value& v, const CallArgs&) { return v.is_number(); };
    t["string"] = [](const Value& v, const CallArgs&) { return v.is_string(); };
    t["mapping"] = [](const Value& v, const CallArgs&) { return v.is_object() && !v.as_object().is_namespace; };
    t["iterable"] = [](const Value& v, const CallArgs&) {
      return v.is_string() || v.is_array() || v.is_object() || v.is_undefined() || v.is_iteration();
    };
    t["sequence"] = [](const Value& v, const CallArgs&) {
      return v.is_string() || v.is_array() || (v.is_object() && !v.as_object().is_namespace) || v.is_undefined();
    };
    t["callable"] = [](const Value& v, const CallArgs&) { return v.is_callable(); };
    t["sameas"] = [](const Value& v, const CallArgs& a) {
      const Value& o = argument(a, "sameas");
      // Python's `is`: singletons by value; containers by identity.
      if (v.is_none() || v.is_bool() || o.is_none() || o.is_bool()) return v.kind() == o.kind() && values_equal(v, o);
      if (v.is_array() && o.is_array()) return &v.as_array() == &o.as_array();
      if (v.is_object() && o.is_object()) return &v.as_object() == &o.as_object();
      return v.kind() == o.kind() && values_equal(v, o);
    };
    t["eq"] = [](const Value& v, const CallArgs& a) { return values_equal(v, argument(a, "eq")); };
    t["equalto"] = t["eq"];
    t["=="] = t["eq"];
    t["ne"] = [](const Value& v, const CallArgs& a) { return !values_equal(v, argument(a, "ne")); };
    t["!="] = t["ne"];
    t["lt"] = [](const Value& v, const CallArgs& a) { return compare_values(v, argument(a, "lt")) < 0; };
    t["lessthan"] = t["lt"];
    t["le"] = [](const Value& v, const CallArgs& a) { return compare_values(v, argument(a, "le")) <= 0; };
    t["gt"] = [](const Value& v, const CallArgs& a) { return compare_values(v, argument(a, "gt")) > 0; };
    t["greaterthan"] = t["gt"];
    t["ge"] = [](const Value& v, const CallArgs& a) { return compare_values(v, argument(a, "ge")) >= 0; };
    t["in"] = [](const Value& v, const CallArgs& a) {
      const Value& seq = argument(a, "in");
      if (seq.is_string()) return v.is_string() && seq.as_string().find(v.as_string()) != std::string::npos;
      if (seq.is_object()) return v.is_string() && seq.as_object().find(v.as_string()) != nullptr;
      for (const Value& x : iterate(seq))
        if (values_equal(x, v)) return true;
      return false;
    };
    t["odd"] = [](const Value& v, const CallArgs&) {
      if (!v.is_int()) fail("the 'odd' test needs an integer");
      return v.as_int() % 2 != 0;
    };
    t["even"] = [](const Value& v, const CallArgs&) {
      if (!v.is_int()) fail("the 'even' test needs an integer");
      return v.as_int() % 2 == 0;
    };
    t["divisibleby"] = [](const Value& v, const CallArgs& a) {
      const Value& d = argument(a, "divisibleby");
      if (!v.is_int() || !d.is_int() || d.as_int() == 0) fail("the 'divisibleby' test needs non-zero integers");
      if (d.as_int() == -1) return true;  // (INT64_MIN % -1 traps on the CPU)
      return v.as_int() % d.as_int() == 0;
    };
    t["lower"] = [](const Value& v, const CallArgs&) { return v.is_string() && is_lower(v.as_string(), true); };
    t["upper"] = [](const Value& v, const CallArgs&) { return v.is_string() && is_lower(v.as_string(), false); };
    t["escaped"] = [](const Value&, const CallArgs&) { return false; };
    t["filter"] = [](const Value& v, const CallArgs&) {
      return v.is_string() && find_filter(v.as_string()) != nullptr;
    };
    t["test"] = [](const Value& v, const CallArgs&) { return v.is_string() && find_test(v.as_string()) != nullptr; };
    return t;
  }();
  return tests;
}

}  // namespace

const TestFn* find_test(const std::string& name) {
  const auto& r = test_registry();
  auto it = r.find(name);
  return it == r.end() ? nullptr : &it->second;
}

}  // namespace tandem::jinja
