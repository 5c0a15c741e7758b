// The latency the bucket optimizer minimizes: one decoder layer of a model at b rows on an NPU
// target, priced by the compiler's own analytical model (npu/fusion: the layer's operator graph
// on the shared cost model, partitioned by the fusion-cluster search within the target's TCM).
// A bucket of b rows runs the layer padded to b rows attending over b tokens.
#pragma once

#include <functional>

#include "model/model.h"
#include "npu/target_model.h"

namespace tandem::buckets {

// Seconds for one layer at `rows` tokens (rows >= 1).
std::function<double(int64_t rows)> npu_layer_latency(const npu::TargetModel& target, const Model& model);

}  // namespace tandem::buckets
