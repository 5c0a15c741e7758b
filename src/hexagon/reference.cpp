// The host oracle (see reference.h for the numerics). Built with -ffp-contract=off: every
// product and sum below rounds on its own, as the DSP's scalar core does.
#include "hexagon/reference.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/half.h"

namespace tandem::hexagon {

const char* format_name(WeightFormat f) { return f == WeightFormat::kQ8_0 ? "q8_0" : "q4_0"; }

size_t block_bytes(WeightFormat f) {
  return f == WeightFormat::kQ8_0 ? THX_Q8_0_BLOCK_BYTES : THX_Q4_0_BLOCK_BYTES;
}

size_t weight_bytes(WeightFormat f, uint32_t rows, uint32_t in) {
  return size_t(rows) * (in / THX_BLOCK) * block_bytes(f);
}

float fp16_bits_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf, or NaN with its payload
  } else if (exp != 0) {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal: mant * 2^-24. Shift the leading one up to bit 10, lowering the exponent.
    int e = 127 - 15 + 1;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (uint32_t(e) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

int8_t quantize_value(float v) {
  if (std::isnan(v)) return 0;
  const float r = std::round(v);  // half away from zero, as roundf
  if (r > 127.0f) return 127;
  if (r < -127.0f) return -127;
  return int8_t(r);
}

Status check_activation_shape(uint32_t n, uint32_t in) {
  if (n == 0) return InvalidArgument("hexagon: an activation needs at least one row (n = 0)");
  if (in == 0 || in % THX_BLOCK != 0)
    return InvalidArgument("hexagon: the row length must be a positive multiple of 32, got " + std::to_string(in));
  if (in > THX_MAX_IN)
    return InvalidArgument("hexagon: the row length " + std::to_string(in) + " is over the DSP's " +
                           std::to_string(THX_MAX_IN));
  return Status::Ok();
}

Result<QuantizedActivations> quantize_activations(std::span<const float> x, uint32_t n, uint32_t in) {
  TANDEM_RETURN_IF_ERROR(check_activation_shape(n, in));
  if (x.size() < size_t(n) * in)
    return InvalidArgument("hexagon: " + std::to_string(x.size()) + " floats for " + std::to_string(n) + " rows of " +
                           std::to_string(in));
  QuantizedActivations a;
  a.n = n;
  a.in = in;
  a.q.assign(size_t(n) * a.stride(), 0);
  a.d.resize(size_t(n) * a.blocks_per_row());
  for (uint32_t r = 0; r < n; ++r) {
    for (size_t b = 0; b < a.blocks_per_row(); ++b) {
      const float* xb = x.data() + size_t(r) * in + b * THX_BLOCK;
      float amax = 0.0f;
      for (uint32_t j = 0; j < THX_BLOCK; ++j) {
        const float ax = std::fabs(xb[j]);
        if (amax < ax) amax = ax;  // false for NaN: a NaN never becomes the maximum
      }
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      a.d[size_t(r) * a.blocks_per_row() + b] = f32_to_fp16(d);
      int8_t* q = a.q.data() + size_t(r) * a.stride() + b * THX_BLOCK;
      for (uint32_t j = 0; j < THX_BLOCK; ++j) q[j] = quantize_value(xb[j] * id);
    }
  }
  return a;
}

int32_t block_dot(WeightFormat f, const uint8_t* block, const int8_t* x) {
  int32_t sum = 0;
  const uint8_t* qs = block + 2;  // past the fp16 scale
  if (f == WeightFormat::kQ8_0) {
    for (uint32_t j = 0; j < THX_BLOCK; ++j) sum += int32_t(int8_t(qs[j])) * x[j];
  } else {
    for (uint32_t j = 0; j < THX_BLOCK / 2; ++j) {
      sum += (int32_t(qs[j] & 0x0f) - 8) * x[j];
      sum += (int32_t(qs[j] >> 4) - 8) * x[j + THX_BLOCK / 2];
    }
  }
  return sum;
}

Result<std::vector<float>> matmul(WeightFormat f, std::span<const uint8_t> weights, uint32_t out,
                                  const QuantizedActivations& x) {
  TANDEM_RETURN_IF_ERROR(check_activation_shape(x.n, x.in));
  if (out == 0) return InvalidArgument("hexagon: a matmul needs at least one output column (out = 0)");
  if (x.q.size() < size_t(x.n) * x.stride() || x.d.size() < size_t(x.n) * x.blocks_per_row())
    return InvalidArgument("hexagon: the quantized activations are shorter than their shape");
  const size_t row_bytes = weight_bytes(f, 1, x.in);
  if (weights.size() < row_bytes * out)
    return InvalidArgument("hexagon: " + std::to_string(weights.size()) + " weight bytes for " + std::to_string(out) +
                           " " + format_name(f) + " rows of " + std::to_string(x.in));
  const size_t nb = x.blocks_per_row(), bb = block_bytes(f);
  std::vector<float> y(size_t(x.n) * out);
  for (uint32_t r = 0; r < x.n; ++r) {
    const int8_t* xq = x.q.data() + size_t(r) * x.stride();
    const uint16_t* xd = x.d.data() + size_t(r) * nb;
    for (uint32_t c = 0; c < out; ++c) {
      const uint8_t* row = weights.data() + size_t(c) * row_bytes;
      float acc = 0.0f;
      for (size_t b = 0; b < nb; ++b) {
        const uint8_t* block = row + b * bb;
        const float dw = fp16_bits_to_f32(uint16_t(block[0] | (block[1] << 8)));
        const float dx = fp16_bits_to_f32(xd[b]);
        const float scale = dw * dx;
        acc += scale * float(block_dot(f, block, xq + b * THX_BLOCK));
      }
      y[size_t(r) * out + c] = acc;
    }
  }
  return y;
}

}  // namespace tandem::hexagon
