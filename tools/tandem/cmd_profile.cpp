// `tandem profile --soc NAME (-m MODEL | --model-preset NAME) -o costdb.json`: the offline
// profiler over the model's splittable shapes x standard lengths x ratios, against a SoC model.
#include <cstdio>
#include <fstream>

#include "tools/tandem/planner_options.h"
#include "tools/tandem/progress_bar.h"
#include "tools/tandem/session_factory.h"

namespace tandem::cli {

Command add_profile(CLI::App& app) {
  struct Opts {
    ShapeSource shapes;
    std::string soc, out, standard_lengths = "32,64,128,256,512,1024";
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("profile", "Profile a model's matmul shapes on a modeled SoC into a cost DB (JSON)");
  sub->add_option("--soc", o->soc, "SoC description in data/soc (sd8gen3, sd8elite)")->required();
  o->shapes.add_to(sub);
  sub->add_option("--standard-lengths", o->standard_lengths, "NPU static sequence lengths")->capture_default_str();
  sub->add_option("-o,--output", o->out, "cost DB to write")->required();
  return {sub, [o]() -> Status {
            TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const Model> model, o->shapes.load());
            TANDEM_ASSIGN_OR_RETURN(sim::SocModel soc, sim::SocModel::load_named(o->soc));
            TANDEM_ASSIGN_OR_RETURN(PartitionOptions part, partition_options("hybrid", 0.5, o->standard_lengths));
            planner::ProfileSpace space;
            space.shapes = planner::splittable_shapes(*model);
            space.standard_lengths = part.standard_lengths;
            ProgressBar bar("profile");
            TANDEM_ASSIGN_OR_RETURN(planner::CostDb db, planner::profile_soc(soc, space, [&](double f) { bar.update(f); }));
            std::ofstream f(o->out);
            if (!(f << db.to_json() << "\n")) return IoError(o->out + ": cannot write the cost DB");
            std::printf("profiled %zu points of %zu shapes on %s in %.1f s -> %s\n", db.points.size(), space.shapes.size(),
                        soc.name.c_str(), db.profile_seconds, o->out.c_str());
            std::printf("sync per GPU<->NPU handoff: fast %.1f us, blocking %.1f us\n", db.sync_fast_s * 1e6, db.sync_blocking_s * 1e6);
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
