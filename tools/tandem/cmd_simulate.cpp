// `tandem simulate`: one request on a modeled SoC (data/soc/*.json), through the same partitioner
// and TaskGraph as a real run, timed by the SimDriver. Results are predictions.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "model/gen_model.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/session_factory.h"
#include "tools/tandem/simulation.h"

namespace tandem::cli {

Command add_simulate(CLI::App& app) {
  struct Opts {
    std::string preset, model;
    SimulationRequest q;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("simulate", "Predict one request on a modeled phone SoC (prefill and decode tok/s, GB/s, energy)");
  sub->add_option("--soc", o->q.soc, "SoC description in data/soc (sd8gen3, sd8elite, host)")->capture_default_str();
  auto* p = sub->add_option("--model-preset", o->preset, "model shape without weights: llama3-8b llama3.2-3b internlm2-1.8b llama2-7b ...");
  auto* m = sub->add_option("-m,--model", o->model, "GGUF file whose shapes to simulate");
  p->excludes(m);
  sub->add_option("--prompt", o->q.prompt, "prompt tokens (one prefill), 0..1048576")->transform(integer_in(0, 1 << 20))->capture_default_str();
  sub->add_option("--gen", o->q.gen, "generated tokens (decode steps), 0..1048576")->transform(integer_in(0, 1 << 20))->capture_default_str();
  sub->add_option("--strategy", o->q.strategy,
                  "plan (the solver's, profiled on the SoC model and solved now) or a fixed partition strategy (as for run/bench)")
      ->capture_default_str();
  sub->add_option("--ratio", o->q.ratio, "GPU share of weight rows for weight-centric and hybrid, 0..1")->transform(real_in({0, 1}))->capture_default_str();
  sub->add_option("--standard-lengths", o->q.standard_lengths,
                  std::string("NPU static sequence lengths (default: the compile cache's buckets with --npu-cache, else ") +
                      kDefaultStandardLengths + ")");
  sub->add_option("--npu-cache", o->q.npu_cache,
                  "a compile cache (tandem compile -o) of this model for the SoC's NPU: the NPU's shapes it holds are "
                  "timed on the compiler's programs instead of the operator library's");
  sub->add_option("--npu-power-level", o->q.npu_power_level, "the cache's programs of this power level (default max)");
  sub->add_option("--sync", o->q.sync,
                  "fast | blocking | copy-finish (blocking, plus clFinish after every GPU kernel and host copies of tensors "
                  "crossing units: the paper's fast-sync baseline)")
      ->capture_default_str();
  sub->add_option("--trace", o->q.trace, "write the predicted timeline as a Chrome trace (Perfetto)");
  sub->add_option("--plan", o->q.plan, "a plan from `tandem plan -o`: each matmul takes its entry for the actual length");
  sub->add_flag("--json", o->json, "print one JSON object");
  return {sub, [o]() -> Status {
            if (o->preset.empty() && o->model.empty()) return InvalidArgument("simulate: give --model-preset NAME or -m MODEL.gguf");
            std::shared_ptr<const Model> model;
            if (!o->preset.empty()) {
              TANDEM_ASSIGN_OR_RETURN(model, shape_only_preset(o->preset, DType::Q4_0));
            } else {
              TANDEM_ASSIGN_OR_RETURN(model, Model::load(o->model));
            }
            SimulationRequest q = o->q;
            q.model_file = o->model;
            q.model_preset = o->preset;
            TANDEM_ASSIGN_OR_RETURN(Simulation s, simulate_request(*model, q));
            const sim::SimulateResult& r = s.result;
            const std::string& strategy_label = s.strategy;
            const std::string model_name = o->preset.empty() ? o->model : o->preset;
            if (o->json) {
              nlohmann::json busy = nlohmann::json::object();
              for (const auto& [unit, seconds] : r.busy_s) busy[unit] = seconds;
              nlohmann::json j = {{"soc", s.soc},
                                  {"model", model_name},
                                  {"strategy", strategy_label},
                                  {"sync", o->q.sync},
                                  {"prompt", o->q.prompt},
                                  {"gen", o->q.gen},
                                  {"prefill_tok_s", r.prefill_tok_s},
                                  {"decode_tok_s", r.decode_tok_s},
                                  {"decode_gb_s", r.decode_gb_s},
                                  {"energy_j", r.energy_j},
                                  {"prefill_s", r.prefill_s},
                                  {"decode_s", r.decode_s},
                                  {"prefill_energy_j", r.prefill_energy_j},
                                  {"decode_energy_j", r.decode_energy_j},
                                  {"offline_prepare_s", r.offline_prepare_s},
                                  {"runtime_prepare_s", r.runtime_prepare_s},
                                  {"npu_graphs", r.npu_graphs},
                                  {"tasks", r.tasks},
                                  {"handoffs", r.handoffs},
                                  {"handoff_s", r.handoff_s},
                                  {"fast_fallbacks", r.fast_fallbacks},
                                  {"busy_s", busy},
                                  {"npu_cache", o->q.npu_cache},
                                  {"npu_shapes_compiled", r.npu_shapes_compiled},
                                  {"npu_shapes_library", r.npu_shapes_library},
                                  {"first_not_compiled", r.first_not_compiled},
                                  {"prediction", true}};
              std::cout << j.dump() << "\n";
              return Status::Ok();
            }
            std::printf("predicted on %s (a model of the SoC; see data/soc/%s.json for every number's source)\n",
                        s.soc.c_str(), s.soc.c_str());
            std::printf("| %-16s | %-18s | %-8s | %6s | %5s | %12s | %11s | %10s | %9s |\n", "model", "strategy", "sync",
                        "prompt", "gen", "prefill t/s", "decode t/s", "decode GB/s", "energy J");
            std::printf("| %-16s | %-18s | %-8s | %6s | %5s | %12s | %11s | %10s | %9s |\n", "----------------",
                        "------------------", "--------", "-----:", "----:", "-----------:", "----------:", "---------:",
                        "--------:");
            std::printf("| %-16s | %-18s | %-8s | %6d | %5d | %12.2f | %11.2f | %10.2f | %9.3f |\n", model_name.c_str(),
                        strategy_label.c_str(), o->q.sync.c_str(), o->q.prompt, o->q.gen, r.prefill_tok_s, r.decode_tok_s,
                        r.decode_gb_s, r.energy_j);
            std::printf("prefill %.1f ms, decode %.1f ms; NPU graphs %llu (built offline %.1f ms, at run time %.1f ms); "
                        "%llu handoffs costing %.1f ms\n",
                        r.prefill_s * 1e3, r.decode_s * 1e3, (unsigned long long)r.npu_graphs, r.offline_prepare_s * 1e3,
                        r.runtime_prepare_s * 1e3, (unsigned long long)r.handoffs, r.handoff_s * 1e3);
            if (!o->q.npu_cache.empty()) {
              std::printf("npu programs timed: %llu shapes on the compiler's programs from %s, %llu on the operator library's%s%s\n",
                          (unsigned long long)r.npu_shapes_compiled, o->q.npu_cache.c_str(),
                          (unsigned long long)r.npu_shapes_library, r.first_not_compiled.empty() ? "" : "; first: ",
                          r.first_not_compiled.c_str());
            }
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
