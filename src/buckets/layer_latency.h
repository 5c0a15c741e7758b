// The latency proxy the bucket optimizer minimizes: one decoder layer of a model run at b rows on
// an NPU target, by the roofline of the target's own numbers (peak matrix FLOPS, DMA bandwidth):
// the matmuls at b rows padded to the array's tile, plus causal attention (2 b^2 dim FLOPs), against
// the W4A16 weights and fp16 activations it moves.
#pragma once

#include <functional>

#include "model/model.h"
#include "npu/target_model.h"

namespace tandem::buckets {

// Seconds for one layer at `rows` tokens (rows >= 1).
std::function<double(int64_t rows)> npu_layer_latency(const npu::TargetModel& target, const Model& model);

}  // namespace tandem::buckets
