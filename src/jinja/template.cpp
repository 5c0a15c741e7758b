#include "jinja/template.h"

#include <ctime>

#include "jinja/ast.h"
#include "jinja/error.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace tandem::jinja {
namespace {

// A template can ask for a list this long at most (range(10**9) would exhaust memory).
constexpr int64_t kMaxRange = 1 << 20;

Value global_range() {
  return Value::callable("range", [](const CallArgs& a, Context&) {
    for (const Value& v : a.positional)
      if (!v.is_int() && !v.is_bool()) fail(std::string("range() needs integers, not '") + v.type_name() + "'");
    if (a.positional.empty() || a.positional.size() > 3) fail("range() takes 1 to 3 arguments");
    int64_t start = 0, stop, step = 1;
    if (a.positional.size() == 1) {
      stop = a.positional[0].as_int();
    } else {
      start = a.positional[0].as_int();
      stop = a.positional[1].as_int();
      if (a.positional.size() == 3) step = a.positional[2].as_int();
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    Array out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (int64_t(out.size()) >= kMaxRange) fail("range() past 1048576 items");
      out.push_back(Value(i));
    }
    return Value(std::move(out));
  });
}

Value object_from_arguments(const CallArgs& a, const char* what, bool is_namespace) {
  auto o = std::make_shared<Object>();
  o->is_namespace = is_namespace;
  if (a.positional.size() > 1) fail(std::string(what) + "() takes at most one positional argument");
  if (!a.positional.empty()) {
    if (!a.positional[0].is_object()) fail(std::string(what) + "() positional argument must be a mapping");
    const Object& from = a.positional[0].as_object();
    for (size_t i = 0; i < from.size(); ++i) o->set_key(from.key(i), from.items()[i].second);
  }
  for (const auto& [k, v] : a.keyword) o->set(k, v);
  return Value(std::move(o));
}

Scope globals() {
  Scope g;
  g["range"] = global_range();
  g["namespace"] = Value::callable(
      "namespace", [](const CallArgs& a, Context&) { return object_from_arguments(a, "namespace", true); });
  g["dict"] =
      Value::callable("dict", [](const CallArgs& a, Context&) { return object_from_arguments(a, "dict", false); });
  g["raise_exception"] = Value::callable("raise_exception", [](const CallArgs& a, Context&) -> Value {
    throw RaisedByTemplate(a.positional.empty() ? std::string() : a.positional[0].str());
  });
  g["strftime_now"] = Value::callable("strftime_now", [](const CallArgs& a, Context&) {
    const Value& fmt = a.require(0, "format", "strftime_now");
    if (!fmt.is_string()) fail("strftime_now() needs a format string");
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[256];
    const size_t n = std::strftime(buf, sizeof buf, fmt.as_string().c_str(), &local);
    return Value(std::string(buf, n));
  });
  return g;
}

// One line, as every tandem error: newlines that came from the template's text are shown as \n.
std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return out;
}

std::string located(const TemplateError& e) {
  const std::string where = e.line > 0 ? "line " + std::to_string(e.line) + ": " : "";
  if (dynamic_cast<const RaisedByTemplate*>(&e)) return where + "the template raised: " + one_line(e.what());
  return where + one_line(e.what());
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  try {
    Template t;
    t.body_ = std::make_shared<const Body>(parse_template(lex_template(source, LexOptions{})));
    return t;
  } catch (const TemplateError& e) {
    return InvalidArgument(located(e));
  }
}

Result<std::string> Template::render(const Scope& variables, const std::function<bool()>& cancelled) const {
  try {
    Scope scope = globals();
    for (const auto& [k, v] : variables) scope.insert_or_assign(k, v);
    Context ctx(std::move(scope));
    ctx.budget().cancelled = &cancelled;
    std::string out;
    exec_body(*body_, ctx, out);
    return out;
  } catch (const TemplateError& e) {
    return InvalidArgument(located(e));
  }
}

}  // namespace tandem::jinja
