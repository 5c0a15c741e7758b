// libFuzzer target for tandem serve's request bodies (POST /v1/chat/completions and
// /v1/completions): any bytes must be read into a request or refused with an OpenAI error
// object (a 4xx status, a message; the param, when named, a field of the request), never crash,
// and read the same way twice.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "server/openai_request.h"

namespace {

using tandem::server::ApiError;
using tandem::server::GenerationRequest;

void check_error(const ApiError& e) {
  FUZZ_CHECK(e.http_status >= 400 && e.http_status < 500);
  FUZZ_CHECK(!e.message.empty());
  FUZZ_CHECK(e.to_json()["error"]["message"].is_string());
}

void check_request(const GenerationRequest& r) {
  FUZZ_CHECK(r.max_tokens >= 0);
  FUZZ_CHECK(r.sampler.validate().ok());
  if (r.chat) FUZZ_CHECK(r.conversation.messages.is_array() && !r.conversation.messages.empty());
  if (!r.chat) FUZZ_CHECK(r.prompt_is_ids ? !r.prompt_ids.empty() : !r.prompt.empty());
  for (tandem::TokenId id : r.prompt_ids) FUZZ_CHECK(id >= 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  tandem::server::ServedModel served;
  served.id = "model";
  served.random_seed = false;
  for (bool chat : {true, false}) {
    GenerationRequest a, b;
    auto ea = chat ? parse_chat_request(body, served, a) : parse_completion_request(body, served, a);
    auto eb = chat ? parse_chat_request(body, served, b) : parse_completion_request(body, served, b);
    FUZZ_CHECK(bool(ea) == bool(eb));
    if (ea) {
      check_error(*ea);
      FUZZ_CHECK(ea->message == eb->message);
    } else {
      check_request(a);
      FUZZ_CHECK(a.max_tokens == b.max_tokens && a.stop == b.stop && a.prompt == b.prompt);
    }
  }
  return 0;
}
