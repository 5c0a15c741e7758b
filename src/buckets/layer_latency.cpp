#include "buckets/layer_latency.h"

#include <algorithm>

namespace tandem::buckets {

std::function<double(int64_t rows)> npu_layer_latency(const npu::TargetModel& target, const Model& model) {
  const LayerWeights& l = model.layers().at(0);
  double params = 0, io_cols = 0;
  for (const Weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
    params += double(w->rows) * double(w->cols);
    io_cols += double(w->rows + w->cols);
  }
  const double dim = double(l.wq.cols);
  const double weight_bytes = params * 18.0 / 32.0;  // q4_0: 16 bytes of nibbles + a 2-byte scale per 32
  const double peak = target.peak_fp16_flops(), bw = target.dma_bytes_per_s();
  const int64_t tile = target.matrix.tile_dim;
  return [=](int64_t rows) {
    const double padded = double((rows + tile - 1) / tile * tile);
    const double flops = 2.0 * padded * params + 2.0 * double(rows) * double(rows) * dim;
    const double bytes = weight_bytes + 2.0 * padded * io_cols;
    return std::max(flops / peak, bytes / bw);
  };
}

}  // namespace tandem::buckets
