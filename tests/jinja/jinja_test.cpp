// The Jinja interpreter against Python's Jinja2: every case in cases.json (written by
// make_cases.py, which renders cases.in.json with Jinja2 set up as Hugging Face does) must give
// Jinja2's output byte for byte, or fail where Jinja2 fails (with the template's own message when
// it called raise_exception).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jinja/template.h"

namespace tandem::jinja {
namespace {

struct Case {
  std::string name, template_text;
  nlohmann::ordered_json vars, expected;
};

std::vector<Case> load_cases() {
  std::ifstream in(std::string(TANDEM_SOURCE_DIR) + "/tests/jinja/cases.json");
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(in);
  std::vector<Case> cases;
  for (const auto& c : j) {
    Case k;
    k.name = c["name"].get<std::string>();
    k.template_text = c["template"].get<std::string>();
    k.vars = c.value("vars", nlohmann::ordered_json::object());
    k.expected = c;
    cases.push_back(std::move(k));
  }
  return cases;
}

class Jinja2Case : public ::testing::TestWithParam<Case> {};

TEST_P(Jinja2Case, MatchesJinja2) {
  const Case& c = GetParam();
  Scope vars;
  for (const auto& [k, v] : c.vars.items()) vars[k] = Value::from_json(v);
  Result<Template> t = Template::parse(c.template_text);
  Result<std::string> out = t.ok() ? t->render(vars) : Result<std::string>(t.status());
  if (c.expected.contains("output")) {
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(*out, c.expected["output"].get<std::string>());
  } else if (c.expected.contains("raised")) {
    ASSERT_FALSE(out.ok()) << "rendered: " << *out;
    EXPECT_NE(out.status().message().find("the template raised: " + c.expected["raised"].get<std::string>()),
              std::string::npos)
        << out.status().message();
  } else {
    ASSERT_FALSE(out.ok()) << "Jinja2 fails (" << c.expected["error"].get<std::string>()
                           << "), tandem rendered: " << *out;
    // A one-line error that says where: "line N: ...".
    EXPECT_EQ(out.status().message().rfind("line ", 0), 0u) << out.status().message();
    EXPECT_EQ(out.status().message().find('\n'), std::string::npos) << out.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Jinja2Case, ::testing::ValuesIn(load_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace tandem::jinja
