// A model's weights as one read-only OpenCL buffer over the mapped GGUF (zero copy on unified
// memory): every weight is addressed as that buffer plus its byte offset.
#pragma once

#include "devices/opencl/cl_ops.h"
#include "model/model.h"

namespace tandem::opencl {

class ModelWeights {
 public:
  static Result<ModelWeights> map(Runtime& rt, const Model& model);
  WeightRef ref(const Weight& w) const;
  BufRef at(const uint8_t* p) const { return BufRef{buf_.mem(), size_t(p - base_)}; }
  bool zero_copy() const { return buf_.zero_copy(); }

 private:
  Buffer buf_;  // the span of the mapped file that holds every weight
  const uint8_t* base_ = nullptr;
};

}  // namespace tandem::opencl
