// `tandem report heteroinfer`: HeteroInfer's evaluation replayed on a modeled SoC. Every number
// is a prediction of the simulator (SimDriver over the SoC description, the runtime's own
// partitioner and the solver's plans) set beside the paper's (report/heteroinfer_paper.h) with
// the ratio. Sections: calibration residuals, prefill vs length, dynamic lengths, decode, fast
// sync, the prefill ablation chain, energy, which inputs drive each headline result (the change
// of each result when one SoC input or profile point moves by 10%), prefill beside a game on the
// GPU, and end-to-end workloads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace tandem::report {

struct HeteroInferReportOptions {
  std::string soc = "sd8gen3";
  std::string main_model = "llama3-8b";  // prefill, dynamic lengths, sync, ablation, energy
  std::vector<std::string> decode_models = {"llama3-8b", "llama3.2-3b", "internlm2-1.8b"};
  std::vector<int> prefill_lengths = {32, 64, 128, 256, 512, 1024};
  std::vector<int> dynamic_lengths = {135, 300, 525, 1000};
  int ablation_length = 320;
  int decode_prompt = 256;
  int decode_gen = 32;
  bool sensitivity = true;
  // A game beside prefill (Fig 19): the paper does not state its load; these are assumptions the
  // report prints: 60 FPS, the GPU busy 40% of each frame, 3 GB/s of DRAM traffic.
  double game_fps = 60, game_gpu_occupancy = 0.4, game_dram_bytes_per_s = 3e9;
  // End-to-end workloads (Fig 12): each a mean prompt and output length (the paper's), drawn as
  // log-normal lengths with this coefficient of variation (an assumption: the paper gives means
  // only) at the 1/6, 3/6 and 5/6 quantiles, one request each; prompts past prefill_chunk tokens
  // are prefilled in chunks of it, as an engine with that batch size would.
  struct Workload {
    std::string name;
    int prompt = 0, gen = 0;
  };
  std::vector<Workload> workloads = {{"BELLE multi-turn", 54, 374}, {"GSM8K", 296, 340}, {"LongBench-TriviaQA", 1787, 5}};
  double workload_cv = 0.5;
  int prefill_chunk = 1024;
  // Fraction done and what runs now, for a progress bar.
  std::function<void(double, const std::string&)> progress;
};

struct ReportFile {
  std::string name;  // relative to the output folder
  std::string text;
};

struct HeteroInferReport {
  std::string markdown;           // report.md
  nlohmann::json json;            // report.json: every number of the tables
  std::vector<ReportFile> files;  // report.md, report.json and the SVG plots
  std::string headline_table;     // the Markdown table of the headline results (ours vs paper)
};

Result<HeteroInferReport> build_heteroinfer_report(const HeteroInferReportOptions& options);
// Creates `dir` if needed; an error names the file that could not be written.
Status write_report_files(const std::vector<ReportFile>& files, const std::string& dir);

}  // namespace tandem::report
