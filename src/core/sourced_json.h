// Strict reading of hardware descriptions (NPU targets, SoC models): every number is a leaf
// {"value": <number>, "source": "<SEEDS row | paper section | assumption: reason>"}, so no
// hardware number enters tandem without saying where it comes from. The first problem becomes
// the error, naming the file, the field path and the offending value; fields nobody asked for are
// errors too (a typo must not silently fall back to a default).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace tandem {

class SourcedJsonReader {
 public:
  SourcedJsonReader(const nlohmann::json& root, std::string file) : root_(root), file_(std::move(file)) {}

  // A {"value", "source"} leaf at a dotted path. The value must be finite and > 0 (>= 0 with
  // allow_zero); integer: integral too. Returns 0 after an error.
  double number(const std::string& path, bool integer = false, bool allow_zero = false);
  // A sourced integer leaf in [lo, hi] (the documented range, named in the error); lo after an
  // error. Range-checked before any cast, so 2^31 or 1e12 is an error, never a wrapped int.
  int64_t integer(const std::string& path, int64_t lo, int64_t hi);
  // The "source" text of a leaf read with number() (empty if none).
  std::string source_of(const std::string& path) const;
  // A non-empty string at a dotted path (plain, not a sourced leaf).
  std::string string(const std::string& path);
  // An array at a dotted path (its elements are the caller's to read); null after an error.
  const nlohmann::json* array(const std::string& path);
  // Paths (and their subtrees) the caller reads by hand: not reported as unknown.
  void allow(const std::string& path) { seen_.insert(path); }

  // Every leaf under the root that was not read (or allowed) is an error; top-level "name" and
  // "description" are always allowed.
  void check_unknown();
  void fail(const std::string& msg);
  const Status& status() const { return status_; }
  const std::string& file() const { return file_; }

 private:
  const nlohmann::json* find(const std::string& path);
  void check_unknown(const nlohmann::json& node, const std::string& prefix);

  const nlohmann::json& root_;
  std::string file_;
  Status status_;
  std::set<std::string> seen_;
};

// Parses JSON text, naming the file in the error.
Result<nlohmann::json> parse_json_text(std::string_view text, const std::string& file);
// Reads a whole file (an error names the path and what it is: `what`).
Result<std::string> read_text_file(const std::string& path, const std::string& what);

}  // namespace tandem
