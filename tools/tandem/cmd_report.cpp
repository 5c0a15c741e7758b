// `tandem report heteroinfer -o DIR`: HeteroInfer's evaluation replayed on a modeled SoC, each
// prediction beside the paper's number (report/heteroinfer_report.h). Prints the headline table.
#include <chrono>
#include <cstdio>

#include "report/heteroinfer_report.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/progress_bar.h"

namespace tandem::cli {

namespace {

Result<std::vector<int>> parse_lengths(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty() || item.size() > 5 || item.find_first_not_of("0123456789") != std::string::npos || std::stoi(item) < 1 ||
        std::stoi(item) > 1024) {
      return InvalidArgument(flag + ": '" + item + "' is not a length in 1..1024 (give a comma-separated list)");
    }
    out.push_back(std::stoi(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

Command add_report(CLI::App& app) {
  struct Opts {
    std::string which, out, soc = "sd8gen3", prefill = "32,64,128,256,512,1024", dynamic = "135,300,525,1000";
    std::string models = "llama3-8b,llama3.2-3b,internlm2-1.8b";
    int gen = 32;
    bool no_sensitivity = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("report", "Reproduce a paper's evaluation on a modeled SoC: Markdown, SVG plots, JSON");
  sub->add_option("which", o->which, "the paper: heteroinfer")->required();
  sub->add_option("-o,--output", o->out, "folder for report.md, report.json and the plots")->required();
  sub->add_option("--soc", o->soc, "SoC model")->capture_default_str();
  sub->add_option("--prefill-lengths", o->prefill, "prompt lengths of the prefill sweep")->capture_default_str();
  sub->add_option("--dynamic-lengths", o->dynamic, "non-standard lengths of the dynamic-length comparison")->capture_default_str();
  sub->add_option("--models", o->models, "decode models (presets; the first is the main model)")->capture_default_str();
  sub->add_option("--gen", o->gen, "decode tokens, 1..100000")->transform(integer_in(1, 100000))->capture_default_str();
  sub->add_flag("--no-sensitivity", o->no_sensitivity, "skip the which-inputs-drive-it reruns");
  return {sub, [o]() -> Status {
            if (o->which != "heteroinfer") return InvalidArgument("report: '" + o->which + "' is not a known report (heteroinfer)");
            if (o->gen < 1 || o->gen > 1024) return InvalidArgument("--gen: " + std::to_string(o->gen) + " must be in 1..1024");
            report::HeteroInferReportOptions ro;
            ro.soc = o->soc;
            TANDEM_ASSIGN_OR_RETURN(ro.prefill_lengths, parse_lengths(o->prefill, "--prefill-lengths"));
            TANDEM_ASSIGN_OR_RETURN(ro.dynamic_lengths, parse_lengths(o->dynamic, "--dynamic-lengths"));
            ro.decode_models.clear();
            size_t start = 0;
            while (true) {
              const size_t comma = o->models.find(',', start);
              ro.decode_models.push_back(o->models.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
              if (comma == std::string::npos) break;
              start = comma + 1;
            }
            ro.main_model = ro.decode_models.front();
            ro.decode_gen = o->gen;
            ro.sensitivity = !o->no_sensitivity;
            ProgressBar bar("report");
            ro.progress = [&](double fr, const std::string&) { bar.update(fr); };
            const auto t0 = std::chrono::steady_clock::now();
            TANDEM_ASSIGN_OR_RETURN(report::HeteroInferReport rep, report::build_heteroinfer_report(ro));
            TANDEM_RETURN_IF_ERROR(report::write_report_files(rep.files, o->out));
            const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::printf("HeteroInfer on a modeled %s (predictions; paper = SEEDS.md section A)\n%s\n", o->soc.c_str(), rep.headline_table.c_str());
            std::printf("wrote %zu files to %s (report.md, report.json, plots) in %.1f s\n", rep.files.size(), o->out.c_str(), secs);
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
