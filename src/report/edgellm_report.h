// `tandem compile --report`: EdgeLLM-MLIR's evaluation on tandem's own compiler cost model (the
// fusion-cluster model of npu/fusion over the shared NPU cost model, the bucket optimizer),
// swept over 4, 8, 16 and 32 MB of TCM, beside the paper's numbers. Markdown, JSON and SVG.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "report/heteroinfer_report.h"  // ReportFile, write_report_files

namespace tandem::report {

struct EdgeLlmReportOptions {
  std::string model_preset = "llama3.2-1b";
  std::string target_path;                      // "" = data/npu/hexagon-v75.json
  std::vector<uint64_t> tcm_mb = {4, 8, 16, 32};
  uint64_t table_tcm_mb = 16;                   // the TCM of the paper's per-layer table
  int rows = 512;                               // prefill rows of the per-layer table (over as many tokens)
  std::string lengths = "heavy-tail";           // for the bucket table and the ablations
  int bucket_count = 6;
};

struct EdgeLlmReport {
  std::string markdown;
  std::string summary;  // the tables for stdout
  std::vector<ReportFile> files;  // report.md, report.json, fusion_latency.svg, fusion_traffic.svg, ablation.svg
};

Result<EdgeLlmReport> build_edgellm_report(const EdgeLlmReportOptions& options);

}  // namespace tandem::report
