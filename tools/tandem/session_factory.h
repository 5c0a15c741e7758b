// Builds the forward pass the user asked for with --devices / --strategy / --ratio:
// cpu (the default fast path), one other device running the op graph, or GPU + NPU at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "runtime/forward.h"
#include "runtime/partition.h"
#include "tools/tandem/model_options.h"

namespace tandem::cli {

inline constexpr const char* kDefaultStandardLengths = "32,64,128,256,512,1024";

struct DeviceOptions {
  std::string devices = "cpu";
  std::string strategy = "plan";  // the solver's, from this device set's cached profile
  double ratio = 0.5;  // GPU share of weight rows (weight-centric, hybrid)
  // The NPU's static lengths; "" (the default): the compile cache's buckets with --npu-cache, else
  // kDefaultStandardLengths.
  std::string standard_lengths;
  std::string trace;  // Chrome trace output path (multi-device runs)
  std::string sync = "fast";
  std::string npu_fault;  // injected NPU faults: prepare | run | run:N (else TANDEM_NPU_FAULT)
  std::string plan;       // a solver plan (JSON); its entries override --strategy per matmul
  std::string npu_cache;  // a compile cache from `tandem compile` (--devices npu)
  std::string npu_power_level;  // the cache's variants to run ("" = "max" when compiled, else any)
  std::string cache_type_k = "f16", cache_type_v = "f16";  // the KV cache's element types (-ctk / -ctv)
  std::string model_file; // the model's path (the compile cache is keyed by its SHA-256); set by the caller

  void add_to(CLI::App* sub);
  friend DeviceOptions with_model_file(DeviceOptions d, const std::string& path) {
    d.model_file = path;
    return d;
  }
  bool several() const { return devices.find(',') != std::string::npos; }  // a strategy applies
};

// --strategy, --ratio and --standard-lengths as partition options; errors name the flag.
Result<PartitionOptions> partition_options(const std::string& strategy, double ratio, const std::string& lengths);

// sequences > 1: that many KV caches (tandem serve's slots), on a single device only.
Result<std::unique_ptr<Forward>> make_forward(std::shared_ptr<const Model> model, const DeviceOptions& d, int threads,
                                              int context, int max_batch, int sequences = 1);

}  // namespace tandem::cli
