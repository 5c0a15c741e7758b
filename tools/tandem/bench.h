// `tandem bench`: llama-bench's ppN / tgN measurements, shared with the default job.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "tools/tandem/session_factory.h"

namespace tandem::cli {

struct BenchOptions {
  int n_prompt = 512;
  int n_gen = 128;
  int depth = 0;  // tokens already in the KV cache before each test (llama-bench's -d)
  int reps = 5;
  int threads = 2;
  DeviceOptions devices;  // cpu by default
  std::function<void(double)> progress;  // fraction of repetitions done
};

struct BenchResult {
  std::vector<double> pp_tok_s, tg_tok_s;  // one per measured repetition
  ExecutionReport execution;               // over every repetition, warm-up included
};

Result<BenchResult> run_bench(std::shared_ptr<const Model> model, const BenchOptions& options);
void print_bench(const Model& model, const BenchOptions& options, const BenchResult& result, bool json,
                 const std::string& model_path);

}  // namespace tandem::cli
