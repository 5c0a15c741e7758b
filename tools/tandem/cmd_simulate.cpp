// `tandem simulate`: one request on a modeled SoC (data/soc/*.json), through the same partitioner
// and TaskGraph as a real run, timed by the SimDriver. Results are predictions.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "model/gen_model.h"
#include "planner/perf_model.h"
#include "planner/plan.h"
#include "planner/profiler.h"
#include "runtime/device_roles.h"
#include "sim/simulate.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/session_factory.h"

namespace tandem::cli {

Command add_simulate(CLI::App& app) {
  struct Opts {
    std::string soc = "sd8gen3", preset, model;
    std::string strategy = "plan", standard_lengths = "32,64,128,256,512,1024", sync = "fast", trace, plan;
    double ratio = 0.5;
    int prompt = 256, gen = 32;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("simulate", "Predict one request on a modeled phone SoC (prefill and decode tok/s, GB/s, energy)");
  sub->add_option("--soc", o->soc, "SoC description in data/soc (sd8gen3, sd8elite, host)")->capture_default_str();
  auto* p = sub->add_option("--model-preset", o->preset, "model shape without weights: llama3-8b llama3.2-3b internlm2-1.8b llama2-7b ...");
  auto* m = sub->add_option("-m,--model", o->model, "GGUF file whose shapes to simulate");
  p->excludes(m);
  sub->add_option("--prompt", o->prompt, "prompt tokens (one prefill)")->capture_default_str();
  sub->add_option("--gen", o->gen, "generated tokens (decode steps)")->capture_default_str();
  sub->add_option("--strategy", o->strategy,
                  "plan (the solver's, profiled on the SoC model and solved now) or a fixed partition strategy (as for run/bench)")
      ->capture_default_str();
  sub->add_option("--ratio", o->ratio, "GPU share of weight rows for weight-centric and hybrid")->capture_default_str();
  sub->add_option("--standard-lengths", o->standard_lengths, "NPU static sequence lengths")->capture_default_str();
  sub->add_option("--sync", o->sync, "fast | blocking")->capture_default_str();
  sub->add_option("--trace", o->trace, "write the predicted timeline as a Chrome trace (Perfetto)");
  sub->add_option("--plan", o->plan, "a plan from `tandem plan -o`: each matmul takes its entry for the actual length");
  sub->add_flag("--json", o->json, "print one JSON object");
  return {sub, [o]() -> Status {
            if (o->preset.empty() && o->model.empty()) return InvalidArgument("simulate: give --model-preset NAME or -m MODEL.gguf");
            std::shared_ptr<const Model> model;
            if (!o->preset.empty()) {
              TANDEM_ASSIGN_OR_RETURN(model, shape_only_preset(o->preset, DType::Q4_0));
            } else {
              TANDEM_ASSIGN_OR_RETURN(model, Model::load(o->model));
            }
            TANDEM_ASSIGN_OR_RETURN(sim::SocModel soc, sim::SocModel::load_named(o->soc));
            sim::SimulateOptions so;
            // The solver by default: the SoC model is profiled over the model's splittable matmuls and
            // every matmul takes the plan's choice for its length (what `profile` + `plan` + `--plan` do).
            const bool solve_now = o->strategy == "plan" && o->plan.empty();
            TANDEM_ASSIGN_OR_RETURN(so.partition, partition_options(o->strategy == "plan" ? "hybrid" : o->strategy, o->ratio,
                                                                    o->standard_lengths));
            // The SoC's units take the roles (a SoC without an npu runs every matmul on its GPU's role).
            TANDEM_ASSIGN_OR_RETURN(DeviceRoles roles, soc.roles());
            roles.apply_to(so.partition);
            TANDEM_ASSIGN_OR_RETURN(so.sync, sync_mode_from_name(o->sync));
            std::string strategy_label = o->strategy;
            if (!o->plan.empty()) {
              TANDEM_ASSIGN_OR_RETURN(planner::Plan plan, planner::Plan::load(o->plan));
              so.partition.decider = planner::decider_from_plan(std::make_shared<const planner::Plan>(std::move(plan)));
              strategy_label = "plan " + o->plan;
            } else if (solve_now && roles.npu.empty()) {
              so.partition.strategy = Strategy::kGpuOnly;  // nothing to split across: one unit runs every matmul
              strategy_label = "gpu-only (no npu unit)";
            } else if (solve_now) {
              planner::ProfileSpace space;
              space.shapes = planner::splittable_shapes(*model);
              space.standard_lengths = so.partition.standard_lengths;
              TANDEM_ASSIGN_OR_RETURN(planner::CostDb cost, planner::profile_soc(soc, space));
              const planner::PerfModels perf(cost);
              const int64_t max_len = std::max<int64_t>(o->prompt, *std::max_element(space.standard_lengths.begin(), space.standard_lengths.end()));
              TANDEM_ASSIGN_OR_RETURN(planner::Plan plan, planner::build_plan(perf, cost, space.shapes, max_len, so.sync));
              so.partition.decider = planner::decider_from_plan(std::make_shared<const planner::Plan>(std::move(plan)));
              strategy_label = "plan (solved for " + soc.name + ")";
            }
            so.prompt = o->prompt;
            so.gen = o->gen;
            so.trace = o->trace;
            TANDEM_ASSIGN_OR_RETURN(sim::SimulateResult r, sim::simulate(*model, soc, so));
            const std::string model_name = o->preset.empty() ? o->model : o->preset;
            if (o->json) {
              nlohmann::json busy = nlohmann::json::object();
              for (const auto& [u, s] : r.busy_s) busy[u] = s;
              nlohmann::json j = {{"soc", soc.name},
                                  {"model", model_name},
                                  {"strategy", strategy_label},
                                  {"sync", o->sync},
                                  {"prompt", o->prompt},
                                  {"gen", o->gen},
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
                                  {"prediction", true}};
              std::cout << j.dump() << "\n";
              return Status::Ok();
            }
            std::printf("predicted on %s (a model of the SoC; see data/soc/%s.json for every number's source)\n",
                        soc.name.c_str(), soc.name.c_str());
            std::printf("| %-16s | %-18s | %-8s | %6s | %5s | %12s | %11s | %10s | %9s |\n", "model", "strategy", "sync",
                        "prompt", "gen", "prefill t/s", "decode t/s", "decode GB/s", "energy J");
            std::printf("| %-16s | %-18s | %-8s | %6s | %5s | %12s | %11s | %10s | %9s |\n", "----------------",
                        "------------------", "--------", "-----:", "----:", "-----------:", "----------:", "---------:",
                        "--------:");
            std::printf("| %-16s | %-18s | %-8s | %6d | %5d | %12.2f | %11.2f | %10.2f | %9.3f |\n", model_name.c_str(),
                        strategy_label.c_str(), o->sync.c_str(), o->prompt, o->gen, r.prefill_tok_s, r.decode_tok_s,
                        r.decode_gb_s, r.energy_j);
            std::printf("prefill %.1f ms, decode %.1f ms; NPU graphs %llu (built offline %.1f ms, at run time %.1f ms); "
                        "%llu handoffs costing %.1f ms\n",
                        r.prefill_s * 1e3, r.decode_s * 1e3, (unsigned long long)r.npu_graphs, r.offline_prepare_s * 1e3,
                        r.runtime_prepare_s * 1e3, (unsigned long long)r.handoffs, r.handoff_s * 1e3);
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
