// The compiler's front end for a model: one decoder layer in the llm dialect at a static row
// count, built with MLIR's OpBuilder from the same op list every device runs
// (graph::build_forward), so the compiler sees exactly the decoder the runtime executes: its
// norms and their eps, biases, rope style and base, head counts, KV appends and attention. Every
// layer of a model has the same shapes, so one compiled layer serves them all (each layer binds
// its own weight packs).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "model/arch.h"

namespace tandem::compiler {

// The layer as llm-dialect text (for reading, tandem-opt and tests): `rows` tokens of `phase`
// ("prefill" or "decode"), weights stored as `quant` (f16, q8_0, q4_0); attention reads a KV
// cache of the model's context length (4096 when it has none).
Result<std::string> decoder_layer_mlir(const ModelConfig& c, int rows, std::string_view phase, std::string_view quant);

}  // namespace tandem::compiler
