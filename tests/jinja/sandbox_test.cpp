// The template interpreter as a sandbox: what a hostile chat template (a downloaded GGUF's
// tokenizer.chat_template) can do to it. Every case must end in a one-line error naming the
// template's line and the limit, with the status code of its class -- never a crash, a hang, an
// abort on a failed allocation, or memory that stays -- and the cases that look hostile but are
// legitimate (a flat comparison chain, a deep value that is only dropped) must render.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "jinja/limits.h"
#include "jinja/template.h"

namespace tandem::jinja {
namespace {

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

Result<std::string> render(const std::string& source, const std::function<bool()>& cancelled = {}) {
  Result<Template> t = Template::parse(source);
  if (!t.ok()) return t.status();
  return t->render(Scope{}, cancelled);
}

struct Hostile {
  std::string name;
  std::function<std::string()> source;  // the case's construct is on line 3
  StatusCode code;
  std::string says;
  // Runs a limit to its end (5M steps, 1 GiB of work, 64 MiB strings): 0.3-1 s in release, 5-10 s
  // under the sanitizers, where the fuzzer covers these paths instead.
  bool heavy = false;
};

constexpr bool kHeavy = true;

std::string on_line_3(const std::string& s) { return "{# one #}\n{# two #}\n" + s; }

std::vector<Hostile> hostile_cases() {
  const StatusCode limit = StatusCode::kOutOfRange, error = StatusCode::kInvalidArgument;
  const std::string depth = "nested past " + std::to_string(limits::kMaxExpressionDepth) + " levels";
  const std::string steps = "past " + std::to_string(limits::kMaxSteps) + " steps";
  const std::string work = "of text and lists";
  const std::string string_cap = "a string past " + std::to_string(limits::kMaxStringBytes >> 20) + " MiB";
  auto chain = [](std::string head, std::string link, size_t n, std::string tail = "") {
    return [=] { return on_line_3("{{ " + head + repeat(link, n) + tail + " }}"); };
  };
  return {
      // Chains deepen the tree by one a link with no brackets in the text (they overflowed the
      // stack at 40,000 links); and brackets of every kind.
      {"PlusChain", chain("1", " + 1", 40000), limit, depth},
      {"MinusChain", chain("1", " - 1", 40000), limit, depth},
      {"TimesChain", chain("1", " * 1", 40000), limit, depth},
      {"ConcatChain", chain("'a'", " ~ 'a'", 40000), limit, depth},
      {"PowerChain", chain("1", " ** 1", 40000), limit, depth},
      {"AndChain", chain("true", " and true", 40000), limit, depth},
      {"OrChain", chain("false", " or false", 40000), limit, depth},
      {"AttributeChain", chain("a", ".b", 50000), limit, depth},
      {"SubscriptChain", chain("a", "[0]", 50000), limit, depth},
      {"CallChain", chain("f", "()", 50000), limit, depth},
      {"FilterChain", chain("'x'", "|upper", 50000), limit, depth},
      {"TestChainThroughNot", chain("", "not ", 50000, "true"), limit, depth},
      {"UnaryMinusChain", chain("", "- ", 50000, "1"), limit, depth},
      {"ParenthesesNesting", chain(repeat("(", 50000), "", 0, "1" + repeat(")", 50000)), limit, depth},
      {"ListNesting", chain(repeat("[", 50000), "", 0, repeat("]", 50000)), limit, depth},
      {"DictNesting", chain(repeat("{'a': ", 50000), "", 0, "1" + repeat("}", 50000)), limit, depth},
      {"ConditionalChain", chain("1", " if true else 1", 50000), limit, depth},
      {"BlockNesting", [] { return on_line_3(repeat("{% if true %}", 40000) + repeat("{% endif %}", 40000)); },
       limit, "blocks nested past"},
      {"LoopNesting",
       [] { return on_line_3(repeat("{% for x in [1] %}", 20000) + repeat("{% endfor %}", 20000)); }, limit,
       "blocks nested past"},
      // Time: every iteration is a step, also of an empty body, a filtered loop and a built-in.
      {"NestedEmptyLoops",
       [] {
         return on_line_3(
             "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}"
             "{% endfor %}{% endfor %}");
       },
       limit, steps, kHeavy},
      {"FilteredLoopSkippingAll",
       [] { return on_line_3("{% for i in range(3000) %}{% for j in range(3000) if false %}{% endfor %}{% endfor %}"); },
       limit, steps, kHeavy},
      {"MembershipInALoop",
       [] {
         return on_line_3("{% set l = range(100000)|list %}{% for i in range(100000) %}{% if -1 in l %}{% endif %}"
                          "{% endfor %}");
       },
       limit, steps},
      {"MacroFanOut",
       [] {
         return on_line_3(
             "{% macro m(d) %}{% if d < 40 %}{{ m(d + 1) }}{{ m(d + 1) }}{% endif %}{% endmacro %}{{ m(0) }}");
       },
       limit, steps, kHeavy},
      {"MacroRecursion", [] { return on_line_3("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"); }, limit,
       "recursed past " + std::to_string(limits::kMaxMacroDepth) + " calls"},
      // Work: string operations that scan or copy more each time (quadratic within the steps).
      {"QuadraticConcatInANamespace",
       [] {
         return on_line_3(
             "{% set ns = namespace(s='') %}{% for i in range(40000) %}{% set ns.s = ns.s ~ 'x' * 100 %}"
             "{% endfor %}");
       },
       limit, work, kHeavy},
      {"QuadraticPlusOfLists",
       [] {
         return on_line_3(
             "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}");
       },
       limit, work, kHeavy},
      {"SearchOfABigStringInALoop",
       [] {
         return on_line_3("{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{% if 'zz' in s %}{% endif %}"
                          "{% endfor %}");
       },
       limit, work, kHeavy},
      {"StartswithOfABigStringInALoop",
       [] {
         return on_line_3("{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{% if s.find('zz') %}{% endif %}"
                          "{% endfor %}");
       },
       limit, work, kHeavy},
      // Memory: every path that builds a string or a list has the size cap.
      {"ConcatDoubling",
       [] { return on_line_3("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"); },
       limit, "~: " + string_cap, kHeavy},
      {"PlusDoubling",
       [] { return on_line_3("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}"); },
       limit, "+: " + string_cap, kHeavy},
      {"ListPlusDoubling",
       [] { return on_line_3("{% set ns = namespace(l=[0]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}"); },
       limit, "held past", kHeavy},
      {"StringRepetition", [] { return on_line_3("{{ 'abc' * 9223372036854775807 }}"); }, limit, "past 64 MiB"},
      {"ListRepetition", [] { return on_line_3("{{ [1, 2] * 4611686018427387904 }}"); }, limit, "items"},
      {"JoinAmplifies", [] { return on_line_3("{{ (range(1000000)|list)|join('x' * 1000000) }}"); }, limit,
       "join(): " + string_cap, kHeavy},
      {"StrJoinAmplifies", [] { return on_line_3("{{ ('x' * 1000000).join(range(1000)|map('string')) }}"); }, limit,
       "str.join(): " + string_cap, kHeavy},
      {"ReplaceSquares",
       [] { return on_line_3("{% set s = 'x' * 1000 %}{{ s.replace('x', s).replace('x', s).replace('x', s) }}"); },
       limit, "replace(): " + string_cap, kHeavy},
      {"ReplaceFilterSquares",
       [] { return on_line_3("{% set s = 'x' * 10000 %}{{ s|replace('x', s)|replace('x', s) }}"); }, limit,
       "replace(): " + string_cap, kHeavy},
      {"IndentEveryLine", [] { return on_line_3("{{ ('x\\n' * 100000)|indent(4096) }}"); }, limit,
       "indent(): " + string_cap, kHeavy},
      {"IndentBlankLines", [] { return on_line_3("{{ ('\\n' * 1000000)|indent(4096, blank=true) }}"); }, limit,
       "indent(): " + string_cap, kHeavy},
      {"FormatRepeatsABigArgument",
       [] { return on_line_3("{{ ('{0}' * 100).format('x' * 1000000) }}"); }, limit, "format(): " + string_cap, kHeavy},
      {"PercentFormatKeys", [] { return on_line_3("{{ ('%(a)s' * 100)|format(a='x' * 1000000) }}"); }, limit,
       "format: " + string_cap, kHeavy},
      {"FormatWidth", [] { return on_line_3("{{ '{:99999}'.format(1) }}"); }, error, "width past"},
      {"PercentWidth", [] { return on_line_3("{{ '%99999d'|format(1) }}"); }, limit, "width past"},
      {"CenterWidth", [] { return on_line_3("{{ 'x'|center(100000000) }}"); }, limit, "center(): width past"},
      {"TojsonIndentTimesDepth",
       [] {
         return on_line_3("{% set ns = namespace(v=1) %}{% for i in range(400) %}{% set ns.v = [ns.v, ns.v] %}"
                          "{% endfor %}{{ ns.v|tojson(indent=4096) }}");
       },
       limit, "tojson", kHeavy},
      {"PrintingAmplifies", [] { return on_line_3("{% set s = 'x' * 1000000 %}{{ [s] * 100 }}"); }, limit,
       "printing a list: " + string_cap, kHeavy},
      {"EscapeAmplifies", [] { return on_line_3("{{ ('&' * 20000000)|escape }}"); }, limit, string_cap, kHeavy},
      {"SplitIntoMillions", [] { return on_line_3("{{ (',' * 60000000).split(',')|length }}"); }, limit, work, kHeavy},
      {"OutputCap",
       [] { return on_line_3("{% for i in range(100) %}{{ 'x' * 1000000 }}{% endfor %}"); }, limit,
       "the output: " + string_cap, kHeavy},
      {"RangeTooLong", [] { return on_line_3("{{ range(9223372036854775807)|length }}"); }, limit, "range() past"},
      // Depth of values: printing, comparing and tojson recurse into them.
      {"PrintingADeepValue",
       [] {
         return on_line_3("{% set ns = namespace(a=[]) %}{% for i in range(1000) %}{% set ns.a = [ns.a] %}{% endfor %}"
                          "{{ ns.a }}");
       },
       limit, "printing: a value nested past"},
      {"ComparingDeepValues",
       [] {
         return on_line_3(
             "{% set ns = namespace(a=[], b=[]) %}{% for i in range(1000) %}{% set ns.a = [ns.a] %}"
             "{% set ns.b = [ns.b] %}{% endfor %}{{ ns.a == ns.b }}");
       },
       limit, "comparing: a value nested past"},
      {"TojsonOfADeepValue",
       [] {
         return on_line_3("{% set ns = namespace(a=[]) %}{% for i in range(1000) %}{% set ns.a = [ns.a] %}{% endfor %}"
                          "{{ ns.a|tojson }}");
       },
       limit, "tojson: a value nested past"},
      // Integers: 64 bits, checked (the CPU's division traps on INT64_MIN // -1).
      {"FloorDivisionOverflow", [] { return on_line_3("{{ (-9223372036854775807 - 1) // -1 }}"); }, error,
       "overflows 64 bits"},
      {"MultiplicationOverflow", [] { return on_line_3("{{ 9223372036854775807 * 2 }}"); }, error, "overflows"},
      {"AdditionOverflow", [] { return on_line_3("{{ 9223372036854775807 + 1 }}"); }, error, "overflows"},
      {"SubtractionOverflow", [] { return on_line_3("{{ (-9223372036854775807 - 1) - 1 }}"); }, error, "overflows"},
      {"PowerOverflow", [] { return on_line_3("{{ 3 ** 40 }}"); }, error, "overflows"},
      {"NegationOverflow", [] { return on_line_3("{{ -(-9223372036854775807 - 1) }}"); }, error, "overflows"},
      {"AbsOverflow", [] { return on_line_3("{{ (-9223372036854775807 - 1)|abs }}"); }, error, "overflows"},
      {"SumOverflow", [] { return on_line_3("{{ [9223372036854775807, 1]|sum }}"); }, error, "overflows"},
      {"IntOfAHugeFloat", [] { return on_line_3("{{ 1e300|int }}"); }, error, "int(): 1e+300 is past 64 bits"},
      {"IntOfAHugeString", [] { return on_line_3("{{ '99999999999999999999'|int }}"); }, error, "past 64 bits"},
      {"PercentDOfAHugeFloat", [] { return on_line_3("{{ '%d'|format(1e300) }}"); }, error, "past 64 bits"},
  };
}

class HostileTemplate : public ::testing::TestWithParam<Hostile> {};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST_P(HostileTemplate, EndsInAOneLineErrorNamingTheLine) {
  const Hostile& h = GetParam();
  if (h.heavy && kSanitized) GTEST_SKIP() << "runs a limit to its end: the release build's case";
  const Result<std::string> out = render(h.source());
  ASSERT_FALSE(out.ok()) << "rendered " << out->size() << " bytes";
  const std::string& m = out.status().message();
  EXPECT_EQ(out.status().code(), h.code) << m;
  EXPECT_EQ(m.rfind("line 3: ", 0), 0u) << m;
  EXPECT_NE(m.find(h.says), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_LT(m.size(), 2048u);
}

INSTANTIATE_TEST_SUITE_P(Cases, HostileTemplate, ::testing::ValuesIn(hostile_cases()),
                         [](const ::testing::TestParamInfo<Hostile>& info) { return info.param.name; });

TEST(Sandbox, ATemplatePastTheSizeLimitIsRefusedBeforeParsing) {
  const Result<Template> t = Template::parse(std::string(limits::kMaxTemplateBytes + 1, 'x'));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(t.status().message().find("past the limit"), std::string::npos) << t.status().message();
}

TEST(Sandbox, AFlatComparisonChainRenders) {
  // Not every long expression is deep: a < b < c ... is one node with many operands.
  std::string s = "{{ 0";
  for (int i = 1; i < 20000; ++i) s += " < " + std::to_string(i);
  const Result<std::string> out = render(s + " }}");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "True");
}

TEST(Sandbox, ADeepValueThatIsOnlyDroppedIsFreedWithoutRecursion) {
  // A list nested 100,000 deep: its destructor recursed once per level (past 8 MiB of stack).
  const Result<std::string> out = render(
      "{% set ns = namespace(a=[]) %}{% for i in range(100000) %}{% set ns.a = [ns.a] %}{% endfor %}done");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "done");
}

TEST(Sandbox, ANamespaceHoldingItselfPrintsAsPythonAndIsFreed) {
  // (ASan's leak check, in the sanitizer stage, sees the cycle freed at the end of the render.)
  const Result<std::string> out =
      render("{% set ns = namespace(a=none) %}{% set ns.a = ns %}{% set ns.l = [ns, {'k': ns}] %}{{ ns }}");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "<Namespace {'a': <Namespace {...}>, 'l': [<Namespace {...}>, {'k': <Namespace {...}>}]}>");
}

TEST(Sandbox, UniqueOfManyItemsIsOnePass) {
  const Result<std::string> out = render("{{ (range(100000)|list + range(100000)|list)|unique|list|length }}");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "100000");
}

TEST(Sandbox, RenderingARealConversationStaysWellInsideTheBudget) {
  // 2,000 messages through a loop, a namespace and filters, as real templates do.
  const Result<Template> t = Template::parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.n = ns.n + 1 %}"
      "{% endif %}<|{{ m.role }}|>{{ m.content|trim }}{% if not loop.last %}\n{% endif %}{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (int i = 0; i < 2000; ++i)
    messages.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", " " + std::string(500, 'w') + " "}});
  Scope vars;
  vars["messages"] = Value::from_json(messages);
  const Result<std::string> out = t->render(vars);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->substr(out->size() - 4), "1000");
}

TEST(Sandbox, ACancelledRenderStopsAtTheNextPoll) {
  std::atomic<int> polls{0};
  const Result<std::string> out =
      render("{% for i in range(1000000) %}{% endfor %}", [&] { return ++polls >= 2; });
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInternal);
  EXPECT_NE(out.status().message().find("cancelled"), std::string::npos) << out.status().message();
  EXPECT_EQ(polls.load(), 2);
}

TEST(Sandbox, TheTemplatesOwnErrorsAreInvalidArgument) {
  const Result<std::string> raised = render("\n{{ raise_exception('roles must alternate') }}");
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(raised.status().message(), "line 2: the template raised: roles must alternate");
}

TEST(Sandbox, AHugeRaisedMessageIsShortened) {
  const Result<std::string> out = render("{{ raise_exception('x' * 10000000) }}");
  ASSERT_FALSE(out.ok());
  EXPECT_LT(out.status().message().size(), 2048u);
  EXPECT_NE(out.status().message().find("bytes shown"), std::string::npos);
}

// A render on a thread with a small stack (a server's worker): nesting that an 8 MiB main thread
// holds must end in the stack limit's error there, not overflow it.
void* render_on_small_stack(void* result) {
  std::string nested = "{% macro m(d) %}" + repeat("{% if true %}", 190) + "{{ m(d + 1) if d < 60 else d }}" +
                       repeat("{% endif %}", 190) + "{% endmacro %}{{ m(0) }}";
  *static_cast<Result<std::string>*>(result) = render(nested);
  return nullptr;
}

TEST(Sandbox, ASmallThreadStackEndsInTheStackLimitNotAnOverflow) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512 << 10);
  Result<std::string> result = std::string();
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, render_on_small_stack, &result), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(result.status().message().find("KiB of stack"), std::string::npos) << result.status().message();
}

}  // namespace
}  // namespace tandem::jinja
