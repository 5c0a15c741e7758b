// `tandem plan`: the solver. For one matmul (`--soc NAME --op OUTxIN --seq N`) or for every
// splittable matmul of a model and every length up to --max-len (`-o plan.json`), each decision
// printed with the alternatives it beat.
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "planner/plan.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/planner_options.h"
#include "tools/tandem/progress_bar.h"
#include "tools/tandem/session_factory.h"

namespace tandem::cli {

namespace {

Result<std::pair<int64_t, int64_t>> parse_op(const std::string& text) {
  const size_t x = text.find('x');
  auto number = [](const std::string& s) -> int64_t {
    if (s.empty() || s.size() > 8 || s.find_first_not_of("0123456789") != std::string::npos) return 0;
    return std::stoll(s);
  };
  const int64_t out = x == std::string::npos ? 0 : number(text.substr(0, x));
  const int64_t in = x == std::string::npos ? 0 : number(text.substr(x + 1));
  if (out < 1 || in < 1) return InvalidArgument("--op: '" + text + "' is not OUTxIN (weight rows x columns, e.g. 4096x14336)");
  return std::pair{out, in};
}

}  // namespace

Command add_plan(CLI::App& app) {
  struct Opts {
    ShapeSource shapes;
    std::string soc, costdb, op, out, sync = "fast", standard_lengths = "32,64,128,256,512,1024";
    int64_t seq = 0, max_len = 1024;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("plan", "Choose a partition strategy per matmul and length (the solver)");
  auto* soc = sub->add_option("--soc", o->soc, "profile this SoC model first (sd8gen3, sd8elite)");
  auto* db = sub->add_option("--costdb", o->costdb, "a cost DB written by `tandem profile`");
  soc->excludes(db);
  o->shapes.add_to(sub);
  sub->add_option("--op", o->op, "one matmul: weight OUTxIN (with --seq)");
  sub->add_option("--seq", o->seq, "activation length N for --op, 1..1048576")->transform(integer_in(1, 1 << 20));
  sub->add_option("--max-len", o->max_len, "plan lengths 1..this (this in 1..1048576)")->transform(integer_in(1, 1 << 20))->capture_default_str();
  sub->add_option("--sync", o->sync, "fast | blocking: the handoff cost the solver charges")->capture_default_str();
  sub->add_option("--standard-lengths", o->standard_lengths, "NPU static lengths (with --soc)")->capture_default_str();
  sub->add_option("-o,--output", o->out, "write the plan as JSON");
  sub->add_flag("--json", o->json, "print JSON");
  return {sub, [o]() -> Status {
            TANDEM_ASSIGN_OR_RETURN(SyncMode sync, sync_mode_from_name(o->sync));
            if (o->soc.empty() && o->costdb.empty()) return InvalidArgument("plan: give --soc NAME or --costdb FILE");
            std::vector<planner::MatmulShape> shapes;
            if (!o->op.empty()) {
              if (o->seq < 1) return InvalidArgument("--seq: " + std::to_string(o->seq) + " must be >= 1 with --op");
              TANDEM_ASSIGN_OR_RETURN(auto oi, parse_op(o->op));
              shapes.push_back(planner::MatmulShape{o->op, oi.first, oi.second});
            } else {
              if (!o->shapes.given()) return InvalidArgument("plan: give --op OUTxIN --seq N, or -m MODEL / --model-preset NAME");
              TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const Model> model, o->shapes.load());
              shapes = planner::splittable_shapes(*model);
            }
            planner::CostDb cost;
            if (!o->costdb.empty()) {
              TANDEM_ASSIGN_OR_RETURN(cost, planner::CostDb::load(o->costdb));
            } else {
              TANDEM_ASSIGN_OR_RETURN(sim::SocModel model_soc, sim::SocModel::load_named(o->soc));
              TANDEM_ASSIGN_OR_RETURN(PartitionOptions part, partition_options("hybrid", 0.5, o->standard_lengths));
              planner::ProfileSpace space;
              space.shapes = shapes;
              space.standard_lengths = part.standard_lengths;
              ProgressBar bar("profile");
              TANDEM_ASSIGN_OR_RETURN(cost, planner::profile_soc(model_soc, space, [&](double f) { bar.update(f); }));
            }
            const planner::PerfModels perf(cost);
            if (!o->op.empty()) {
              TANDEM_ASSIGN_OR_RETURN(planner::Decision d, planner::decide(perf, cost, shapes[0].out, shapes[0].in, o->seq, sync));
              if (o->json) {
                nlohmann::json alts = nlohmann::json::array();
                for (const planner::Alternative& a : d.alternatives) {
                  alts.push_back({{"strategy", strategy_name(a.strategy)}, {"gpu_share", a.gpu_share}, {"seconds", a.seconds},
                                  {"detail", a.detail}});
                }
                nlohmann::json j = {{"op", o->op}, {"seq", o->seq}, {"source", cost.source}, {"sync", o->sync},
                                    {"strategy", strategy_name(d.best.strategy)}, {"seconds", d.best.seconds},
                                    {"why", d.explain()}, {"alternatives", alts}};
                if (d.best.strategy == Strategy::kWeightCentric || d.best.strategy == Strategy::kHybrid) j["gpu_share"] = d.best.gpu_share;
                std::cout << j.dump() << "\n";
                return Status::Ok();
              }
              std::printf("weight %s, activation %lld rows on %s (%s sync): %s\n", o->op.c_str(), (long long)o->seq,
                          cost.source.c_str(), o->sync.c_str(), d.explain().c_str());
              std::printf("| %-18s | %9s | %12s | %s\n", "strategy", "gpu share", "predicted", "how");
              std::printf("| %-18s | %9s | %12s | %s\n", "------------------", "--------:", "-----------:", "---");
              for (const planner::Alternative& a : d.alternatives) {
                std::printf("| %-18s | %9.2f | %9.3f ms | %s\n", strategy_name(a.strategy), a.gpu_share, a.seconds * 1e3, a.detail.c_str());
              }
              return Status::Ok();
            }
            TANDEM_ASSIGN_OR_RETURN(planner::Plan plan, planner::build_plan(perf, cost, shapes, o->max_len, sync));
            if (!o->out.empty()) {
              TANDEM_RETURN_IF_ERROR(write_file_atomically(o->out, plan.to_json() + "\n", "the plan"));
            }
            if (o->json) {
              std::cout << plan.to_json() << "\n";
            } else {
              std::printf("plan for %s from %s (%s sync)%s\n", o->shapes.name().c_str(), cost.source.c_str(), o->sync.c_str(),
                          o->out.empty() ? "" : (" -> " + o->out).c_str());
              std::printf("%s", plan.table().c_str());
            }
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
