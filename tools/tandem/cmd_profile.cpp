// `tandem profile (--soc NAME | --devices LIST) (-m MODEL | --model-preset NAME) -o costdb.json`:
// the offline profiler over the model's splittable shapes x standard lengths x ratios, against a
// SoC model or this machine's real devices (wall clock; --soc-out also writes this machine as a
// SoC description for the simulator).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include "core/file_io.h"
#include "devices/registry.h"
#include "planner/device_profiler.h"
#include "runtime/device_roles.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/planner_options.h"
#include "tools/tandem/progress_bar.h"
#include "tools/tandem/session_factory.h"

namespace tandem::cli {

namespace {

Status write_text(const std::string& path, const std::string& text, const std::string& what) {
  return write_file_atomically(path, text, "the " + what);
}

// handoff: the devices (or units) the sync costs were measured between, or why none was.
void print_summary(const planner::CostDb& db, size_t shapes, const std::string& where, const std::string& out, const std::string& handoff,
                   bool measured) {
  std::printf("profiled %zu points of %zu shapes on %s in %.1f s -> %s\n", db.points.size(), shapes, where.c_str(), db.profile_seconds,
              out.c_str());
  if (measured) {
    std::printf("sync per handoff (%s): fast %.1f us, blocking %.1f us; host copies %.1f GB/s\n", handoff.c_str(), db.sync_fast_s * 1e6,
                db.sync_blocking_s * 1e6, db.copy_bytes_per_s / 1e9);
  } else {
    std::printf("sync: %s; host copies %.1f GB/s\n", handoff.c_str(), db.copy_bytes_per_s / 1e9);
  }
}

// "cpu,opencl,npu" -> the names, in order; none empty or twice.
Result<std::vector<std::string>> device_list(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty()) return InvalidArgument("--devices: '" + text + "' has an empty name (a list such as cpu,opencl,npu)");
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return InvalidArgument("--devices: '" + text + "' names '" + name + "' twice");
    }
    names.push_back(name);
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

}  // namespace

Command add_profile(CLI::App& app) {
  struct Opts {
    ShapeSource shapes;
    std::string soc, devices, out, soc_out, standard_lengths = "32,64,128,256,512,1024";
    int reps = 3;
    int threads = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("profile", "Profile a model's matmul shapes on a modeled SoC or this machine's devices into a cost DB (JSON)");
  auto* soc = sub->add_option("--soc", o->soc, "SoC description in data/soc (sd8gen3, sd8elite, host)");
  auto* dev = sub->add_option("--devices", o->devices, "this machine's devices, any set (cpu, opencl,npu, cpu,opencl,npu, ...): wall clock, needs -m");
  soc->excludes(dev);
  o->shapes.add_to(sub);
  sub->add_option("--standard-lengths", o->standard_lengths, "NPU static sequence lengths")->capture_default_str();
  sub->add_option("--reps", o->reps, "timed runs per point on real devices (the fastest counts), 1..1000")->transform(integer_in(1, 1000))->capture_default_str();
  sub->add_option("-t,--threads", o->threads, "threads for the devices, 0..1024 (0: all cores)")->transform(integer_in(0, 1024));
  sub->add_option("--soc-out", o->soc_out, "with --devices: also write this machine as a SoC description (e.g. data/soc/host.json)");
  sub->add_option("-o,--output", o->out, "cost DB to write")->required();
  return {sub, [o]() -> Status {
            if (o->soc.empty() == o->devices.empty()) return InvalidArgument("profile: give --soc NAME or --devices LIST");
            if (!o->soc_out.empty() && o->devices.empty()) return InvalidArgument("--soc-out: needs --devices (it describes this machine)");
            TANDEM_ASSIGN_OR_RETURN(PartitionOptions part, partition_options("hybrid", 0.5, o->standard_lengths));
            TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const Model> model, o->shapes.load());
            planner::ProfileSpace space;
            space.shapes = planner::splittable_shapes(*model);
            space.standard_lengths = part.standard_lengths;
            ProgressBar bar("profile");
            if (!o->soc.empty()) {
              TANDEM_ASSIGN_OR_RETURN(sim::SocModel soc, sim::SocModel::load_named(o->soc));
              TANDEM_ASSIGN_OR_RETURN(planner::CostDb db, planner::profile_soc(soc, space, [&](double f) { bar.update(f); }));
              TANDEM_RETURN_IF_ERROR(write_text(o->out, db.to_json() + "\n", "cost DB"));
              TANDEM_ASSIGN_OR_RETURN(DeviceRoles roles, soc.roles());
              const std::string to = roles.handoff_target();
              print_summary(db, space.shapes.size(), soc.name, o->out, to.empty() ? "not measured: one unit" : roles.gpu + " -> " + to, !to.empty());
              return Status::Ok();
            }
            if (!o->shapes.preset.empty()) {
              return InvalidArgument("--devices: real devices need weights: give -m MODEL.gguf, not --model-preset (tandem gen-model makes a model of any shape)");
            }
            TANDEM_ASSIGN_OR_RETURN(std::vector<std::string> names, device_list(o->devices));
            const int threads = o->threads > 0 ? o->threads : default_threads();
            std::vector<std::unique_ptr<devices::Device>> opened;
            std::vector<devices::Device*> set;
            for (const std::string& name : names) {
              TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<devices::Device> d, devices::open_device(name, model, threads));
              set.push_back(d.get());
              opened.push_back(std::move(d));
            }
            TANDEM_ASSIGN_OR_RETURN(planner::DeviceProfile p,
                                    planner::profile_devices(set, *model, space, o->reps, [&](double f) { bar.update(f); }));
            TANDEM_RETURN_IF_ERROR(write_text(o->out, p.db.to_json() + "\n", "cost DB"));
            print_summary(p.db, space.shapes.size(), o->devices + " on " + p.host.cpu_name, o->out, p.host.handoff, p.host.handoff_measured);
            if (!o->soc_out.empty()) {
              TANDEM_ASSIGN_OR_RETURN(std::string text, planner::host_soc_json(p, "hexagon-v75", sim::SocModel::data_dir() + "/npu"));
              TANDEM_RETURN_IF_ERROR(write_text(o->soc_out, text, "SoC description"));
              std::printf("this machine as a SoC -> %s (use it with --soc host when it is data/soc/host.json)\n", o->soc_out.c_str());
            }
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
