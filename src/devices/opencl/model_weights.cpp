#include "devices/opencl/model_weights.h"

namespace tandem::opencl {

Result<ModelWeights> ModelWeights::map(Runtime& rt, const Model& model) {
  const uint8_t* lo = nullptr;
  const uint8_t* hi = nullptr;
  auto span_of = [&](const Weight& w) {
    if (!w.present()) return;
    if (!lo || w.data < lo) lo = w.data;
    if (!hi || w.data + w.n_bytes() > hi) hi = w.data + w.n_bytes();
  };
  span_of(model.token_embd());
  span_of(model.output_norm());
  span_of(model.output());
  for (const LayerWeights& L : model.layers()) {
    for (const Weight* w : L.present()) span_of(*w);
  }
  if (!lo) return InvalidArgument("opencl: the model has no weights");
  ModelWeights m;
  m.base_ = lo;
  TANDEM_ASSIGN_OR_RETURN(m.buf_, rt.wrap_host(lo, size_t(hi - lo)));
  return m;
}

WeightRef ModelWeights::ref(const Weight& w) const {
  return WeightRef{w.type, at(w.data), w.rows, w.cols, w.row_bytes()};
}

}  // namespace tandem::opencl
