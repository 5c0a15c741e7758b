#include "jinja/context.h"

#include "jinja/error.h"

namespace tandem::jinja {

Value Context::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = (*it)->find(name);
    if (found != (*it)->end()) return found->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

}  // namespace tandem::jinja
