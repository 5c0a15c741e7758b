// The K-quants (Q2_K .. Q6_K): ggml's reference quantizers (no importance matrix) and its
// dequantizers, bit for bit.
//
// Everything here is single-precision float arithmetic in exactly ggml's order: every product,
// sum and quotient below is written as ggml groups it (a*b*c is (a*b)*c), int operands convert
// to float where ggml's C converts them, and the file is compiled with -ffp-contract=off so no
// multiply-add is fused. Changing the order of any of it changes some output byte.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant.h"

namespace tandem {
namespace {

// ggml treats a group whose largest magnitude is below this as all zero.
constexpr float kGroupMaxEps = 1e-15f;

// ggml's rounding: adding 1.5 * 2^23 moves the integer part of x into the low mantissa bits, the
// FPU rounding it to nearest even on the way; the result is read back from the bits. For
// |x| < 2^22 that is round-half-to-even. ggml only asserts that bound (compiled out in release
// builds), so for larger, infinite or NaN x we return the same bits-derived value it does
// (e.g. 0 for NaN) instead of rounding properly: the bytes must match.
int nearest_int(float x) {
  const float shifted = x + 12582912.0f;
  return int(f32_to_bits(shifted) & 0x007fffffu) - 0x00400000;
}

// The q6_K sub-block search (ggml's make_qx_quants with rmse_type 1 and no importance weights):
// symmetric levels l in [-nmax, nmax-1], the element of largest magnitude (with its sign) mapped
// to -nmax, then 18 nearby inverse scales tried, keeping the one that maximises
// (sum w*x*l)^2 / (sum w*l*l) with w = x^2. Writes L[i] = l + nmax, or 0 for an all-zero group,
// and returns the least-squares scale.
float make_qx_quants_rmse1(int n, int nmax, const float* x, int8_t* L) {
  float max = 0.0f, amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) amax = ax, max = x[i];
  }
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    return 0.0f;
  }
  const auto level = [nmax](float iscale, float xi) { return std::clamp(nearest_int(iscale * xi), -nmax, nmax - 1); };

  float iscale = float(-nmax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, x[i]);
    L[i] = int8_t(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(is)) / max;
    sumlx = suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = level(iscale, x[i]);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * float(l);
      suml2 += w * float(l) * float(l);
    }
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + level(iscale, x[i]));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// The q3_K sub-block search (ggml's make_q3_quants with do_rmse): start from the levels of the
// largest magnitude mapped to -nmax, then up to five passes that move single elements to the
// level which improves the weighted (w = x^2) least-squares fit. Writes L[i] = l + nmax (0 for an
// all-zero group) and returns the fitted scale.
float make_q3_quants_rmse(int n, int nmax, const float* x, int8_t* L) {
  float max = 0.0f, amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) amax = ax, max = x[i];
  }
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    return 0.0f;
  }
  const float iscale = float(-nmax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = int8_t(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * float(L[i]);
      if (!(slx > 0.0f)) continue;
      float sl2 = suml2 - w * float(L[i]) * float(L[i]);
      const int new_l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (new_l == L[i]) continue;
      slx += w * x[i] * float(new_l);
      sl2 += w * float(new_l) * float(new_l);
      // Accept when the fit's gain sumlx^2/suml2 grows (compared cross-multiplied, as ggml does).
      if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = int8_t(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// The asymmetric sub-block search of q2_K, q4_K and q5_K (ggml's make_qkx2_quants): value =
// scale * l - min with l in [0, nmax] and min >= 0. Starts from the levels spanning [min(x, 0),
// max(x)], then tries nstep+1 inverse scales (rmin + rdelta * is + nmax) / range, fitting scale
// and min by weighted least squares for each, and keeps the one of least weighted error (absolute
// when use_mad, else squared). Writes L and *the_min (the min, >= 0) and returns the scale.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    std::fill(L, L + n, uint8_t(0));
    *the_min = -min;
    return 0.0f;
  }
  const auto error_of = [use_mad](float diff) { return use_mad ? std::fabs(diff) : diff * diff; };

  float iscale = float(nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    L[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    const float diff = scale * float(L[i]) + min - x[i];
    best_error += weights[i] * error_of(diff);
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = uint8_t(l);
      const float w = weights[i];
      sum_l += w * float(l);
      sum_l2 += w * float(l) * float(l);
      sum_xl += w * float(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (!(D > 0.0f)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0.0f) {  // the offset may only lower values: refit the scale alone
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    float cur_error = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * float(Laux[i]) + this_min - x[i];
      cur_error += weights[i] * error_of(diff);
    }
    if (cur_error < best_error) {
      std::copy(Laux, Laux + n, L);
      best_error = cur_error;
      scale = this_scale;
      min = this_min;
    }
  }
  *the_min = -min;
  return scale;
}

// Q4_K/Q5_K pack eight 6-bit scales and eight 6-bit minimums into 12 bytes: pairs 0-3 whole in
// bytes 0-3 (scale) and 4-7 (min); pairs 4-7 keep their low nibbles in bytes 8-11 and their top
// two bits in the spare top bits of bytes 0-3 (scale) and 4-7 (min).
void pack_scales_mins_k4(const uint8_t* ls, const uint8_t* lm, uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = ls[j];
    q[j + 4] = lm[j];
  }
  for (int j = 4; j < 8; ++j) {
    q[j + 4] = uint8_t((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
    q[j - 4] = uint8_t(q[j - 4] | ((ls[j] >> 4) << 6));
    q[j] = uint8_t(q[j] | ((lm[j] >> 4) << 6));
  }
}

// The inverse of pack_scales_mins_k4 for pair j (ggml's get_scale_min_k4).
void get_scale_min_k4(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q3_K's sixteen 6-bit scales in 12 bytes: low nibbles of scales 0-7 in the low nibbles of bytes
// 0-7, of scales 8-15 in their high nibbles; the top two bits of scale j in bits 2*(j/4) of byte
// 8 + j%4.
int q3_k_scale(const uint8_t* scales, int j) {
  const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Q2_K and Q3_K store 2-bit fields: in each half (128 elements) of the super-block, byte l of the
// half's 32 holds elements l, l+32, l+64 and l+96 in bits 0-1, 2-3, 4-5 and 6-7.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQK_K; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

int unpack_2bit(const uint8_t* qs, int e) { return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

// Q4_K and Q5_K store 4-bit fields: in each 64 elements, byte l of their 32 holds element l in its
// low nibble and element l+32 in its high nibble.
int unpack_nibble(const uint8_t* qs, int e) {
  const uint8_t byte = qs[(e / 64) * 32 + e % 32];
  return (e % 64) < 32 ? byte & 0xF : byte >> 4;
}

// The per-32-element weights of Q4_K and Q5_K's search: the group's RMS plus each magnitude.
void rms_plus_abs_weights(const float* x, float* weights) {
  float sum_x2 = 0.0f;
  for (int l = 0; l < 32; ++l) sum_x2 += x[l] * x[l];
  const float av_x = std::sqrt(sum_x2 / 32.0f);
  for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[l]);
}

// Q4_K and Q5_K share everything but the level count and search range: per 32 elements an
// asymmetric search, the eight scales and minimums quantized to 6 bits against the super-block's
// largest, then every element re-quantized against its sub-block's final (rounded) scale and min.
// Writes d, dmin, the 12 scale bytes and the 256 levels.
void quantize_k4_style(const float* x, int nmax, float rmin, int nstep, fp16_t* d_out, fp16_t* dmin_out,
                       uint8_t* scale_bytes, uint8_t* L) {
  float scales[kQK_K / 32], mins[kQK_K / 32], weights[32];
  uint8_t Laux[32];
  float max_scale = 0.0f, max_min = 0.0f;  // the scales and mins are non-negative
  for (int j = 0; j < kQK_K / 32; ++j) {
    rms_plus_abs_weights(x + 32 * j, weights);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  uint8_t ls[kQK_K / 32], lm[kQK_K / 32];
  for (int j = 0; j < kQK_K / 32; ++j) {
    // ggml stores the rounded value in a uint8_t before capping it at 63: a (never expected)
    // negative one wraps to a large value and so caps to 63, not 0.
    ls[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
  }
  pack_scales_mins_k4(ls, lm, scale_bytes);
  *d_out = f32_to_fp16(max_scale / 63.0f);
  *dmin_out = f32_to_fp16(max_min / 63.0f);

  for (int j = 0; j < kQK_K / 32; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, scale_bytes, &sc, &m);
    const float d = fp16_to_f32(*d_out) * float(sc);
    if (d == 0.0f) continue;  // keep the search's levels (as ggml does); NaN d falls through
    const float dm = fp16_to_f32(*dmin_out) * float(m);
    for (int ii = 0; ii < 32; ++ii)
      L[32 * j + ii] = uint8_t(std::clamp(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
  }
}

}  // namespace

void quantize_row_q2_k(const float* x, BlockQ2_K* y, size_t n) {
  constexpr float kLevels = 15.0f;  // the 4-bit sub-block scales and mins
  for (size_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ2_K& out = y[b];
    uint8_t L[kQK_K], Laux[16];
    float weights[16], scales[kQK_K / 16], mins[kQK_K / 16];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < kQK_K / 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    // The rounded levels are stored as ggml does, through a uint8_t: only the low byte survives.
    if (max_scale > 0.0f) {
      const float iscale = kLevels / max_scale;
      for (int j = 0; j < kQK_K / 16; ++j) out.scales[j] = uint8_t(nearest_int(iscale * scales[j]));
      out.d = f32_to_fp16(max_scale / kLevels);
    } else {
      std::fill(std::begin(out.scales), std::end(out.scales), uint8_t(0));
      out.d = f32_to_fp16(0.0f);
    }
    if (max_min > 0.0f) {
      const float iscale = kLevels / max_min;
      for (int j = 0; j < kQK_K / 16; ++j)
        out.scales[j] = uint8_t(out.scales[j] | (unsigned(nearest_int(iscale * mins[j])) << 4));
      out.dmin = f32_to_fp16(max_min / kLevels);
    } else {
      out.dmin = f32_to_fp16(0.0f);
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = fp16_to_f32(out.d) * float(out.scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = fp16_to_f32(out.dmin) * float(out.scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) L[16 * j + ii] = uint8_t(std::clamp(nearest_int((x[16 * j + ii] + dm) / d), 0, 3));
    }
    pack_2bit(L, out.qs);
  }
}

void quantize_row_q3_k(const float* x, BlockQ3_K* y, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ3_K& out = y[b];
    int8_t L[kQK_K];
    float scales[kQK_K / 16];
    float max_scale = 0.0f, amax = 0.0f;  // the scale of largest magnitude, with its sign
    for (int j = 0; j < kQK_K / 16; ++j) {
      scales[j] = make_q3_quants_rmse(16, 4, x + 16 * j, L + 16 * j);
      const float a = std::fabs(scales[j]);
      if (a > amax) amax = a, max_scale = scales[j];
    }

    std::memset(out.scales, 0, sizeof out.scales);
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < kQK_K / 16; ++j) {
        // ggml keeps the rounded value in an int8_t before clamping it to [-32, 31].
        const int l = std::clamp(int(int8_t(nearest_int(iscale * scales[j]))), -32, 31) + 32;
        if (j < 8)
          out.scales[j] = uint8_t(l & 0xF);
        else
          out.scales[j - 8] = uint8_t(out.scales[j - 8] | ((l & 0xF) << 4));
        out.scales[8 + j % 4] = uint8_t(out.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
      }
      out.d = f32_to_fp16(1.0f / iscale);
    } else {
      out.d = f32_to_fp16(0.0f);
    }

    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = fp16_to_f32(out.d) * float(q3_k_scale(out.scales, j));
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii)
        L[16 * j + ii] = int8_t(std::clamp(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
    }

    // The high bit of element e goes to bit e/32 of hmask[e%32]; the low two bits as Q2_K's.
    std::memset(out.hmask, 0, sizeof out.hmask);
    uint8_t low[kQK_K];
    for (int e = 0; e < kQK_K; ++e) {
      int l = L[e];
      if (l > 3) {
        out.hmask[e % 32] = uint8_t(out.hmask[e % 32] | (1 << (e / 32)));
        l -= 4;
      }
      low[e] = uint8_t(l);
    }
    pack_2bit(low, out.qs);
  }
}

void quantize_row_q4_k(const float* x, BlockQ4_K* y, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ4_K& out = y[b];
    uint8_t L[kQK_K];
    quantize_k4_style(x, 15, -1.0f, 20, &out.d, &out.dmin, out.scales, L);
    for (int j = 0; j < kQK_K; j += 64)
      for (int l = 0; l < 32; ++l) out.qs[j / 2 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
  }
}

void quantize_row_q5_k(const float* x, BlockQ5_K* y, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ5_K& out = y[b];
    uint8_t L[kQK_K];
    quantize_k4_style(x, 31, -0.5f, 15, &out.d, &out.dmin, out.scales, L);
    // Low four bits as Q4_K's nibbles; the fifth bit of element e in bit e/32 of qh[e%32].
    std::memset(out.qh, 0, sizeof out.qh);
    for (int j = 0; j < kQK_K; j += 64) {
      for (int l = 0; l < 32; ++l) {
        const int l1 = L[j + l], l2 = L[j + l + 32];
        out.qh[l] = uint8_t(out.qh[l] | ((l1 >> 4) << (j / 32)) | ((l2 >> 4) << (j / 32 + 1)));
        out.qs[j / 2 + l] = uint8_t((l1 & 0xF) | ((l2 & 0xF) << 4));
      }
    }
  }
}

void quantize_row_q6_k(const float* x, BlockQ6_K* y, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ6_K& out = y[b];
    int8_t L[kQK_K];
    float scales[kQK_K / 16];
    float max_scale = 0.0f, max_abs_scale = 0.0f;  // the scale of largest magnitude, with its sign
    for (int j = 0; j < kQK_K / 16; ++j) {
      scales[j] = make_qx_quants_rmse1(16, 32, x + 16 * j, L + 16 * j);
      const float a = std::fabs(scales[j]);
      if (a > max_abs_scale) max_abs_scale = a, max_scale = scales[j];
    }
    if (max_abs_scale < kGroupMaxEps) {  // an all-zero super-block is all-zero bytes
      std::memset(&out, 0, sizeof out);
      out.d = f32_to_fp16(0.0f);
      continue;
    }

    const float iscale = -128.0f / max_scale;
    out.d = f32_to_fp16(1.0f / iscale);
    // Capped at 127 above; ggml stores the int in an int8_t (only the low byte survives).
    for (int j = 0; j < kQK_K / 16; ++j) out.scales[j] = int8_t(std::min(127, nearest_int(iscale * scales[j])));

    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = fp16_to_f32(out.d) * float(out.scales[j]);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii)
        L[16 * j + ii] = int8_t(std::clamp(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
    }

    // In each 128 elements: the low nibbles of elements l and l+64 share ql[l], of l+32 and l+96
    // share ql[l+32]; the top two bits of l, l+32, l+64, l+96 fill qh[l] from bit 0 up.
    for (int j = 0; j < kQK_K; j += 128) {
      uint8_t* ql = out.ql + j / 2;
      uint8_t* qh = out.qh + j / 4;
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
        ql[l] = uint8_t((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = uint8_t((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = uint8_t((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}

// The dequantizers compute each element as ggml does: the sub-block's float scale and offset
// first (d * scale, dmin * min), then scale * level - offset.

void dequantize_row_q2_k(const BlockQ2_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
    const float d = fp16_to_f32(x[b].d), dmin = fp16_to_f32(x[b].dmin);
    for (int e = 0; e < kQK_K; ++e) {
      const uint8_t sc = x[b].scales[e / 16];
      const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
      y[e] = dl * float(unpack_2bit(x[b].qs, e)) - ml;
    }
  }
}

void dequantize_row_q3_k(const BlockQ3_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
    const float d = fp16_to_f32(x[b].d);
    for (int e = 0; e < kQK_K; ++e) {
      const float dl = d * float(q3_k_scale(x[b].scales, e / 16));
      const bool high = (x[b].hmask[e % 32] >> (e / 32)) & 1;
      y[e] = dl * float(unpack_2bit(x[b].qs, e) - (high ? 0 : 4));
    }
  }
}

void dequantize_row_q4_k(const BlockQ4_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
    const float d = fp16_to_f32(x[b].d), dmin = fp16_to_f32(x[b].dmin);
    for (int e = 0; e < kQK_K; ++e) {
      uint8_t sc, m;
      get_scale_min_k4(e / 32, x[b].scales, &sc, &m);
      const float dl = d * float(sc), ml = dmin * float(m);
      y[e] = dl * float(unpack_nibble(x[b].qs, e)) - ml;
    }
  }
}

void dequantize_row_q5_k(const BlockQ5_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
    const float d = fp16_to_f32(x[b].d), dmin = fp16_to_f32(x[b].dmin);
    for (int e = 0; e < kQK_K; ++e) {
      uint8_t sc, m;
      get_scale_min_k4(e / 32, x[b].scales, &sc, &m);
      const float dl = d * float(sc), ml = dmin * float(m);
      const int q = unpack_nibble(x[b].qs, e) + (((x[b].qh[e % 32] >> (e / 32)) & 1) ? 16 : 0);
      y[e] = dl * float(q) - ml;
    }
  }
}

void dequantize_row_q6_k(const BlockQ6_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
    const float d = fp16_to_f32(x[b].d);
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128, r = e % 128, l = r % 32, quarter = r / 32;  // quarter: 0..3
      const uint8_t lo_byte = x[b].ql[half * 64 + l + (quarter & 1) * 32];
      const int lo = quarter < 2 ? lo_byte & 0xF : lo_byte >> 4;
      const int hi = (x[b].qh[half * 32 + l] >> (2 * quarter)) & 3;
      y[e] = d * float(x[b].scales[e / 16]) * float((lo | (hi << 4)) - 32);
    }
  }
}

}  // namespace tandem
