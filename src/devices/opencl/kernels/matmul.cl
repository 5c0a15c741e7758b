// y[i, r] = sum_k x[i, k] * W[r, k]: W in a GGUF type (rows x cols, row stride row_bytes),
// x and y fp32 (m rows, strides ldx / ldy). Two forms per type:
//   gemv_<T>: decode (small m). A work-group of GEMV_ROWS x GEMV_LANES items takes GEMV_ROWS
//             output rows of one input row; each row's lanes stride over runs of 16 weights
//             (half a quant block: one scale read, vector loads) and reduce in local memory. Memory bound: each weight
//             byte is read once per input row.
//   gemm_<T>: prefill. A work-group computes a TS x TS tile of y (TS weight rows x TS input
//             rows); each TK-wide slice of K is staged in local memory, the weight slice
//             dequantized to fp32 once and reused by TS input rows.
//   gemm_rb_<T>: prefill on CPU-like devices (see below); Ops picks it when the device is a CPU.
// Sizes need not be multiples of anything: out-of-range tiles load zeros and skip the store.

#define GEMV_ROWS 4   // output rows per work-group
#define GEMV_LANES 16  // items per output row
#define GEMV_WG (GEMV_ROWS * GEMV_LANES)
#define TS 16
#define TK 32
#define GEMM_RB 8  // input rows per item in gemm_rb

#define TANDEM_DEFINE_MATMUL(T)                                                                  \
  __kernel __attribute__((reqd_work_group_size(GEMV_WG, 1, 1))) void gemv_##T(                  \
      __global const uchar* w, ulong w_off, ulong row_bytes, int rows, int cols,                 \
      __global const float* x, ulong x_off, int ldx, __global float* y, ulong y_off, int ldy) {  \
    __local float part[GEMV_WG];                                                                 \
    const int lid = get_local_id(0);                                                             \
    const int lane = lid % GEMV_LANES, sub = lid / GEMV_LANES;                                   \
    const int r = get_group_id(0) * GEMV_ROWS + sub;                                             \
    const int i = get_global_id(1);                                                              \
    float s = 0.0f;                                                                              \
    if (r < rows) {                                                                              \
      __global const uchar* row = w + w_off + (ulong)r * row_bytes;                              \
      __global const float* xi = x + x_off + (ulong)i * ldx;                                     \
      const int nu = cols / 16;                                                                  \
      for (int u = lane; u < nu; u += GEMV_LANES) s += dot16_##T(row, u, xi + 16 * u);           \
      for (int k = 16 * nu + lane; k < cols; k += GEMV_LANES) s += w_##T(row, k) * xi[k];        \
    }                                                                                            \
    part[lid] = s;                                                                               \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                \
    for (int st = GEMV_LANES / 2; st > 0; st >>= 1) {                                            \
      if (lane < st) part[lid] += part[lid + st];                                                \
      barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    }                                                                                            \
    if (lane == 0 && r < rows) y[y_off + (ulong)i * ldy + r] = part[lid];                        \
  }                                                                                              \
                                                                                                 \
  __kernel __attribute__((reqd_work_group_size(TS, TS, 1))) void gemm_##T(                      \
      __global const uchar* w, ulong w_off, ulong row_bytes, int rows, int cols,                 \
      __global const float* x, ulong x_off, int ldx, __global float* y, ulong y_off, int ldy,    \
      int m) {                                                                                   \
    __local float ws[TK][TS]; /* transposed: work-items along r read consecutive floats */       \
    __local float xs[TS][TK + 1];                                                                \
    const int lr = get_local_id(0), li = get_local_id(1);                                        \
    const int r0 = get_group_id(0) * TS, i0 = get_group_id(1) * TS;                              \
    const int tid = li * TS + lr;                                                                \
    float acc = 0.0f;                                                                            \
    for (int k0 = 0; k0 < cols; k0 += TK) {                                                      \
      for (int e = tid; e < TS * TK; e += TS * TS) {                                             \
        const int rr = e / TK, kk = e % TK, k = k0 + kk;                                         \
        const int r = r0 + rr, i = i0 + rr;                                                      \
        ws[kk][rr] = (r < rows && k < cols) ? w_##T(w + w_off + (ulong)r * row_bytes, k) : 0.0f; \
        xs[rr][kk] = (i < m && k < cols) ? x[x_off + (ulong)i * ldx + k] : 0.0f;                 \
      }                                                                                          \
      barrier(CLK_LOCAL_MEM_FENCE);                                                              \
      for (int kk = 0; kk < TK; ++kk) acc += ws[kk][lr] * xs[li][kk];                            \
      barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    }                                                                                            \
    if (r0 + lr < rows && i0 + li < m) y[y_off + (ulong)(i0 + li) * ldy + r0 + lr] = acc;        \
  }                                                                                              \
                                                                                                 \
  /* Register-blocked GEMM for devices whose work-groups run as loops on CPU cores (PoCL):   \
     one item per output row r and GEMM_RB input rows; each run of 16 weights is dequantized \
     once into registers and used GEMM_RB times. No local memory, no barriers. */            \
  __kernel void gemm_rb_##T(__global const uchar* w, ulong w_off, ulong row_bytes, int rows,   \
                            int cols, __global const float* x, ulong x_off, int ldx,           \
                            __global float* y, ulong y_off, int ldy, int m) {                  \
    const int r = get_global_id(0), i0 = get_global_id(1) * GEMM_RB;                           \
    if (r >= rows) return;                                                                     \
    const int nr = min(GEMM_RB, m - i0);                                                       \
    __global const uchar* row = w + w_off + (ulong)r * row_bytes;                              \
    __global const float* x0 = x + x_off + (ulong)i0 * ldx;                                    \
    float acc[GEMM_RB];                                                                        \
    for (int j = 0; j < GEMM_RB; ++j) acc[j] = 0.0f;                                           \
    const int nu = cols / 16;                                                                  \
    for (int u = 0; u < nu; ++u) {                                                             \
      const float16 wv = deq16_##T(row, u);                                                    \
      for (int j = 0; j < nr; ++j) acc[j] += hsum16(wv * vload16(u, x0 + (ulong)j * ldx));     \
    }                                                                                          \
    for (int k = 16 * nu; k < cols; ++k) {                                                     \
      const float wk = w_##T(row, k);                                                          \
      for (int j = 0; j < nr; ++j) acc[j] += wk * x0[(ulong)j * ldx + k];                      \
    }                                                                                          \
    for (int j = 0; j < nr; ++j) y[y_off + (ulong)(i0 + j) * ldy + r] = acc[j];                \
  }                                                                                            \
                                                                                               \
  __kernel void get_rows_##T(__global const uchar* w, ulong w_off, ulong row_bytes, int cols,    \
                             __global const int* ids, ulong ids_off, __global float* y,          \
                             ulong y_off, int ldy, float scale) {                                \
    const int k = get_global_id(0), i = get_global_id(1);                                        \
    if (k >= cols) return;                                                                       \
    const int id = ids[ids_off + i];                                                             \
    y[y_off + (ulong)i * ldy + k] = w_##T(w + w_off + (ulong)id * row_bytes, k) * scale;         \
  }

TANDEM_DEFINE_MATMUL(f32)
TANDEM_DEFINE_MATMUL(f16)
TANDEM_DEFINE_MATMUL(bf16)
TANDEM_DEFINE_MATMUL(q8_0)
TANDEM_DEFINE_MATMUL(q4_0)
TANDEM_DEFINE_MATMUL(q4_k)
TANDEM_DEFINE_MATMUL(q5_k)
TANDEM_DEFINE_MATMUL(q6_k)
