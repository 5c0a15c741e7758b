// The compiler's front end for a model: one decoder layer in the llm dialect at a static row
// count. Every layer of a model has the same shapes, so one compiled layer serves them all (each
// layer binds its own weight packs).
#pragma once

#include <string>
#include <string_view>

#include "model/arch.h"

namespace tandem::compiler {

// `rows` tokens of `phase` ("prefill" or "decode"); weights stored as `quant` (f16, q8_0, q4_0).
// Attention reads a KV cache of the model's context length. Qwen2's q/k/v biases are not
// expressed (the NPU programs compute the products; the bias add sits with the other vector ops).
std::string decoder_layer_mlir(const ModelConfig& c, int rows, std::string_view phase, std::string_view quant);

}  // namespace tandem::compiler
