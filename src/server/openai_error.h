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
ApiError invalid_type(const std::string& param, const std::string& expected, const nlohmann::json& got);

}  // namespace tandem::server
