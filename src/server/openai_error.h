// An error as the OpenAI API reports it: an HTTP status and
// {"error": {"message", "type", "param", "code"}}, which OpenAI's clients turn into typed
// exceptions (BadRequestError, AuthenticationError, NotFoundError, ...).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tandem::server {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault ("" for none)
  std::string code;   // a machine-readable reason ("" for none)

  nlohmann::ordered_json to_json() const;
};

ApiError bad_request(std::string message, std::string param = "", std::string code = "");

// j as JSON text, never throwing: a string that is not valid UTF-8 (a model's stray bytes, a
// client's bytes echoed in a message) has each bad byte replaced by U+FFFD. nlohmann's dump()
// throws type_error.316 there, which turned a client's bad byte into a 500.
std::string json_text(const nlohmann::ordered_json& j);
ApiError invalid_type(const std::string& param, const std::string& expected, const nlohmann::json& got);

}  // namespace tandem::server
