// libFuzzer target for the JSON descriptions a user hands tandem: NPU targets (--target), SoC
// models (--soc FILE), plans (--plan) and cost databases (plan --cost-db). The first byte picks the
// reader ('T', 'S', 'P', anything else: cost database); the rest is its input. Any input must be
// rejected with a message naming the file, or parse into something whose own JSON parses back to
// the same text (plans and cost databases write JSON).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "npu/target_model.h"
#include "planner/cost_db.h"
#include "planner/plan.h"
#include "sim/soc_model.h"

namespace {

constexpr const char* kFile = "input.json";

bool names_the_file(const tandem::Status& s) { return s.message().find(kFile) != std::string::npos; }

void fuzz_target(std::string_view text) {
  auto t = tandem::npu::TargetModel::from_json_text(text, kFile);
  if (!t.ok()) {
    FUZZ_CHECK(names_the_file(t.status()));
    return;
  }
  FUZZ_CHECK(t->matrix.tile_dim >= 1 && t->matrix.tile_dim <= 256);  // the documented range held
  FUZZ_CHECK(!t->fingerprint().empty());
}

void fuzz_soc(std::string_view text) {
  // A unit's "target" names a file in the repo's data/npu (TANDEM_FUZZ_NPU_DIR, set by CMake).
  auto s = tandem::sim::SocModel::from_json_text(text, kFile, TANDEM_FUZZ_NPU_DIR);
  if (!s.ok()) FUZZ_CHECK(!s.status().message().empty());
}

void fuzz_plan(std::string_view text) {
  auto p = tandem::planner::Plan::from_json_text(text, kFile);
  if (!p.ok()) {
    FUZZ_CHECK(names_the_file(p.status()));
    return;
  }
  const std::string again = p->to_json();
  auto back = tandem::planner::Plan::from_json_text(again, kFile);
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->to_json() == again);
}

void fuzz_cost_db(std::string_view text) {
  auto c = tandem::planner::CostDb::from_json_text(text, kFile);
  if (!c.ok()) {
    FUZZ_CHECK(names_the_file(c.status()));
    return;
  }
  const std::string again = c->to_json();
  auto back = tandem::planner::CostDb::from_json_text(again, kFile);
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->to_json() == again);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0]) {
    case 'T':
      fuzz_target(text);
      break;
    case 'S':
      fuzz_soc(text);
      break;
    case 'P':
      fuzz_plan(text);
      break;
    default:
      fuzz_cost_db(text);
      break;
  }
  return 0;
}
