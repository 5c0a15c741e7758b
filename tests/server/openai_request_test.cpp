// Request bodies as OpenAI defines them: what is read, and the error (status, param, code) for
// every kind of bad field.
#include "server/openai_request.h"

#include <gtest/gtest.h>

namespace tandem::server {
namespace {

ServedModel served() {
  ServedModel s;
  s.id = "tiny";
  s.random_seed = false;
  s.sampling.seed = 7;
  return s;
}

std::optional<ApiError> chat(const std::string& body, GenerationRequest* out = nullptr) {
  GenerationRequest r;
  auto e = parse_chat_request(body, served(), r);
  if (out) *out = r;
  return e;
}

std::optional<ApiError> completion(const std::string& body, GenerationRequest* out = nullptr) {
  GenerationRequest r;
  auto e = parse_completion_request(body, served(), r);
  if (out) *out = r;
  return e;
}

const char* kMessages = R"("messages": [{"role": "user", "content": "hi"}])";

TEST(OpenAiRequest, ReadsAChatRequest) {
  GenerationRequest r;
  auto e = chat(std::string("{") + kMessages +
                    R"(, "model": "tiny", "stream": true, "stream_options": {"include_usage": true},
                    "max_tokens": 12, "temperature": 0.5, "top_p": 0.9, "seed": 42, "stop": ["\n", "END"],
                    "n": 1, "presence_penalty": 0, "user": "someone"})",
                &r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_TRUE(r.chat);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.max_tokens, 12);
  EXPECT_FLOAT_EQ(r.sampler.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampler.top_p, 0.9f);
  EXPECT_EQ(r.sampler.seed, 42u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
  ASSERT_EQ(r.conversation.messages.size(), 1u);
  EXPECT_EQ(r.conversation.messages[0]["content"], "hi");
}

TEST(OpenAiRequest, DefaultsComeFromTheServer) {
  GenerationRequest r;
  ASSERT_FALSE(chat(std::string("{") + kMessages + "}", &r));
  EXPECT_EQ(r.max_tokens, 0);
  EXPECT_EQ(r.sampler.seed, 7u);
  EXPECT_FALSE(r.stream);
  // max_completion_tokens is the newer name of max_tokens; top_p 0 leaves only the top token.
  ASSERT_FALSE(chat(std::string("{") + kMessages + R"(, "max_completion_tokens": 3, "top_p": 0})", &r));
  EXPECT_EQ(r.max_tokens, 3);
  EXPECT_EQ(r.sampler.temperature, 0.0f);
}

TEST(OpenAiRequest, ReadsCompletionPrompts) {
  GenerationRequest r;
  ASSERT_FALSE(completion(R"({"prompt": "Once upon", "echo": true})", &r));
  EXPECT_FALSE(r.chat);
  EXPECT_EQ(r.prompt, "Once upon");
  EXPECT_TRUE(r.echo);
  ASSERT_FALSE(completion(R"({"prompt": ["Once"]})", &r));
  EXPECT_EQ(r.prompt, "Once");
  ASSERT_FALSE(completion(R"({"prompt": [1, 2, 3]})", &r));
  EXPECT_TRUE(r.prompt_is_ids);
  EXPECT_EQ(r.prompt_ids, (std::vector<TokenId>{1, 2, 3}));
  ASSERT_FALSE(completion(R"({"prompt": [[5, 6]]})", &r));
  EXPECT_EQ(r.prompt_ids, (std::vector<TokenId>{5, 6}));
}

struct BadCase {
  const char* name;
  std::string body;
  bool is_chat;
  int status;
  const char* param;
  const char* code;
};

class BadRequests : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadRequests, GetOpenAisErrorObject) {
  const BadCase& c = GetParam();
  auto e = c.is_chat ? chat(c.body) : completion(c.body);
  ASSERT_TRUE(e) << c.name << " was accepted";
  EXPECT_EQ(e->http_status, c.status) << e->message;
  EXPECT_EQ(e->param, c.param) << e->message;
  EXPECT_EQ(e->code, c.code) << e->message;
  EXPECT_FALSE(e->message.empty());
  const auto j = e->to_json();
  EXPECT_EQ(j["error"]["message"], e->message);
  EXPECT_EQ(j["error"]["type"], c.status == 404 ? "invalid_request_error" : e->type);
}

std::string with(const std::string& field) { return std::string("{") + kMessages + ", " + field + "}"; }

INSTANTIATE_TEST_SUITE_P(
    Fields, BadRequests,
    ::testing::Values(
        BadCase{"malformed (cut short: where it stopped)", "{\"messages\": [", true, 400, "messages[0]", ""},
        BadCase{"not an object", "[1, 2]", true, 400, "", ""},
        BadCase{"too deep", std::string(100, '[') + std::string(100, ']'), true, 400, "", ""},
        BadCase{"no messages", "{}", true, 400, "messages", "missing_required_parameter"},
        BadCase{"messages not an array", R"({"messages": "hi"})", true, 400, "messages", "invalid_type"},
        BadCase{"no message", R"({"messages": []})", true, 400, "messages", "empty_array"},
        BadCase{"a message without a role", R"({"messages": [{"content": "x"}]})", true, 400, "messages",
                "invalid_value"},
        BadCase{"unknown model", with(R"("model": "gpt-9")"), true, 404, "model", "model_not_found"},
        BadCase{"model not a string", with(R"("model": 3)"), true, 400, "model", "invalid_type"},
        BadCase{"temperature a string", with(R"("temperature": "hot")"), true, 400, "temperature", "invalid_type"},
        BadCase{"temperature too high", with(R"("temperature": 2.5)"), true, 400, "temperature", "invalid_value"},
        BadCase{"top_p above 1", with(R"("top_p": 1.5)"), true, 400, "top_p", "invalid_value"},
        BadCase{"max_tokens 0", with(R"("max_tokens": 0)"), true, 400, "max_tokens", "invalid_value"},
        BadCase{"max_tokens a decimal", with(R"("max_tokens": 1.5)"), true, 400, "max_tokens", "invalid_type"},
        BadCase{"stream a string", with(R"("stream": "yes")"), true, 400, "stream", "invalid_type"},
        BadCase{"stop a number", with(R"("stop": 5)"), true, 400, "stop", "invalid_type"},
        BadCase{"stop with a number", with(R"("stop": ["a", 5])"), true, 400, "stop[1]", "invalid_type"},
        BadCase{"seed a string", with(R"("seed": "x")"), true, 400, "seed", "invalid_type"},
        BadCase{"n of 2", with(R"("n": 2)"), true, 400, "n", "unsupported_parameter"},
        BadCase{"a presence penalty", with(R"("presence_penalty": 0.5)"), true, 400, "presence_penalty",
                "unsupported_parameter"},
        BadCase{"logprobs", with(R"("logprobs": true)"), true, 400, "logprobs", "unsupported_parameter"},
        BadCase{"json mode", with(R"("response_format": {"type": "json_object"})"), true, 400, "response_format",
                "unsupported_parameter"},
        BadCase{"include_usage a number", with(R"("stream_options": {"include_usage": 1})"), true, 400,
                "stream_options.include_usage", "invalid_type"},
        BadCase{"no prompt", "{}", false, 400, "prompt", "missing_required_parameter"},
        BadCase{"empty prompt", R"({"prompt": ""})", false, 400, "prompt", "invalid_value"},
        BadCase{"two prompts", R"({"prompt": ["a", "b"]})", false, 400, "prompt", "unsupported_parameter"},
        BadCase{"a prompt object", R"({"prompt": {"a": 1}})", false, 400, "prompt", "invalid_type"},
        BadCase{"a negative token id", R"({"prompt": [1, -4]})", false, 400, "prompt", "invalid_value"},
        BadCase{"a token id string", R"({"prompt": [1, "x"]})", false, 400, "prompt[1]", "invalid_type"},
        BadCase{"suffix", R"({"prompt": "a", "suffix": "b"})", false, 400, "suffix", "unsupported_parameter"}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

// A byte that is not UTF-8 is the client's error, named by its field (it was a 500: the parser's
// message quoted the byte, and the error object's dump threw on it).
TEST(OpenAiRequest, InvalidUtf8NamesTheField) {
  auto e = chat("{\"messages\": [{\"role\": \"user\", \"content\": \"ok\"}, "
                "{\"role\": \"user\", \"content\": \"a\xff\"}]}");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->param, "messages[1].content");
  EXPECT_EQ(e->code, "invalid_utf8");
  EXPECT_NE(e->message.find("0xFF"), std::string::npos) << e->message;
  e = completion("{\"max_tokens\": 3, \"prompt\": \"\xc3\"}");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "prompt");
  e = chat("{\"messages\": [{\"ro\xe9le\": \"user\"}]}");  // in a key: the object holding it
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages[0]");
  // Every error object is valid JSON text, whatever bytes its message quotes.
  e = chat("{\"messages\": [\x01\xfe]}");
  ASSERT_TRUE(e);
  EXPECT_NO_THROW(nlohmann::json::parse(json_text(e->to_json())));
  // A syntax error names where it was, too.
  e = chat(R"({"messages": [{"role": "user"}, {"role": "user",]})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages[1]");
}

// Past kMaxMessages a chat request is refused while it is parsed, whatever its messages hold.
TEST(OpenAiRequest, TooManyMessages) {
  const auto body = [](size_t n, const char* each) {
    std::string b = R"({"messages": [)";
    for (size_t i = 0; i < n; ++i) b += (i ? "," : "") + std::string(each);
    return b + "]}";
  };
  EXPECT_FALSE(chat(body(kMaxMessages, R"({"role": "user", "content": "hi"})")));
  for (const char* each : {R"({"role": "user"})", "1", "[]"}) {
    auto e = chat(body(kMaxMessages + 1, each));
    ASSERT_TRUE(e) << each;
    EXPECT_EQ(e->param, "messages");
    EXPECT_EQ(e->code, "array_above_max_length");
  }
  // Other arrays are not counted as messages (token ids of a long prompt).
  std::string ids = R"({"prompt": [)";
  for (size_t i = 0; i < 3 * kMaxMessages; ++i) ids += (i ? ",1" : "1");
  EXPECT_FALSE(completion(ids + "]}"));
  auto e = chat(std::string("{") + kMessages + R"(, "tools": [)" + body(kMaxTools + 1, "{}").substr(14));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "tools");
}

}  // namespace
}  // namespace tandem::server
