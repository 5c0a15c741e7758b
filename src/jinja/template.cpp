#include "jinja/template.h"

#include <ctime>

#include "jinja/ast.h"
#include "jinja/budget.h"
#include "jinja/limits.h"
#include "jinja/error.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace tandem::jinja {
namespace {

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
    // The length first, in 128 bits (start + k * step never overflows then), so the limit is
    // checked before anything is allocated.
    const __int128 span = step > 0 ? __int128(stop) - start : __int128(start) - stop;
    const __int128 stride = step > 0 ? __int128(step) : -__int128(step);
    const __int128 n = span <= 0 ? 0 : (span + stride - 1) / stride;
    if (n > limits::kMaxRangeItems)
      fail_limit("range() past " + std::to_string(limits::kMaxRangeItems) + " items");
    Array out;
    out.reserve(size_t(n));
    for (int64_t k = 0; k < int64_t(n); ++k) out.push_back(Value(int64_t(start + __int128(k) * step)));
    return Value(std::move(out));
  });
}

// Python's time.strftime: any length of format (the buffer grows; an empty result is not an
// overflow when the format itself yields nothing).
std::string strftime_text(const std::string& format, const std::tm& when) {
  if (format.empty()) return "";
  check_string_size(format.size() * 64, "strftime_now()");
  for (size_t room = 256 + format.size() * 4;; room *= 2) {
    std::string buf(room, '\0');
    const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &when);
    if (n > 0 || room >= format.size() * 64 + 256) {
      buf.resize(n);
      return buf;
    }
  }
}

Value object_from_arguments(const CallArgs& a, const char* what, bool is_namespace) {
  auto o = make_node<Object>();
  o->is_namespace = is_namespace;
  if (is_namespace)
    if (RenderBudget* b = RenderBudget::active()) b->track_namespace(o);
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
    if (fmt.as_string().find('\0') != std::string::npos) fail("strftime_now(): the format holds a NUL character");
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    return Value(strftime_text(fmt.as_string(), local));
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

// An error message of at most kMaxMessageBytes (a template can raise a 64 MiB message), cut at
// a character boundary.
constexpr size_t kMaxMessageBytes = 1024;

std::string shortened(std::string s) {
  if (s.size() <= kMaxMessageBytes) return s;
  size_t cut = kMaxMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
  s.resize(cut);
  return s + "... (" + std::to_string(s.size()) + " bytes shown)";
}

std::string located(const TemplateError& e) {
  const std::string where = e.line > 0 ? "line " + std::to_string(e.line) + ": " : "";
  if (dynamic_cast<const RaisedByTemplate*>(&e)) return where + "the template raised: " + shortened(one_line(e.what()));
  return where + shortened(one_line(e.what()));
}

// Status codes: the template's own error or raise_exception (kInvalidArgument), a limit
// (kOutOfRange), the caller's cancel (kInternal).
Status status_of(const TemplateError& e) {
  if (dynamic_cast<const LimitExceeded*>(&e)) return OutOfRange(located(e));
  if (dynamic_cast<const RenderCancelled*>(&e)) return Internal(located(e));
  return InvalidArgument(located(e));
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  if (source.size() > limits::kMaxTemplateBytes)
    return OutOfRange("the template is " + std::to_string(source.size()) + " bytes, past the limit of " +
                      std::to_string(limits::kMaxTemplateBytes >> 10) + " KiB");
  try {
    Template t;
    t.body_ = std::make_shared<const Body>(parse_template(lex_template(source, LexOptions{})));
    return t;
  } catch (const TemplateError& e) {
    return status_of(e);
  } catch (const std::bad_alloc&) {
    return OutOfRange("the template ran out of memory while it was parsed");
  }
}

Result<std::string> Template::render(const Scope& variables, const std::function<bool()>& cancelled) const {
  // Declared first, so it outlives every value of the render: its destructor frees the cycles a
  // template can make through namespaces.
  RenderBudget budget(&cancelled);
  try {
    const ActiveBudget active(budget);
    Scope scope = globals();
    for (const auto& [k, v] : variables) scope.insert_or_assign(k, v);
    Context ctx(std::move(scope), budget);
    std::string out;
    exec_body(*body_, ctx, out);
    return out;
  } catch (const TemplateError& e) {
    return status_of(e);
  } catch (const std::bad_alloc&) {
    return OutOfRange("the template ran out of memory");
  } catch (const std::exception& e) {
    return Internal(std::string("the template failed: ") + e.what());
  }
}

}  // namespace tandem::jinja
