// The parsed template: expression nodes that evaluate to a Value and statement nodes that
// append to the output. Each node evaluates itself (eval.cpp, exec.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jinja/context.h"
#include "jinja/value.h"

namespace tandem::jinja {

struct Expr {
  virtual ~Expr() = default;
  virtual Value eval(Context& ctx) const = 0;
  int line = 0;
  int height = 1;  // the depth of the tree below and with this node: how deep eval() recurses
};
using ExprPtr = std::unique_ptr<Expr>;

struct Literal : Expr {
  Value value;
  Value eval(Context&) const override { return value; }
};

struct Name : Expr {
  std::string name;
  Value eval(Context& ctx) const override;
};

struct ListLiteral : Expr {
  std::vector<ExprPtr> items;
  bool is_tuple = false;  // (a, b) or a, b: prints as a tuple
  Value eval(Context& ctx) const override;
};

struct DictLiteral : Expr {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
  Value eval(Context& ctx) const override;
};

// a.b: a dict's key, else the method of that name.
struct GetAttr : Expr {
  ExprPtr object;
  std::string name;
  Value eval(Context& ctx) const override;
};

// a[i], a['k'], a[start:stop:step].
struct GetItem : Expr {
  ExprPtr object, index;
  bool is_slice = false;
  ExprPtr start, stop, step;  // a slice's parts, each may be null
  Value eval(Context& ctx) const override;
};

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  CallArgs eval(Context& ctx) const;
};

struct Call : Expr {
  ExprPtr callee;
  Arguments args;
  Value eval(Context& ctx) const override;
};

struct FilterExpr : Expr {
  ExprPtr input;  // null inside {% filter %} blocks, where the body is the input
  std::string name;
  Arguments args;
  Value eval(Context& ctx) const override;
  Value apply(const Value& input, Context& ctx) const;
};

struct TestExpr : Expr {
  ExprPtr input;
  std::string name;
  Arguments args;
  bool negated = false;
  Value eval(Context& ctx) const override;
};

struct Unary : Expr {
  std::string op;  // not, -, +
  ExprPtr operand;
  Value eval(Context& ctx) const override;
};

struct Binary : Expr {
  std::string op;  // or and + - * / // % ** ~ in "not in"
  ExprPtr left, right;
  Value eval(Context& ctx) const override;
};

// a < b <= c: each comparison with the next operand, all must hold.
struct Compare : Expr {
  ExprPtr first;
  std::vector<std::pair<std::string, ExprPtr>> rest;
  Value eval(Context& ctx) const override;
};

struct Conditional : Expr {
  ExprPtr condition, then_value, else_value;  // else_value may be null (Undefined)
  Value eval(Context& ctx) const override;
};

// ---- statements ----

struct Stmt {
  virtual ~Stmt() = default;
  virtual void exec(Context& ctx, std::string& out) const = 0;
  int line = 0;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Runs a body; stops early on break/continue; adds the line to an error that lacks one.
void exec_body(const Body& body, Context& ctx, std::string& out);

struct TextStmt : Stmt {
  std::string text;
  void exec(Context&, std::string& out) const override;
};

struct OutputStmt : Stmt {
  ExprPtr expr;
  void exec(Context& ctx, std::string& out) const override;
};

struct IfStmt : Stmt {
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body else_body;
  void exec(Context& ctx, std::string& out) const override;
};

// What a for, set or with binds to: one name, several (unpacking), or ns.attr.
struct Target {
  std::vector<std::string> names;
  std::string attribute;  // set ns.attr = ...: names[0] is the namespace
  bool is_tuple = false;
  void assign(Context& ctx, const Value& value) const;
};

struct ForStmt : Stmt {
  Target target;
  ExprPtr iterable, filter;
  Body body, else_body;
  void exec(Context& ctx, std::string& out) const override;
};

struct SetStmt : Stmt {
  Target target;
  ExprPtr value;
  void exec(Context& ctx, std::string& out) const override;
};

// {% set x %}...{% endset %}, optionally | filtered.
struct SetBlockStmt : Stmt {
  Target target;
  Body body;
  std::vector<std::unique_ptr<FilterExpr>> filters;
  void exec(Context& ctx, std::string& out) const override;
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct MacroStmt : Stmt {
  std::string name;
  std::vector<MacroParam> params;
  Body body;
  void exec(Context& ctx, std::string& out) const override;
  // The callable this definition binds; `caller` is set for call blocks.
  Value make_callable(const Context& defining) const;
};

struct CallBlockStmt : Stmt {
  std::unique_ptr<Call> call;
  std::vector<MacroParam> caller_params;
  Body body;
  void exec(Context& ctx, std::string& out) const override;
};

struct FilterBlockStmt : Stmt {
  std::vector<std::unique_ptr<FilterExpr>> filters;
  Body body;
  void exec(Context& ctx, std::string& out) const override;
};

struct WithStmt : Stmt {
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
  void exec(Context& ctx, std::string& out) const override;
};

struct LoopControlStmt : Stmt {
  LoopControl control = LoopControl::kBreak;
  void exec(Context& ctx, std::string&) const override { ctx.loop_control = control; }
};

// Hugging Face's {% generation %} marks the assistant's tokens; it renders its body unchanged.
struct TransparentBlockStmt : Stmt {
  Body body;
  void exec(Context& ctx, std::string& out) const override { exec_body(body, ctx, out); }
};

}  // namespace tandem::jinja
