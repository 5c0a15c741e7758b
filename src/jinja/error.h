// How the template engine reports what it cannot do. Inside the engine an error is an exception
// (a template is a deep recursion of small evaluations); the public API (template.h) turns it into
// a Status naming the template's line and the construct.
#pragma once

#include <stdexcept>
#include <string>

namespace tandem::jinja {

class TemplateError : public std::runtime_error {
 public:
  explicit TemplateError(const std::string& message, int line = 0) : std::runtime_error(message), line(line) {}
  int line;  // 1-based line of the template; 0 until the statement that failed adds it
};

// raise_exception() from the template itself: its message goes to the user unchanged.
class RaisedByTemplate : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// A limit of limits.h reached (steps, work, sizes, depths, the stack), or memory exhausted.
class LimitExceeded : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// The caller's cancel hook said stop.
class RenderCancelled : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

[[noreturn]] inline void fail(const std::string& message) { throw TemplateError(message); }
[[noreturn]] inline void fail_limit(const std::string& message) { throw LimitExceeded(message); }

}  // namespace tandem::jinja
