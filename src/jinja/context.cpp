#include "jinja/context.h"

#include "jinja/error.h"

namespace tandem::jinja {

void RenderBudget::step() {
  if (++steps > kMaxSteps) fail("the template ran past 5000000 steps (a runaway loop or recursion)");
  if (steps % kPollSteps == 0 && cancelled && *cancelled && (*cancelled)()) fail("the render was cancelled");
}

Value Context::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = (*it)->find(name);
    if (found != (*it)->end()) return found->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

}  // namespace tandem::jinja
