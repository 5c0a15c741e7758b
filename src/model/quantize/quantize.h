// `tandem quantize`: a GGUF model rewritten with its weights in another type or mix, as
// llama-quantize does without an importance matrix (quantize_rules.h says which tensor gets which
// type). Every tensor is dequantized to f32 first (a quantized input is requantized from its exact
// dequantization; `f32` out of a q4_k_m file is that dequantization), then quantized with ggml's
// reference quantizers (core/quant.h); a tensor already in its chosen type is copied unchanged.
// The metadata is copied in order, with general.file_type and general.quantization_version set.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "core/status.h"

namespace tandem {

struct QuantizeOptions {
  bool pure = false;  // every quantizable tensor in the base type: no mix upgrades
  // llama-quantize's overrides: output.weight kept as it is (--leave-output-tensor), or written in a
  // type of its own (--output-tensor-type); token_embd.weight in a type of its own
  // (--token-embedding-type). A row the type's block does not divide is refused, naming the tensor.
  bool leave_output_tensor = false;
  std::optional<DType> output_tensor_type;
  std::optional<DType> token_embedding_type;
  int n_threads = 2;
  std::function<void(double)> progress;  // fraction of the output's tensor bytes written
};

struct QuantizeSummary {
  uint64_t in_bytes = 0, out_bytes = 0;  // tensor data
  std::map<DType, int> tensors_by_type;  // of the output
  int converted = 0, copied = 0;         // tensors rewritten / copied as they were
};

Result<QuantizeSummary> quantize_model(const std::string& in_path, const std::string& out_path, const std::string& target,
                                       const QuantizeOptions& options);

}  // namespace tandem
