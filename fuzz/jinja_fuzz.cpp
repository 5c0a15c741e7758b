// libFuzzer target for chat templates: the Jinja source a GGUF file carries (an untrusted
// download), with the interpreter's budgets on (src/jinja/limits.h). Any input must parse into a
// template or be refused with a one-line error; a template that parses must render or refuse
// within the budgets -- a crash, a sanitizer report, an allocation past -rss_limit_mb or a render
// past -timeout is a finding -- with its error's class (the template's own error, or a limit), and
// render the same text twice (nothing may depend on what an earlier render left behind).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "jinja/template.h"

namespace {

tandem::jinja::Scope variables() {
  static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi <b> \"q\" é"},
    {"role": "assistant", "content": "Hello", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
    {"role": "user", "content": ""}])");
  tandem::jinja::Scope v;
  v["messages"] = tandem::jinja::Value::from_json(messages);
  v["add_generation_prompt"] = tandem::jinja::Value(true);
  v["bos_token"] = tandem::jinja::Value("<s>");
  v["eos_token"] = tandem::jinja::Value("</s>");
  v["tools"] = tandem::jinja::Value::none();
  return v;
}

bool one_line(const std::string& m) { return !m.empty() && m.find('\n') == std::string::npos; }

// A template's error (kInvalidArgument) or a limit (kOutOfRange); nothing cancels here.
bool known_class(const tandem::Status& s) {
  return s.code() == tandem::StatusCode::kInvalidArgument || s.code() == tandem::StatusCode::kOutOfRange;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto t = tandem::jinja::Template::parse(source);
  if (!t.ok()) {
    FUZZ_CHECK(one_line(t.status().message()));
    FUZZ_CHECK(known_class(t.status()));
    return 0;
  }
  const tandem::jinja::Scope vars = variables();
  auto first = t->render(vars);
  auto second = t->render(vars);
  FUZZ_CHECK(first.ok() == second.ok());
  if (first.ok())
    FUZZ_CHECK(*first == *second);
  else
    FUZZ_CHECK(one_line(first.status().message()) && known_class(first.status()) &&
               first.status().message() == second.status().message());
  return 0;
}
