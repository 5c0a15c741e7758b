#include "devices/hexagon/weight_repack.h"

#include <cstring>

#include "core/quant.h"

namespace tandem::devices::hexagon_npu {

using hexagon::WeightFormat;

WeightFormat dsp_format(DType t) { return t == DType::Q4_0 ? WeightFormat::kQ4_0 : WeightFormat::kQ8_0; }

std::string why_not_repackable(const Weight& w) {
  if (!w.present()) return "the weight has no data";
  if (w.cols % THX_BLOCK != 0)
    return "input width " + std::to_string(w.cols) + " is not a multiple of the DSP's block (32)";
  if (w.cols > int64_t(THX_MAX_IN))
    return "input width " + std::to_string(w.cols) + " is over the DSP's " + std::to_string(THX_MAX_IN);
  return "";
}

Status repack_rows(const Weight& w, int64_t row_begin, int64_t row_end, uint8_t* out) {
  if (std::string why = why_not_repackable(w); !why.empty()) return Unsupported("hexagon: " + w.name + ": " + why);
  if (row_begin < 0 || row_end > w.rows || row_begin >= row_end)
    return InvalidArgument("hexagon: " + w.name + ": rows [" + std::to_string(row_begin) + ", " +
                           std::to_string(row_end) + ") of " + std::to_string(w.rows));
  const WeightFormat f = dsp_format(w.type);
  const size_t in_row = w.row_bytes();
  const size_t out_row = hexagon::weight_bytes(f, 1, uint32_t(w.cols));
  if (w.type == DType::Q4_0 || w.type == DType::Q8_0) {  // the model's own blocks, as they are
    std::memcpy(out, w.data + size_t(row_begin) * in_row, size_t(row_end - row_begin) * in_row);
    return Status::Ok();
  }
  std::vector<float> row(size_t(w.cols));
  for (int64_t r = row_begin; r < row_end; ++r) {
    dequantize_row(w.type, w.data + size_t(r) * in_row, row.data(), row.size());
    quantize_row_q8_0(row.data(), reinterpret_cast<BlockQ8_0*>(out + size_t(r - row_begin) * out_row), row.size());
  }
  return Status::Ok();
}

}  // namespace tandem::devices::hexagon_npu
