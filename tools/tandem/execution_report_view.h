// The ExecutionReport of a forward pass as a table for people and as JSON for tools.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/execution_report.h"

namespace tandem::cli {

nlohmann::json execution_json(const ExecutionReport& r);
std::string execution_table(const ExecutionReport& r);  // several lines, each ending in '\n'

}  // namespace tandem::cli
