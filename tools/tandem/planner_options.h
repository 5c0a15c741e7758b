// What `tandem profile` and `tandem plan` share: which model's shapes (a GGUF or a preset without
// weights) and which SoC to profile.
#pragma once

#include <memory>
#include <string>

#include "model/gen_model.h"
#include "model/model.h"
#include "planner/profiler.h"
#include "sim/soc_model.h"
#include "tools/tandem/commands.h"

namespace tandem::cli {

struct ShapeSource {
  std::string model, preset;
  void add_to(CLI::App* sub) {
    auto* m = sub->add_option("-m,--model", model, "GGUF file whose shapes to use");
    auto* p = sub->add_option("--model-preset", preset, "model shape without weights (llama3-8b, llama3.2-3b, internlm2-1.8b, llama2-7b, ...)");
    m->excludes(p);
  }
  bool given() const { return !model.empty() || !preset.empty(); }
  Result<std::shared_ptr<const Model>> load() const {
    if (!preset.empty()) {
      TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Model> m, shape_only_preset(preset, DType::Q4_0));
      return std::shared_ptr<const Model>(std::move(m));
    }
    if (model.empty()) return InvalidArgument("give -m MODEL.gguf or --model-preset NAME");
    TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Model> m, Model::load(model));
    return std::shared_ptr<const Model>(std::move(m));
  }
  std::string name() const { return preset.empty() ? model : preset; }
};

}  // namespace tandem::cli
