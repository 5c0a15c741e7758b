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
#define TANDEM_DOT16(T)                                                                   \
  inline float dot16_##T(__global const uchar* row, int u, __global const float* x) {     \
    return hsum16(deq16_##T(row, u) * vload16(0, x));                                     \
  }
TANDEM_DOT16(f32)
TANDEM_DOT16(f16)
TANDEM_DOT16(bf16)
TANDEM_DOT16(q8_0)
TANDEM_DOT16(q4_0)

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
