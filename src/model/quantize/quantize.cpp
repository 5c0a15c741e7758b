#include "model/quantize/quantize.h"

#include <cstring>
#include <memory>
#include <vector>

#include "core/quant.h"
#include "core/thread_pool.h"
#include "model/gguf/gguf.h"
#include "model/quantize/quantize_rules.h"

namespace tandem {
namespace {

// An integer key of the architecture's namespace, or `fallback` when the file lacks it.
int64_t arch_int(const gguf::GgufFile& f, const std::string& arch, const std::string& key, int64_t fallback) {
  const Result<int64_t> v = f.get_int(arch + "." + key);
  return v.ok() ? *v : fallback;
}

}  // namespace

Result<QuantizeSummary> quantize_model(const std::string& in_path, const std::string& out_path, const std::string& target_name,
                                       const QuantizeOptions& o) {
  TANDEM_ASSIGN_OR_RETURN(const QuantizeTarget target, parse_quantize_target(target_name));
  if (o.n_threads < 1 || o.n_threads > 1024) return InvalidArgument("quantize: -t " + std::to_string(o.n_threads) + " must be in 1..1024");
  if (in_path == out_path) return InvalidArgument("quantize: the output " + out_path + " is the input");
  TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<gguf::GgufFile> in, gguf::GgufFile::open(in_path));
  TANDEM_ASSIGN_OR_RETURN(const std::string arch, in->get_string("general.architecture"));
  const int64_t layers = arch_int(*in, arch, "block_count", 0);
  const int64_t heads = arch_int(*in, arch, "attention.head_count", 1);
  const int64_t kv_heads = arch_int(*in, arch, "attention.head_count_kv", heads);
  if (layers < 0 || layers > (1 << 20) || heads < 1 || kv_heads < 1)
    return InvalidArgument(in_path + ": " + arch + ".block_count / attention.head_count(_kv): " + std::to_string(layers) +
                           " / " + std::to_string(heads) + " / " + std::to_string(kv_heads) + " are out of range");

  std::vector<TensorShape> shapes;
  for (const gguf::TensorInfo& t : in->tensors()) shapes.push_back({t.name, t.dims, t.type});
  std::vector<DType> types = choose_tensor_types(shapes, target, o.pure, int(layers), int(heads / kv_heads));
  if (o.leave_output_tensor && o.output_tensor_type)
    return InvalidArgument("quantize: --leave-output-tensor and --output-tensor-type ask for two things");
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::optional<DType> wanted;
    if (shapes[i].name == "output.weight") wanted = o.leave_output_tensor ? std::optional(shapes[i].type) : o.output_tensor_type;
    if (shapes[i].name == "token_embd.weight") wanted = o.token_embedding_type;
    if (!wanted) continue;
    const uint64_t row = shapes[i].dims.empty() ? 0 : shapes[i].dims[0];
    if (row == 0 || row % dtype_traits(*wanted).block_size != 0)
      return InvalidArgument("quantize: " + shapes[i].name + ": rows of " + std::to_string(row) + " cannot be " +
                             std::string(dtype_name(*wanted)) + " (blocks of " + std::to_string(dtype_traits(*wanted).block_size) + ")");
    types[i] = *wanted;
  }

  gguf::GgufWriter w;
  w.set_alignment(in->alignment());
  for (const auto& [key, value] : in->metadata()) w.set(key, value);
  w.set("general.file_type", gguf::Value{target.file_type});
  if (is_block_quantized(target.base)) w.set("general.quantization_version", gguf::Value{uint32_t(2)});

  auto pool = std::make_shared<ThreadPool>(o.n_threads);
  QuantizeSummary summary;
  uint64_t total = 0;
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const gguf::TensorInfo& t = in->tensors()[i];
    const uint64_t row = t.dims[0], rows = t.n_elements() / row;
    total += row_bytes(types[i], row) * rows;
  }
  auto done = std::make_shared<uint64_t>(0);
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const gguf::TensorInfo& t = in->tensors()[i];
    const DType to = types[i];
    const uint64_t row = t.dims[0], rows = t.n_elements() / row;
    const size_t in_row = row_bytes(t.type, row), out_row = row_bytes(to, row);
    summary.in_bytes += t.n_bytes;
    summary.out_bytes += out_row * rows;
    ++summary.tensors_by_type[to];
    ++(to == t.type ? summary.copied : summary.converted);
    // The input stays open (in) while the writer calls the producers, in tensor order.
    w.add_tensor(t.name, t.dims, to, [in, pool, done, total, &o, src = t.data, from = t.type, to, row, rows, in_row, out_row](uint8_t* dst, size_t) {
      if (from == to) {
        std::memcpy(dst, src, in_row * rows);
      } else {
        pool->parallel_for(size_t(rows), [&](size_t r0, size_t r1, int) {
          std::vector<float> f(row);
          for (size_t r = r0; r < r1; ++r) {
            dequantize_row(from, src + r * in_row, f.data(), row);
            quantize_row(to, f.data(), dst + r * out_row, row);
          }
        });
      }
      *done += out_row * rows;
      if (o.progress && total) o.progress(double(*done) / double(total));
    });
  }
  TANDEM_RETURN_IF_ERROR(w.write(out_path));
  return summary;
}

}  // namespace tandem
