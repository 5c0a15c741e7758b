// Python's json.dumps(x, ensure_ascii=False, ...) — what Hugging Face's `tojson` filter is — so
// tool schemas and arguments print exactly as the model saw them in training.
#pragma once

#include <optional>
#include <string>

#include "jinja/value.h"

namespace tandem::jinja {

struct JsonDumpOptions {
  std::optional<std::string> indent;  // nullopt: one line; else the text of one level
  std::string item_separator = ", ";  // Python's default; ",", when indent is set
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace tandem::jinja
