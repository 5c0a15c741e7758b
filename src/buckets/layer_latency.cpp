#include "buckets/layer_latency.h"

#include <map>
#include <memory>

#include "npu/fusion/clustering.h"

namespace tandem::buckets {

std::function<double(int64_t rows)> npu_layer_latency(const npu::TargetModel& target, const Model& model) {
  const ModelConfig config = model.config();
  const DType weights = model.layers().empty() ? DType::Q4_0 : model.layers()[0].wq.type;
  const DType packed = weights == DType::Q8_0 || weights == DType::F16 ? weights : DType::Q4_0;
  auto memo = std::make_shared<std::map<int64_t, double>>();  // the optimizer asks for each bucket many times
  return [=](int64_t rows) {
    if (auto it = memo->find(rows); it != memo->end()) return it->second;
    const auto graph = npu::fusion::decoder_layer_graph(target, config, uint64_t(rows), uint64_t(rows), packed);
    npu::fusion::ClusteringOptions o;
    o.cluster.tcm_bytes = target.tcm.bytes;
    const double s = npu::fusion::search_partition(graph, target, o).seconds;
    (*memo)[rows] = s;
    return s;
  };
}

}  // namespace tandem::buckets
