// IQ4_NL and IQ4_XS: 4-bit quants indexing a non-linear table of 16 levels, ggml's quantizers
// without an importance matrix (quantize_iq4_nl / quantize_iq4_xs with quant_weights == NULL, the
// call llama-quantize makes) and its dequantizers.
//
// Both run ggml's quantize_row_iq4_nl_impl with ntry = 7: per 32 elements, a least-squares scale
// weighted by x^2, improved by trying 15 more candidate scales; IQ4_XS then quantizes the eight
// sub-block scales of a 256-element super-block to 6 bits against one fp16 scale and requantizes
// the elements with them. Every step is in float, in ggml's operation order (compiled with
// -ffp-contract=off), so the bytes match ggml's exactly.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/quant.h"

namespace tandem {

const int8_t kIq4nlLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

namespace {

constexpr int kSubBlock = 32;       // elements per scale, both types
constexpr int kScaleTries = 7;      // ggml's ntry: candidate scales searched either side
constexpr float kNearZero = 1e-15f; // ggml's GROUP_MAX_EPS: below this a sub-block's scale is 0

// Index of the table level nearest to v (ggml's best_index_int8): a binary search, then the
// lower of the two neighbours only when it is strictly nearer, so exact midpoints go up.
int nearest_level(float v) {
  if (v <= float(kIq4nlLevels[0])) return 0;
  if (v >= float(kIq4nlLevels[15])) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < float(kIq4nlLevels[mid])) hi = mid;
    else lo = mid;
  }
  return v - float(kIq4nlLevels[hi - 1]) < float(kIq4nlLevels[hi]) - v ? hi - 1 : hi;
}

// ggml's nearest_int: adding 1.5 * 2^23 leaves the rounded integer (round half to even, the FPU's
// mode) in the low mantissa bits. Exact for |v| < 2^22, which the 6-bit scale codes are.
int nearest_int(float v) {
  const float shifted = v + 12582912.0f;
  return int(f32_to_bits(shifted) & 0x007fffffu) - 0x00400000;
}

// The weighted sums of a candidate scale 1/id: sum w*q*x and sum w*q*q over the sub-block, with q
// the table level nearest x*id. Accumulated in element order with ggml's association
// ((w*q)*x, (w*q)*q), since the comparisons between candidates are made on these exact floats.
void weighted_sums(const float* xb, const float* w, float id, float& sumqx, float& sumq2) {
  sumqx = 0.0f;
  sumq2 = 0.0f;
  for (int j = 0; j < kSubBlock; ++j) {
    const float q = float(kIq4nlLevels[nearest_level(id * xb[j])]);
    sumqx += w[j] * q * xb[j];
    sumq2 += w[j] * q * q;
  }
}

// The scale ggml picks for one 32-element sub-block without an importance matrix: start from the
// scale that maps the element of largest magnitude to +127 and take its least-squares refinement,
// then try mapping that element to each of -120..-134 instead, keeping a candidate only when it
// lowers the weighted error (sumqx^2 / sumq2 larger). Returns 0 for an all-but-zero sub-block.
float subblock_scale(const float* xb) {
  float w[kSubBlock];
  for (int j = 0; j < kSubBlock; ++j) w[j] = xb[j] * xb[j];  // ggml's default weight, x^2

  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kSubBlock; ++j) {
    const float ax = std::fabs(xb[j]);
    if (ax > amax) {
      amax = ax;
      max = xb[j];
    }
  }
  if (amax < kNearZero) return 0.0f;

  float d = -max / float(kIq4nlLevels[0]);
  float sumqx, sumq2;
  weighted_sums(xb, w, 1.0f / d, sumqx, sumq2);
  d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int t = -kScaleTries; t <= kScaleTries; ++t) {
    const float id = float(t + kIq4nlLevels[0]) / max;
    weighted_sums(xb, w, id, sumqx, sumq2);
    if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// Levels of one sub-block for the reciprocal scale id, packed as Q4_0's nibbles: element j in
// the low nibble of q[j], element j+16 in the high one.
void pack_levels(const float* xb, float id, uint8_t* q) {
  uint8_t l[kSubBlock];
  for (int j = 0; j < kSubBlock; ++j) l[j] = uint8_t(nearest_level(id * xb[j]));
  for (int j = 0; j < kSubBlock / 2; ++j) q[j] = uint8_t(l[j] | l[kSubBlock / 2 + j] << 4);
}

}  // namespace

void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    const float d = subblock_scale(xb);
    y[b].d = f32_to_fp16(d);
    // The levels are chosen with the float scale, not its fp16 rounding, as ggml does.
    pack_levels(xb, d != 0.0f ? 1.0f / d : 0.0f, y[b].qs);
  }
}

void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, size_t n) {
  constexpr int kSubBlocks = kQK_K / kSubBlock;
  for (size_t b = 0; b < n / kQK_K; ++b) {
    const float* xs = x + b * kQK_K;
    float scales[kSubBlocks];
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      scales[ib] = subblock_scale(xs + ib * kSubBlock);
      if (std::fabs(scales[ib]) > amax_scale) {
        amax_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    // The largest-magnitude sub-block scale maps to code -32. When every sub-block is zero this
    // is -0.0f, which ggml stores as fp16 0x8000.
    const float d = -max_scale / 32.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    y[b].scales_h = 0;
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      const int l = std::clamp(nearest_int(id * scales[ib]), -32, 31);
      // Requantize with the 6-bit scale times the float (not fp16) super-block scale.
      const float dl = d * float(l);
      pack_levels(xs + ib * kSubBlock, dl != 0.0f ? 1.0f / dl : 0.0f, y[b].qs + ib * (kSubBlock / 2));
      const int code = l + 32;  // 0..63: low 4 bits in scales_l, high 2 in scales_h
      const uint8_t low = uint8_t(code & 0x0f);
      if (ib % 2 == 0) y[b].scales_l[ib / 2] = low;
      else y[b].scales_l[ib / 2] = uint8_t(y[b].scales_l[ib / 2] | low << 4);
      y[b].scales_h = uint16_t(y[b].scales_h | (code >> 4) << (2 * ib));
    }
  }
}

void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(x[b].d);
    float* yb = y + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      yb[j] = d * float(kIq4nlLevels[x[b].qs[j] & 0x0f]);
      yb[kQK / 2 + j] = d * float(kIq4nlLevels[x[b].qs[j] >> 4]);
    }
  }
}

void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_f32(x[b].d);
    for (int ib = 0; ib < kQK_K / kSubBlock; ++ib) {
      const int code = ((x[b].scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | ((x[b].scales_h >> (2 * ib)) & 3) << 4;
      const float dl = d * float(code - 32);
      const uint8_t* qs = x[b].qs + ib * (kSubBlock / 2);
      float* yb = y + b * kQK_K + ib * kSubBlock;
      for (int j = 0; j < kSubBlock / 2; ++j) {
        yb[j] = dl * float(kIq4nlLevels[qs[j] & 0x0f]);
        yb[kSubBlock / 2 + j] = dl * float(kIq4nlLevels[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace tandem
