// Expression evaluation with Python's semantics (what Jinja2 compiles templates to).
#include <cmath>
#include <limits>

#include "jinja/ast.h"
#include "jinja/budget.h"
#include "jinja/error.h"
#include "jinja/limits.h"
#include "jinja/pystr.h"

namespace tandem::jinja {
namespace {

[[noreturn]] void undefined_error(const Value& v) { fail(v.undefined_hint()); }

const char* const kDictMethods[] = {"items", "keys", "values", "get"};

bool is_dict_method(const std::string& name) {
  for (const char* m : kDictMethods)
    if (name == m) return true;
  return false;
}

// Python's slice(start, stop, step).indices(n), as the list of positions it selects.
std::vector<size_t> slice_positions(int64_t n, const Value& start_v, const Value& stop_v, const Value& step_v) {
  auto as_index = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool())
      fail(std::string("slice ") + what + " must be an integer, not '" + v.type_name() + "'");
    return v.as_int();
  };
  const int64_t step = as_index(step_v, "step").value_or(1);
  if (step == 0) fail("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x += n;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t start = clamp(as_index(start_v, "start"), step > 0 ? 0 : n - 1);
  const int64_t stop = clamp(as_index(stop_v, "stop"), step > 0 ? n : -1);
  std::vector<size_t> out;
  // i stays within [-1, n] before each step is added, and |step| may be near 2^63: in 128 bits.
  for (__int128 i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(size_t(i));
  charge_work(out.size() * sizeof(size_t));
  return out;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  auto unsupported = [&]() -> Value {
    fail("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
  };
  if (op == "+") {
    // Markup + str escapes the str (markupsafe), and the sum is Markup.
    if (a.is_markup() && b.is_string())
      return Value::markup(a.as_string() + (b.is_markup() ? b.as_string() : pystr::html_escape(b.as_string())));
    if (b.is_markup() && a.is_string()) return Value::markup(pystr::html_escape(a.as_string()) + b.as_string());
    if (a.is_string() && b.is_string()) {
      check_string_size(a.as_string().size() + b.as_string().size(), "+");
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_array() && b.is_array()) {
      check_list_size(a.as_array().size() + b.as_array().size(), "+");
      Array r = a.as_array();
      r.insert(r.end(), b.as_array().begin(), b.as_array().end());
      return Value(std::move(r));
    }
  }
  if (op == "*") {
    const Value* seq = a.is_string() || a.is_array() ? &a : b.is_string() || b.is_array() ? &b : nullptr;
    const Value* count = seq == &a ? &b : &a;
    if (seq && (count->is_int() || count->is_bool())) {
      const int64_t k = std::max<int64_t>(0, count->as_int());
      // Sizes in 128 bits: k * size must not wrap before it is compared with the limit.
      if (seq->is_string()) {
        if (__int128(k) * seq->as_string().size() > __int128(limits::kMaxStringBytes))
          fail_limit("string repetition (*) past " + std::to_string(limits::kMaxStringBytes >> 20) + " MiB");
        std::string r;
        r.reserve(size_t(k) * seq->as_string().size());
        for (int64_t i = 0; i < k; ++i) r += seq->as_string();
        return Value(std::move(r));
      }
      if (__int128(k) * seq->as_array().size() > __int128(limits::kMaxListItems))
        fail_limit("list repetition (*) past " + std::to_string(limits::kMaxListItems) + " items");
      Array r;
      for (int64_t i = 0; i < k; ++i) r.insert(r.end(), seq->as_array().begin(), seq->as_array().end());
      return Value(std::move(r));
    }
  }
  if (op == "%" && a.is_string()) fail("printf-style string formatting ('...' % x) is not supported; use format()");
  if (!a.is_number() || !b.is_number()) return unsupported();
  const bool ints = !a.is_float() && !b.is_float();
  if (op == "/") {
    if (b.as_double() == 0) fail("division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (ints) {
    const int64_t x = a.as_int(), y = b.as_int();
    int64_t r = 0;
    if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value(r);
    if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value(r);
    if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value(r);
    if (op == "//" || op == "%") {
      if (y == 0) fail("integer division or modulo by zero");
      // -2^63 // -1 is 2^63, one past int64 (and the CPU's division traps); its remainder is 0.
      if (x == std::numeric_limits<int64_t>::min() && y == -1) {
        if (op == "%") return Value(int64_t(0));
        fail("integer // overflows 64 bits");
      }
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors
        --q;
        m += y;
      }
      return Value(op == "//" ? q : m);
    }
    if (op == "**" && y >= 0) {
      // By squaring: 1 ** (2^63 - 1) is 63 multiplications, not 2^63.
      int64_t acc = 1, base = x;
      bool overflow = false;
      for (int64_t e = y; e > 0 && !overflow; e >>= 1) {
        if (e & 1) overflow = __builtin_mul_overflow(acc, base, &acc);
        if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
      }
      if (!overflow) return Value(acc);
    }
    if (op != "**" || y >= 0) fail("integer " + op + " overflows 64 bits");
  }
  const double x = a.as_double(), y = b.as_double();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "**") {
    // Python raises where the power of finite numbers leaves the doubles (10.0 ** 400), and for
    // a negative base's fractional power (a complex number); C's pow gives inf and nan.
    const double r = std::pow(x, y);
    if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) {
      if (x == 0) fail("0.0 cannot be raised to a negative power");
      fail("float ** overflows (numerical result out of range)");
    }
    if (std::isnan(r) && !std::isnan(x) && !std::isnan(y))
      fail("a negative number cannot be raised to a fractional power (no complex numbers here)");
    return Value(r);
  }
  if (op == "//" || op == "%") {
    if (y == 0) fail("float division or modulo by zero");
    // CPython's float divmod: the remainder from fmod takes the divisor's sign, and the
    // quotient is rounded to the integer nearest (x - mod) / y.
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0) {
      if ((y < 0) != (mod < 0)) {
        mod += y;
        div -= 1.0;
      }
    } else {
      mod = std::copysign(0.0, y);
    }
    double floordiv;
    if (div != 0) {
      floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
      floordiv = std::copysign(0.0, x / y);
    }
    return op == "//" ? Value(floordiv) : Value(mod);
  }
  return unsupported();
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kString:
      if (!item.is_string())
        fail(std::string("'in <string>' requires string as left operand, not ") + item.type_name());
      charge_work(container.as_string().size());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kArray:
      for (const Value& v : container.as_array())
        if (values_equal(v, item)) return true;
      return false;
    case Value::Kind::kObject:
      return container.as_object().find_key(item) != nullptr;
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kIteration:
      for (const Value& v : iterate(container))
        if (values_equal(v, item)) return true;
      return false;
    default:
      fail(std::string("argument of type '") + container.type_name() + "' is not iterable");
  }
}

}  // namespace

Value Name::eval(Context& ctx) const { return ctx.lookup(name); }

Value ListLiteral::eval(Context& ctx) const {
  Array a;
  a.reserve(items.size());
  for (const auto& e : items) a.push_back(e->eval(ctx));
  return is_tuple ? Value::tuple(std::move(a)) : Value(std::move(a));
}

Value DictLiteral::eval(Context& ctx) const {
  auto o = make_node<Object>();
  for (const auto& [k, v] : items) {
    const Value key = k->eval(ctx);
    o->set_key(key, v->eval(ctx));
  }
  return Value(std::move(o));
}

Value GetAttr::eval(Context& ctx) const {
  const Value obj = object->eval(ctx);
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_object()) {
    if (!obj.as_object().is_namespace && is_dict_method(name)) return find_method(obj, name);
    if (const Value* v = obj.as_object().find(name)) return *v;
    return Value::undefined("'dict object' has no attribute '" + name + "'");
  }
  Value m = find_method(obj, name);
  if (!m.is_undefined()) return m;
  return Value::undefined(std::string("'") + obj.type_name() + " object' has no attribute '" + name + "'");
}

Value GetItem::eval(Context& ctx) const {
  const Value obj = object->eval(ctx);
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_iteration()) fail(std::string("'") + obj.type_name() + "' object is not subscriptable");
  if (is_slice) {
    const Value a = start ? start->eval(ctx) : Value(), b = stop ? stop->eval(ctx) : Value(),
                s = step ? step->eval(ctx) : Value();
    if (obj.is_array()) {
      Array r;
      for (size_t i : slice_positions(int64_t(obj.as_array().size()), a, b, s)) r.push_back(obj.as_array()[i]);
      return Value(std::move(r));
    }
    if (obj.is_string()) {
      const auto chars = utf8_chars(obj.as_string());
      std::string r;
      for (size_t i : slice_positions(int64_t(chars.size()), a, b, s)) r += chars[i];
      return Value(std::move(r));
    }
    fail(std::string("'") + obj.type_name() + "' object is not subscriptable");
  }
  const Value key = index->eval(ctx);
  auto positional = [&](int64_t n) -> std::optional<size_t> {
    if (!key.is_int() && !key.is_bool()) return std::nullopt;
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i < 0 || i >= n) return std::nullopt;
    return size_t(i);
  };
  if (obj.is_array()) {
    if (auto i = positional(int64_t(obj.as_array().size()))) return obj.as_array()[*i];
    return Value::undefined("list object has no element " + key.repr());
  }
  if (obj.is_string()) {
    const auto chars = utf8_chars(obj.as_string());
    if (auto i = positional(int64_t(chars.size()))) return Value(std::string(chars[*i]));
    return Value::undefined("str object has no element " + key.repr());
  }
  if (obj.is_object()) {
    if (const Value* v = obj.as_object().find_key(key)) return *v;
    if (key.is_string() && !obj.as_object().is_namespace && is_dict_method(key.as_string()))
      return find_method(obj, key.as_string());
    return Value::undefined("'dict object' has no attribute " + key.repr());
  }
  return Value::undefined(std::string("'") + obj.type_name() + " object' has no element " + key.repr());
}

CallArgs Arguments::eval(Context& ctx) const {
  CallArgs a;
  for (const auto& e : positional) a.positional.push_back(e->eval(ctx));
  for (const auto& [k, e] : keyword) a.keyword.emplace_back(k, e->eval(ctx));
  return a;
}

Value Call::eval(Context& ctx) const {
  const Value f = callee->eval(ctx);
  if (f.is_undefined()) undefined_error(f);
  if (!f.is_callable()) fail(std::string("'") + f.type_name() + "' object is not callable");
  ctx.budget().step();
  return f.as_callable().call(args.eval(ctx), ctx);
}

Value FilterExpr::apply(const Value& in, Context& ctx) const {
  ctx.budget().step();
  const FilterFn* f = find_filter(name);
  if (!f) fail("no filter named '" + name + "'");
  return (*f)(in, args.eval(ctx), ctx);
}

Value FilterExpr::eval(Context& ctx) const { return apply(input->eval(ctx), ctx); }

Value TestExpr::eval(Context& ctx) const {
  ctx.budget().step();
  const TestFn* t = find_test(name);
  if (!t) fail("no test named '" + name + "'");
  const bool r = (*t)(input->eval(ctx), args.eval(ctx));
  return Value(negated ? !r : r);
}

Value Unary::eval(Context& ctx) const {
  const Value v = operand->eval(ctx);
  if (op == "not") return Value(!v.truthy());
  if (v.is_undefined()) undefined_error(v);
  if (!v.is_number()) fail("bad operand type for unary " + op + ": '" + v.type_name() + "'");
  if (op == "+") return v.is_bool() ? Value(v.as_int()) : v;
  if (v.is_float()) return Value(-v.as_double());
  if (v.as_int() == std::numeric_limits<int64_t>::min()) fail("integer negation overflows 64 bits");
  return Value(-v.as_int());
}

Value Binary::eval(Context& ctx) const {
  if (op == "and") {
    Value l = left->eval(ctx);
    return l.truthy() ? right->eval(ctx) : l;
  }
  if (op == "or") {
    Value l = left->eval(ctx);
    return l.truthy() ? l : right->eval(ctx);
  }
  const Value l = left->eval(ctx), r = right->eval(ctx);
  if (op == "~") {
    std::string text = l.str();
    append_capped(text, r.is_string() ? std::string_view(r.as_string()) : std::string_view(r.str()), "~");
    return Value(std::move(text));
  }
  return arithmetic(op, l, r);
}

Value Compare::eval(Context& ctx) const {
  Value l = first->eval(ctx);
  for (const auto& [op, e] : rest) {
    Value r = e->eval(ctx);
    bool ok;
    if (op == "==")
      ok = values_equal(l, r);
    else if (op == "!=")
      ok = !values_equal(l, r);
    else if (op == "in")
      ok = contains(r, l);
    else if (op == "not in")
      ok = !contains(r, l);
    else {
      if (l.is_undefined()) undefined_error(l);
      if (r.is_undefined()) undefined_error(r);
      const int c = compare_values(l, r);
      ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!ok) return Value(false);
    l = std::move(r);
  }
  return Value(true);
}

Value Conditional::eval(Context& ctx) const {
  if (condition->eval(ctx).truthy()) return then_value->eval(ctx);
  if (else_value) return else_value->eval(ctx);
  return Value::undefined("the conditional expression had no else");
}

}  // namespace tandem::jinja
