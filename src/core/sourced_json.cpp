#include "core/sourced_json.h"

#include <cmath>

#include "core/file_io.h"

namespace tandem {

using nlohmann::json;

namespace {
std::string clip(const std::string& s) { return s.size() > 120 ? s.substr(0, 117) + "..." : s; }
}  // namespace

const json* SourcedJsonReader::find(const std::string& path) {
  const json* node = &root_;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) {
      fail("missing field '" + path + "'");
      return nullptr;
    }
    node = &(*node)[key];
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

double SourcedJsonReader::number(const std::string& path, bool integer, bool allow_zero) {
  seen_.insert(path);
  if (!status_.ok()) return 0;
  const json* node = find(path);
  if (!node) return 0;
  if (!node->is_object() || !node->contains("value") || !node->contains("source")) {
    fail("field '" + path + "' must be {\"value\": number, \"source\": string}, got " + clip(node->dump()));
    return 0;
  }
  const json& v = (*node)["value"];
  const json& s = (*node)["source"];
  if (!s.is_string() || s.get<std::string>().empty()) {
    fail("field '" + path + ".source' must be a non-empty string, got " + clip(s.dump()));
    return 0;
  }
  const std::string src = s.get<std::string>();
  if (src.rfind("assumption", 0) == 0 && src.find(':') == std::string::npos) {
    fail("field '" + path + ".source' is an assumption without a reason ('assumption: <reason>'), got " + clip(s.dump()));
    return 0;
  }
  if (!v.is_number()) {
    fail("field '" + path + ".value' must be a number, got " + clip(v.dump()));
    return 0;
  }
  const double d = v.get<double>();
  const bool sign_ok = allow_zero ? d >= 0 : d > 0;
  if (!std::isfinite(d) || !sign_ok || (integer && (d != std::floor(d) || d > 1e15))) {
    fail("field '" + path + ".value' must be a " + (allow_zero ? "non-negative " : "positive ") +
         (integer ? "integer" : "number") + ", got " + clip(v.dump()));
    return 0;
  }
  return d;
}

int64_t SourcedJsonReader::integer(const std::string& path, int64_t lo, int64_t hi) {
  const double d = number(path, true, lo <= 0);
  if (!status_.ok()) return lo;
  if (d < double(lo) || d > double(hi)) {
    fail("field '" + path + ".value' must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
         clip(find(path)->at("value").dump()));
    return lo;
  }
  return int64_t(d);
}

std::string SourcedJsonReader::source_of(const std::string& path) const {
  const json* node = &root_;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) return {};
    node = &(*node)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return node->is_object() && node->contains("source") && (*node)["source"].is_string() ? (*node)["source"].get<std::string>()
                                                                                        : std::string();
}

std::string SourcedJsonReader::string(const std::string& path) {
  seen_.insert(path);
  if (!status_.ok()) return {};
  const json* node = find(path);
  if (!node) return {};
  if (!node->is_string() || node->get<std::string>().empty()) {
    fail("field '" + path + "' must be a non-empty string, got " + clip(node->dump()));
    return {};
  }
  return node->get<std::string>();
}

const json* SourcedJsonReader::array(const std::string& path) {
  seen_.insert(path);
  if (!status_.ok()) return nullptr;
  const json* node = find(path);
  if (!node) return nullptr;
  if (!node->is_array()) {
    fail("field '" + path + "' must be an array, got " + clip(node->dump()));
    return nullptr;
  }
  return node;
}

void SourcedJsonReader::check_unknown() { check_unknown(root_, ""); }

void SourcedJsonReader::check_unknown(const json& node, const std::string& prefix) {
  if (!status_.ok() || !node.is_object()) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (prefix.empty() && (it.key() == "name" || it.key() == "description")) continue;
    if (seen_.count(path)) continue;
    if (it.value().is_object() && !it.value().contains("value")) {
      check_unknown(it.value(), path);
    } else {
      return fail("unknown field '" + path + "'" +
                  (it.value().is_object() ? std::string() : " (value " + clip(it.value().dump()) + ")"));
    }
  }
}

void SourcedJsonReader::fail(const std::string& msg) {
  if (status_.ok()) status_ = InvalidArgument(file_ + ": " + msg);
}

Result<json> parse_json_text(std::string_view text, const std::string& file) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const std::exception& e) {
    return InvalidArgument(file + ": not valid JSON: " + e.what());
  }
}

Result<std::string> read_text_file(const std::string& path, const std::string& what) {
  // Descriptions, plans and cost databases are kilobytes; the bound stops a device or a runaway file.
  return read_regular_file(path, size_t(64) << 20, what);
}

}  // namespace tandem
