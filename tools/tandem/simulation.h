// One simulated request as `tandem simulate` runs it, shared with the default job: the SoC model
// loaded, the partition chosen (the solver's plan by default, solved on the fly for the SoC; a plan
// file; or a fixed strategy) and the request timed by the SimDriver. Results are predictions.
#pragma once

#include <string>

#include "model/model.h"
#include "sim/simulate.h"

namespace tandem::cli {

struct SimulationRequest {
  std::string soc = "sd8gen3";
  std::string strategy = "plan";  // "plan": the solver's, profiled on the SoC model now; else a fixed one
  std::string plan;               // a plan file (overrides strategy)
  std::string standard_lengths;  // "": the compile cache's buckets with npu_cache, else kDefaultStandardLengths
  // A compile cache (tandem compile -o) for this model and the SoC's NPU: the NPU's shapes it holds
  // are timed on the compiler's programs, in the plan's profile and in the request alike.
  std::string npu_cache, npu_power_level;
  std::string model_file;    // the GGUF the model came from (the cache's key), or
  std::string model_preset;  // the preset it was built from
  std::string sync = "fast";
  std::string trace;  // a Chrome trace of the predicted timeline, or ""
  double ratio = 0.5;
  int prompt = 256, gen = 32;
};

struct Simulation {
  std::string soc;       // the SoC's name
  std::string strategy;  // what decided the partition, in words
  sim::SimulateResult result;
};

Result<Simulation> simulate_request(const Model& model, const SimulationRequest& request);

}  // namespace tandem::cli
