// Models for the device conformance test: the small test models (tests/model/test_models.h) by
// arch and weight type, plus a wider one whose dim (256, head_dim 64) is not the small 64.
#pragma once

#include <string>

#include "core/dtype.h"
#include "model/arch.h"

namespace tandem::devices {

// "llama-f32", "llama-q4_0", "qwen2-f32", ... (arch-type), or "wide-f16".
std::string model_key(Arch arch, DType type);
// Generates the model on first use (once per test binary) and returns its path.
std::string conformance_model_path(const std::string& key);

}  // namespace tandem::devices
