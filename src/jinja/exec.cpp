// Statement execution: Jinja2's control flow and scoping (a loop iteration, macro or with block
// is a scope of its own; if is not; a namespace carries values out of a loop).
#include "jinja/ast.h"
#include "jinja/error.h"
#include "jinja/limits.h"

namespace tandem::jinja {
namespace {

Value loop_object(const Array& items, size_t i) {
  auto loop = make_node<Object>();
  const int64_t n = int64_t(items.size()), k = int64_t(i);
  loop->set("index", Value(k + 1));
  loop->set("index0", Value(k));
  loop->set("revindex", Value(n - k));
  loop->set("revindex0", Value(n - k - 1));
  loop->set("first", Value(k == 0));
  loop->set("last", Value(k == n - 1));
  loop->set("length", Value(n));
  loop->set("depth", Value(1));
  loop->set("depth0", Value(0));
  loop->set("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
  loop->set("nextitem", i + 1 < items.size() ? items[i + 1] : Value::undefined("there is no next item"));
  loop->set("cycle", Value::callable("loop.cycle", [k](const CallArgs& args, Context&) -> Value {
              if (args.positional.empty()) fail("loop.cycle() needs at least one value");
              return args.positional[size_t(k) % args.positional.size()];
            }));
  return Value(std::move(loop));
}

// Binds a macro's (or caller's) parameters from a call's arguments.
void bind_parameters(const std::string& name, const std::vector<MacroParam>& params, const CallArgs& args,
                     Context& scope) {
  Array varargs;
  auto kwargs = make_node<Object>();
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < params.size())
      scope.set(params[i].name, args.positional[i]);
    else
      varargs.push_back(args.positional[i]);
  }
  std::vector<bool> bound(params.size(), false);
  for (size_t i = 0; i < params.size() && i < args.positional.size(); ++i) bound[i] = true;
  for (const auto& [k, v] : args.keyword) {
    bool matched = false;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].name != k) continue;
      if (bound[i]) fail("macro '" + name + "' got multiple values for argument '" + k + "'");
      scope.set(k, v);
      bound[i] = matched = true;
    }
    if (!matched && k != "caller") kwargs->set(k, v);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i]) continue;
    if (params[i].default_value)
      scope.set(params[i].name, params[i].default_value->eval(scope));
    else
      scope.set(params[i].name, Value::undefined("'" + params[i].name + "' is undefined"));
  }
  scope.set("varargs", Value::tuple(std::move(varargs)));
  scope.set("kwargs", Value(std::move(kwargs)));
}

std::string render_body(const Body& body, Context& ctx) {
  std::string out;
  exec_body(body, ctx, out);
  return out;
}

}  // namespace

void exec_body(const Body& body, Context& ctx, std::string& out) {
  for (const StmtPtr& s : body) {
    try {
      ctx.budget().step();
      s->exec(ctx, out);
    } catch (TemplateError& e) {
      if (e.line == 0) e.line = s->line;
      throw;
    } catch (const std::bad_alloc&) {
      // An allocation the limits let through that the machine could not give (a small ulimit -v):
      // an error of this render, never an abort of the process.
      throw LimitExceeded("the template ran out of memory", s->line);
    } catch (const std::length_error&) {
      throw LimitExceeded("the template ran out of memory", s->line);
    }
    if (ctx.loop_control != LoopControl::kNone) return;
  }
}

void TextStmt::exec(Context&, std::string& out) const { append_capped(out, text, "the output"); }

void OutputStmt::exec(Context& ctx, std::string& out) const {
  const Value v = expr->eval(ctx);
  if (v.is_string())
    append_capped(out, v.as_string(), "the output");
  else
    append_capped(out, v.str(), "the output");
}

void IfStmt::exec(Context& ctx, std::string& out) const {
  for (const auto& [cond, body] : branches) {
    if (cond->eval(ctx).truthy()) {
      exec_body(body, ctx, out);
      return;
    }
  }
  exec_body(else_body, ctx, out);
}

void Target::assign(Context& ctx, const Value& value) const {
  if (!attribute.empty()) {
    Value ns = ctx.lookup(names[0]);
    if (!ns.is_object() || !ns.as_object().is_namespace)
      fail("cannot assign attribute '" + attribute + "' on '" + names[0] + "': it is not a namespace()");
    ns.as_object().set(attribute, value);
    return;
  }
  if (!is_tuple) {
    ctx.set(names[0], value);
    return;
  }
  const Array items = iterate(value);
  if (items.size() != names.size())
    fail("cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(names.size()) + " names");
  for (size_t i = 0; i < names.size(); ++i) ctx.set(names[i], items[i]);
}

void ForStmt::exec(Context& ctx, std::string& out) const {
  const Value source = iterable->eval(ctx);
  if (source.is_undefined()) {
    // Jinja2's Undefined iterates as empty.
    exec_body(else_body, ctx, out);
    return;
  }
  Array items = iterate(source);
  if (filter) {
    Array kept;
    for (const Value& item : items) {
      ctx.budget().step();
      ScopeGuard scope(ctx);
      target.assign(ctx, item);
      if (filter->eval(ctx).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(else_body, ctx, out);
    return;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    ctx.budget().step();  // an iteration is a step even when its body is empty
    ScopeGuard scope(ctx);
    ctx.set("loop", loop_object(items, i));
    target.assign(ctx, items[i]);
    exec_body(body, ctx, out);
    const LoopControl c = ctx.loop_control;
    ctx.loop_control = LoopControl::kNone;
    if (c == LoopControl::kBreak) break;
  }
}

void SetStmt::exec(Context& ctx, std::string&) const { target.assign(ctx, value->eval(ctx)); }

void SetBlockStmt::exec(Context& ctx, std::string&) const {
  Value v(render_body(body, ctx));
  for (const auto& f : filters) v = f->apply(v, ctx);
  target.assign(ctx, v);
}

Value MacroStmt::make_callable(const Context& defining) const {
  const MacroStmt* self = this;
  Context home = defining.for_macro();
  return Value::callable(name, [self, home](const CallArgs& args, Context&) -> Value {
    Context scope = home;
    // Bounded so a macro that recurses (directly, or through a call block) is an error, not a
    // stack overflow.
    int& depth = scope.budget().macro_depth;
    if (depth >= limits::kMaxMacroDepth)
      fail_limit("macro '" + self->name + "' recursed past " + std::to_string(limits::kMaxMacroDepth) +
                 " calls deep");
    ++depth;
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth};
    ScopeGuard guard(scope);
    bind_parameters(self->name, self->params, args, scope);
    for (const auto& [k, v] : args.keyword)
      if (k == "caller") scope.set("caller", v);
    return Value(render_body(self->body, scope));
  });
}

void MacroStmt::exec(Context& ctx, std::string&) const { ctx.set(name, make_callable(ctx)); }

void CallBlockStmt::exec(Context& ctx, std::string& out) const {
  // caller() renders this block's body where the block stands, with its own parameters.
  Context* where = &ctx;
  const CallBlockStmt* self = this;
  Value caller = Value::callable("caller", [where, self](const CallArgs& args, Context&) -> Value {
    ScopeGuard guard(*where);
    bind_parameters("caller", self->caller_params, args, *where);
    return Value(render_body(self->body, *where));
  });
  const Value f = call->callee->eval(ctx);
  if (!f.is_callable()) fail("{% call %} needs a macro, got '" + std::string(f.type_name()) + "'");
  CallArgs args = call->args.eval(ctx);
  args.keyword.emplace_back("caller", caller);
  append_capped(out, f.as_callable().call(args, ctx).str(), "the output");
}

void FilterBlockStmt::exec(Context& ctx, std::string& out) const {
  Value v(render_body(body, ctx));
  for (const auto& f : filters) v = f->apply(v, ctx);
  append_capped(out, v.str(), "the output");
}

void WithStmt::exec(Context& ctx, std::string& out) const {
  std::vector<Value> values;
  for (const auto& [t, e] : assignments) values.push_back(e->eval(ctx));
  ScopeGuard scope(ctx);
  for (size_t i = 0; i < assignments.size(); ++i) assignments[i].first.assign(ctx, values[i]);
  exec_body(body, ctx, out);
}

}  // namespace tandem::jinja
