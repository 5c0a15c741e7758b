// A Jinja template, parsed once and rendered many times: tandem's interpreter for the chat
// templates that model files carry. It follows Jinja2 as Hugging Face renders chat templates
// (trim_blocks, lstrip_blocks, loop controls, an immutable sandbox, json.dumps-style tojson,
// raise_exception and strftime_now), so a prompt matches what the model was trained on byte for
// byte. What it cannot render is an error naming the line and the construct.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "jinja/context.h"
#include "jinja/value.h"

namespace tandem::jinja {

struct Stmt;

class Template {
 public:
  // Errors: "line N: <what>" (an unknown statement or filter, a syntax error); kOutOfRange for a
  // source past limits::kMaxTemplateBytes or a parse limit. Linear in the source's size.
  static Result<Template> parse(std::string_view source);

  // Renders with `variables` beside the globals (range, namespace, dict, raise_exception,
  // strftime_now), within the budgets of limits.h. Errors are one line, "line N: <what>":
  //   kInvalidArgument  the template's own error, or its raise_exception() ("line N: the template
  //                     raised: MESSAGE"): it cannot render these variables;
  //   kOutOfRange       a limit of limits.h (steps, work, a size, a depth, the stack) or memory;
  //   kInternal         `cancelled` said stop.
  // Safe on any thread, several renders of one Template at once included.
  // `cancelled`, when given, is polled every few thousand steps (and at least every
  // limits::kPollSteps): once it answers true the render stops with "the render was
  // cancelled" (a client that went away, a SIGTERM). It runs on the rendering thread.
  Result<std::string> render(const Scope& variables, const std::function<bool()>& cancelled = {}) const;

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

}  // namespace tandem::jinja
