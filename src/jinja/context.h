// The variables a template sees while it renders: a stack of scopes as Jinja2 keeps them (the
// template's top level, a scope per loop iteration, macro and with block), plus the engine's
// registries of filters and tests.
#pragma once

#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "jinja/budget.h"
#include "jinja/value.h"

namespace tandem::jinja {

using Scope = std::unordered_map<std::string, Value>;

enum class LoopControl { kNone, kBreak, kContinue };

class Context {
 public:
  // `budget` outlives the context and every value the render makes.
  Context(Scope globals, RenderBudget& budget) : budget_(&budget) {
    scopes_.push_back(std::make_shared<Scope>(std::move(globals)));
  }
  RenderBudget& budget() { return *budget_; }

  // The innermost scope holding `name`, else Undefined naming it.
  Value lookup(const std::string& name) const;
  // `{% set %}`: binds in the innermost scope.
  void set(const std::string& name, Value value) { scopes_.back()->insert_or_assign(name, std::move(value)); }

  void push_scope() { scopes_.push_back(std::make_shared<Scope>()); }
  void pop_scope() { scopes_.pop_back(); }

  // A macro body runs beside the template's top level, not inside its caller's loops. The
  // reference is non-owning: the top level holds the macro, and a macro that owned the top level
  // would be a cycle that outlives the render.
  Context for_macro() const {
    Context c;
    c.scopes_.push_back(std::shared_ptr<Scope>(std::shared_ptr<Scope>(), scopes_.front().get()));
    c.budget_ = budget_;
    return c;
  }

  LoopControl loop_control = LoopControl::kNone;

 private:
  Context() = default;
  std::vector<std::shared_ptr<Scope>> scopes_;
  RenderBudget* budget_ = nullptr;
};

// A scope that pops itself.
class ScopeGuard {
 public:
  explicit ScopeGuard(Context& c) : c_(c) { c_.push_scope(); }
  ~ScopeGuard() { c_.pop_scope(); }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  Context& c_;
};

// Filters ({{ x | name(args) }}) and tests ({% if x is name(args) %}), by name.
using FilterFn = std::function<Value(const Value& input, const CallArgs& args, Context& ctx)>;
using TestFn = std::function<bool(const Value& input, const CallArgs& args)>;
const FilterFn* find_filter(const std::string& name);
const TestFn* find_test(const std::string& name);

// Calling a method of a value: 'a b'.split(), d.items(), s.startswith('x'). Returns a bound
// callable, or Undefined when the type has no such method.
Value find_method(const Value& self, const std::string& name);

// Python's iteration of a value (a str by character, a dict by key); errors name the type.
Array iterate(const Value& v);

}  // namespace tandem::jinja
