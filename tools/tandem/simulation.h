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
  std::string standard_lengths = "32,64,128,256,512,1024";
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
