// Shared helpers of tandem's OpenCL kernels. OpenCL C 1.2; no extension is required.
//
// Numerics (W4A16): weights stay in their GGUF type in device memory and are dequantized
// element by element next to the multiply (vload_half reads fp16 scales and f16 weights
// without needing cl_khr_fp16); activations, dequantized weights and accumulators are fp32.
//
// Every buffer argument comes with an element offset (`*_off`) instead of a sub-buffer: the
// regions of tandem's MemoryPool are 64-byte aligned, while sub-buffer origins must be aligned
// to CL_DEVICE_MEM_BASE_ADDR_ALIGN (128 bytes on PoCL, up to 4 KiB elsewhere).

#define QK 32
#define Q8_0_BYTES 34
#define Q4_0_BYTES 18

// Element k of a weight row, as fp32, one accessor per GGUF type.
inline float w_f32(__global const uchar* row, int k) { return ((__global const float*)row)[k]; }
inline float w_f16(__global const uchar* row, int k) { return vload_half(k, (__global const half*)row); }
inline float w_bf16(__global const uchar* row, int k) {
  return as_float(((uint)((__global const ushort*)row)[k]) << 16);
}
inline float w_q8_0(__global const uchar* row, int k) {
  __global const uchar* b = row + (k / QK) * Q8_0_BYTES;
  const float d = vload_half(0, (__global const half*)b);
  return d * (float)((__global const char*)b)[2 + (k % QK)];
}
inline float w_q4_0(__global const uchar* row, int k) {
  __global const uchar* b = row + (k / QK) * Q4_0_BYTES;
  const float d = vload_half(0, (__global const half*)b);
  const int j = k % QK;
  const uchar q = b[2 + (j & 15)];
  const int nib = j < 16 ? (int)(q & 15) : (int)(q >> 4);
  return d * (float)(nib - 8);
}

// W[row, 16u .. 16u+15] as fp32: sixteen consecutive weights (half a quant block: one scale
// read, vector loads). dot16_<T> takes them against sixteen activations (the GEMV inner step).
inline float hsum16(float16 v) {
  const float8 a = v.lo + v.hi;
  const float4 b = a.lo + a.hi;
  return b.x + b.y + b.z + b.w;
}
inline float16 deq16_f32(__global const uchar* row, int u) {
  return vload16(u, (__global const float*)row);
}
inline float16 deq16_f16(__global const uchar* row, int u) {
  return vload_half16(u, (__global const half*)row);
}
inline float16 deq16_bf16(__global const uchar* row, int u) {
  return as_float16(convert_uint16(vload16(u, (__global const ushort*)row)) << 16);
}
inline float16 deq16_q8_0(__global const uchar* row, int u) {
  __global const uchar* b = row + (u >> 1) * Q8_0_BYTES;
  const float d = vload_half(0, (__global const half*)b);
  return d * convert_float16(vload16(0, (__global const char*)b + 2 + 16 * (u & 1)));
}
inline float16 deq16_q4_0(__global const uchar* row, int u) {
  // Half 0 of a block is the low nibbles of its 16 bytes, half 1 the high nibbles.
  __global const uchar* b = row + (u >> 1) * Q4_0_BYTES;
  const float d = vload_half(0, (__global const half*)b);
  const uchar16 q = (vload16(0, b + 2) >> (uchar16)(4 * (u & 1))) & (uchar16)(15);
  return d * (convert_float16(q) - 8.0f);
}
// K-quants: super-blocks of 256 (core/quant.h has the layouts). Both accessors compute ggml's
// dequantization: (d * scale) * q - (dmin * min), each product rounded to fp32 on its own (no
// contraction into an fma), so get_rows is bit for bit the cpu's.
#define QK_K 256
#define Q4_K_BYTES 144
#define Q5_K_BYTES 176
#define Q6_K_BYTES 210

// The 6-bit scale and minimum of sub-block j (0..7) of a Q4_K / Q5_K super-block.
inline float2 k4_scale_min(__global const uchar* scales, int j) {
  if (j < 4) return (float2)((float)(scales[j] & 63), (float)(scales[j + 4] & 63));
  return (float2)((float)((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4)),
                  (float)((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4)));
}
// Element k of a Q4_K / Q5_K row: sub-block k/32; quants of 64 elements share 32 qs bytes (low
// nibbles the first 32, high the next); Q5_K's fifth bit of element k is bit k/32 of qh[k % 32].
inline float w_k45(__global const uchar* row, int k, int q5) {
#pragma OPENCL FP_CONTRACT OFF
  __global const uchar* b = row + (k / QK_K) * (q5 ? Q5_K_BYTES : Q4_K_BYTES);
  const int j = k % QK_K, sub = j / 32, l = j % 32;
  const float d = vload_half(0, (__global const half*)b), dmin = vload_half(1, (__global const half*)b);
  const float2 sm = k4_scale_min(b + 4, sub);
  __global const uchar* qs = b + (q5 ? 48 : 16) + (sub / 2) * 32;
  int q = (sub & 1) ? (qs[l] >> 4) : (qs[l] & 15);
  if (q5 && ((b[16 + l] >> sub) & 1)) q += 16;
  const float d1 = d * sm.x, m1 = dmin * sm.y;
  return d1 * (float)q - m1;
}
inline float w_q4_k(__global const uchar* row, int k) { return w_k45(row, k, 0); }
inline float w_q5_k(__global const uchar* row, int k) { return w_k45(row, k, 1); }
inline float16 deq16_k45(__global const uchar* row, int u, int q5) {
#pragma OPENCL FP_CONTRACT OFF
  // Sixteen elements 16u.. lie in one sub-block: one scale pair, one nibble half, 16 qs bytes.
  __global const uchar* b = row + (u / 16) * (q5 ? Q5_K_BYTES : Q4_K_BYTES);
  const int j = (u % 16) * 16, sub = j / 32, l0 = j % 32;
  const float d = vload_half(0, (__global const half*)b), dmin = vload_half(1, (__global const half*)b);
  const float2 sm = k4_scale_min(b + 4, sub);
  const uchar16 raw = vload16(0, b + (q5 ? 48 : 16) + (sub / 2) * 32 + l0);
  int16 q = convert_int16((sub & 1) ? (raw >> (uchar16)(4)) : (raw & (uchar16)(15)));
  if (q5) q += convert_int16((vload16(0, b + 16 + l0) >> (uchar16)(sub)) & (uchar16)(1)) * 16;
  const float d1 = d * sm.x, m1 = dmin * sm.y;
  return d1 * convert_float16(q) - m1;
}
inline float16 deq16_q4_k(__global const uchar* row, int u) { return deq16_k45(row, u, 0); }
inline float16 deq16_q5_k(__global const uchar* row, int u) { return deq16_k45(row, u, 1); }
// Q6_K: each half (128 elements) has 64 ql and 32 qh bytes and 8 scales; its quarter t (32
// elements) takes the low (t < 2) or high nibble of ql[l + 32 (t & 1)] and bits 2t.. of qh[l].
inline float w_q6_k(__global const uchar* row, int k) {
#pragma OPENCL FP_CONTRACT OFF
  __global const uchar* b = row + (k / QK_K) * Q6_K_BYTES;
  const int j = k % QK_K, half_ = j / 128, t = (j % 128) / 32, l = j % 32;
  const uchar ql = b[half_ * 64 + l + 32 * (t & 1)];
  const int lo = t < 2 ? (ql & 15) : (ql >> 4);
  const int q = (lo | (((b[128 + half_ * 32 + l] >> (2 * t)) & 3) << 4)) - 32;
  const float d = vload_half(0, (__global const half*)(b + 208));
  const float sc = (float)((__global const char*)b)[192 + half_ * 8 + l / 16 + 2 * t];
  return d * sc * (float)q;
}
inline float16 deq16_q6_k(__global const uchar* row, int u) {
#pragma OPENCL FP_CONTRACT OFF
  __global const uchar* b = row + (u / 16) * Q6_K_BYTES;
  const int j = (u % 16) * 16, half_ = j / 128, t = (j % 128) / 32, l0 = j % 32;
  const uchar16 ql = vload16(0, b + half_ * 64 + l0 + 32 * (t & 1));
  const int16 lo = convert_int16(t < 2 ? (ql & (uchar16)(15)) : (ql >> (uchar16)(4)));
  const int16 hi = convert_int16((vload16(0, b + 128 + half_ * 32 + l0) >> (uchar16)(2 * t)) & (uchar16)(3));
  const float d = vload_half(0, (__global const half*)(b + 208));
  const float sc = (float)((__global const char*)b)[192 + half_ * 8 + l0 / 16 + 2 * t];
  return (d * sc) * convert_float16((lo | (hi << 4)) - 32);
}

#define TANDEM_DOT16(T)                                                                   \
  inline float dot16_##T(__global const uchar* row, int u, __global const float* x) {     \
    return hsum16(deq16_##T(row, u) * vload16(0, x));                                     \
  }
TANDEM_DOT16(f32)
TANDEM_DOT16(f16)
TANDEM_DOT16(bf16)
TANDEM_DOT16(q8_0)
TANDEM_DOT16(q4_0)
TANDEM_DOT16(q4_k)
TANDEM_DOT16(q5_k)
TANDEM_DOT16(q6_k)

// Tree reductions over a work-group of WG items through local memory `buf` (WG floats).
// Every item of the group must call them; every item gets the result.
#define TANDEM_REDUCE(buf, lid, WG, value, OP)                       \
  do {                                                               \
    buf[lid] = (value);                                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                    \
    for (int s_ = (WG) / 2; s_ > 0; s_ >>= 1) {                      \
      if ((lid) < s_) buf[lid] = OP(buf[lid], buf[(lid) + s_]);      \
      barrier(CLK_LOCAL_MEM_FENCE);                                  \
    }                                                                \
    value = buf[0];                                                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                    \
  } while (0)

#define TANDEM_ADD(a, b) ((a) + (b))
#define TANDEM_MAX(a, b) fmax((a), (b))
