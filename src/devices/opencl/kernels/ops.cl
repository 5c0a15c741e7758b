// The non-matmul ops of the forward pass, each the OpenCL twin of tandem::cpu's (ops.h).

#define ROW_WG 64

// y = x / rms(x) * weight, one work-group per row (rows of dim, stride dim).
__kernel __attribute__((reqd_work_group_size(ROW_WG, 1, 1))) void rmsnorm(
    __global const float* x, ulong x_off, __global const float* w, ulong w_off,
    __global float* y, ulong y_off, int dim, float eps) {
  __local float part[ROW_WG];
  const int lid = get_local_id(0);
  const ulong row = get_group_id(0);
  __global const float* xr = x + x_off + row * dim;
  __global float* yr = y + y_off + row * dim;
  float ss = 0.0f;
  for (int k = lid; k < dim; k += ROW_WG) ss += xr[k] * xr[k];
  TANDEM_REDUCE(part, lid, ROW_WG, ss, TANDEM_ADD);
  const float scale = 1.0f / sqrt(ss / (float)dim + eps);
  for (int k = lid; k < dim; k += ROW_WG) yr[k] = xr[k] * scale * w[w_off + k];
}

// x += y over count elements.
__kernel void add_inplace(__global float* x, ulong x_off, __global const float* y, ulong y_off,
                          int count) {
  const int i = get_global_id(0);
  if (i < count) x[x_off + i] += y[y_off + i];
}

// x[r, :dim] += bias for n rows of stride ld; global (dim, n).
__kernel void add_bias(__global float* x, ulong x_off, __global const float* b, ulong b_off,
                       int dim, int ld) {
  const int k = get_global_id(0), r = get_global_id(1);
  if (k < dim) x[x_off + (ulong)r * ld + k] += b[b_off + k];
}

// gate = silu(gate) * up over count elements.
__kernel void swiglu(__global float* g, ulong g_off, __global const float* u, ulong u_off,
                     int count) {
  const int i = get_global_id(0);
  if (i < count) {
    const float v = g[g_off + i];
    g[g_off + i] = v / (1.0f + exp(-v)) * u[u_off + i];
  }
}

// gate = gelu(gate) * up (tanh approximation: x / (1 + e^(-2u)), u = sqrt(2/pi)(x + 0.044715 x^3)).
__kernel void geglu(__global float* g, ulong g_off, __global const float* u, ulong u_off,
                    int count) {
  const int i = get_global_id(0);
  if (i < count) {
    const float v = g[g_off + i];
    const float t = 0.7978845608f * (v + 0.044715f * v * v * v);
    g[g_off + i] = v / (1.0f + exp(-2.0f * t)) * u[u_off + i];
  }
}

// x = cap * tanh(x / cap) over count elements.
__kernel void softcap(__global float* x, ulong x_off, int count, float cap) {
  const int i = get_global_id(0);
  if (i < count) x[x_off + i] = cap * tanh(x[x_off + i] / cap);
}

// Rotary embedding in place; global (head_dim/2, n_heads, n). cos/sin tables hold head_dim/2
// values per row. half_split pairs (x[i], x[i+d/2]), otherwise (x[2i], x[2i+1]).
__kernel void rope(__global float* x, ulong x_off, int ld, int head_dim,
                   __global const float* cs, ulong c_off, __global const float* sn, ulong s_off,
                   int half_split) {
  const int i = get_global_id(0), h = get_global_id(1), r = get_global_id(2);
  const int nh = head_dim / 2;  // (`half` is a type name in OpenCL C)
  if (i >= nh) return;
  __global float* v = x + x_off + (ulong)r * ld + (ulong)h * head_dim;
  const int i0 = half_split ? i : 2 * i;
  const int i1 = half_split ? i + nh : 2 * i + 1;
  const float c = cs[c_off + (ulong)r * nh + i], s = sn[s_off + (ulong)r * nh + i];
  const float a = v[i0], b = v[i1];
  v[i0] = a * c - b * s;
  v[i1] = a * s + b * c;
}

// Softmax over the first `valid` elements of each row (stride len) in place; the rest become 0.
__kernel __attribute__((reqd_work_group_size(ROW_WG, 1, 1))) void softmax_rows(
    __global float* x, ulong x_off, int valid, int len) {
  __local float part[ROW_WG];
  const int lid = get_local_id(0);
  __global float* row = x + x_off + (ulong)get_group_id(0) * len;
  float mx = -INFINITY;
  for (int k = lid; k < valid; k += ROW_WG) mx = fmax(mx, row[k]);
  TANDEM_REDUCE(part, lid, ROW_WG, mx, TANDEM_MAX);
  float sum = 0.0f;
  for (int k = lid; k < valid; k += ROW_WG) sum += exp(row[k] - mx);
  TANDEM_REDUCE(part, lid, ROW_WG, sum, TANDEM_ADD);
  const float inv = 1.0f / sum;
  for (int k = lid; k < len; k += ROW_WG) row[k] = k < valid ? exp(row[k] - mx) * inv : 0.0f;
}

// Appends n rows of k and v at position n_past of one layer's cache: keys [T x kv_dim] (a row
// per position), values transposed [kv_dim x T]. global (kv_dim, n).
__kernel void kv_store(__global const float* k, ulong k_off, __global const float* v, ulong v_off,
                       __global float* kc, ulong kc_off, __global float* vc, ulong vc_off,
                       int kv_dim, int T, int n_past) {
  const int d = get_global_id(0), i = get_global_id(1);
  if (d >= kv_dim) return;
  const ulong pos = (ulong)(n_past + i);
  kc[kc_off + pos * kv_dim + d] = k[k_off + (ulong)i * kv_dim + d];
  vc[vc_off + (ulong)d * T + pos] = v[v_off + (ulong)i * kv_dim + d];
}

// Causal attention with grouped-query heads against one layer's cache. One work-group per
// (query head h, query row i); global (ATT_WG * n_heads, n). Query i sees positions
// 0..n_past+i, or with window > 0 the last `window` of them. A score is q.k * scale, then
// cap * tanh(score / cap) when softcap > 0. Two passes over the keys: the first finds the score maximum, the second takes the
// scores a chunk of ATT_WG positions at a time, exponentiates them into local memory, and
// accumulates p x V (V is transposed, so each output dim reads a contiguous run of positions).
// head_dim <= ATT_MAX_HD.
#define ATT_WG 64
#define ATT_MAX_HD 256
__kernel __attribute__((reqd_work_group_size(ATT_WG, 1, 1))) void attention(
    __global const float* q, ulong q_off, int ldq, __global const float* kc, ulong kc_off,
    __global const float* vc, ulong vc_off, __global float* out, ulong out_off, int ldo,
    int head_dim, int kv_dim, int group, int T, int n_past, float scale, float softcap, int window) {
  __local float part[ATT_WG];
  __local float p[ATT_WG];
  __local float acc[ATT_MAX_HD];
  const int lid = get_local_id(0);
  const int h = get_group_id(0), i = get_global_id(1);
  const int kvh = h / group;
  const int visible = n_past + i + 1;
  const int first = window > 0 ? max(0, visible - window) : 0;
  __global const float* qi = q + q_off + (ulong)i * ldq + (ulong)h * head_dim;
  __global const float* kh = kc + kc_off + (ulong)kvh * head_dim;
  __global const float* vh = vc + vc_off + (ulong)kvh * head_dim * T;

  float mx = -INFINITY;
  for (int j = first + lid; j < visible; j += ATT_WG) {
    __global const float* kj = kh + (ulong)j * kv_dim;
    float s = 0.0f;
    for (int d = 0; d < head_dim; ++d) s += qi[d] * kj[d];
    s *= scale;
    if (softcap > 0.0f) s = softcap * tanh(s / softcap);
    mx = fmax(mx, s);
  }
  TANDEM_REDUCE(part, lid, ATT_WG, mx, TANDEM_MAX);
  for (int d = lid; d < head_dim; d += ATT_WG) acc[d] = 0.0f;

  float sum = 0.0f;
  for (int j0 = first; j0 < visible; j0 += ATT_WG) {
    const int j = j0 + lid;
    float e = 0.0f;
    if (j < visible) {
      __global const float* kj = kh + (ulong)j * kv_dim;
      float s = 0.0f;
      for (int d = 0; d < head_dim; ++d) s += qi[d] * kj[d];
      s *= scale;
      if (softcap > 0.0f) s = softcap * tanh(s / softcap);
      e = exp(s - mx);
    }
    sum += e;
    p[lid] = e;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int cnt = min(ATT_WG, visible - j0);
    for (int d = lid; d < head_dim; d += ATT_WG) {
      __global const float* vd = vh + (ulong)d * T + j0;
      float a = 0.0f;
      for (int c = 0; c < cnt; ++c) a += p[c] * vd[c];
      acc[d] += a;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  TANDEM_REDUCE(part, lid, ATT_WG, sum, TANDEM_ADD);
  const float inv = 1.0f / sum;
  __global float* o = out + out_off + (ulong)i * ldo + (ulong)h * head_dim;
  for (int d = lid; d < head_dim; d += ATT_WG) o[d] = acc[d] * inv;
}

// ---- Typed KV caches (core/kv_layout.h; --cache-type-k / --cache-type-v) ----
//
// A cache is bytes: element 0 of (token t, head h) is at base + t * token_stride + h * head_stride
// (token_major: token_stride = a row of every head, head_stride = one head's row; head_major:
// token_stride = one head's row, head_stride = capacity rows), each head's row head_dim elements
// of one type: f32, f16 (bits, round to nearest even) or q8_0 (blocks of 32 along the head: fp16
// scale d, then 32 int8 qs; value d * qs). The store writes the bytes the cpu device writes
// (cpu::kv_store_pages); no arithmetic depends on the driver's division or fp16 rounding.
#define KV_F32 0
#define KV_F16 1
#define KV_Q8_0 2

// fp32 -> fp16 bits, round to nearest even, as core/half.h's f32_to_fp16 (NaN payloads included).
inline ushort kv_f32_to_f16(float f) {
  const uint x = as_uint(f);
  const uint sign = (x >> 16) & 0x8000u;
  const uint ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (ushort)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  if (ax >= 0x477ff000u) return (ushort)(sign | 0x7c00u);
  if (ax < 0x38800000u) {
    if (ax < 0x33000000u) return (ushort)sign;
    const uint e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
    uint r = m >> shift;
    const uint rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    return (ushort)(sign | r);
  }
  uint r = (ax >> 13) - (112u << 10);
  const uint rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return (ushort)(sign | r);
}

// a / b rounded to nearest, whatever precision the driver gives `/` (OpenCL allows 2.5 ulp):
// step toward the true quotient while the exact remainder a - q b (fma) shrinks.
inline float kv_div_rn(float a, float b) {
  float q = a / b;
  if (!isfinite(q) || q == 0.0f) return q;
  for (int it = 0; it < 4; ++it) {
    const float r = fma(-q, b, a);
    if (r == 0.0f) break;
    const float next = nextafter(q, (r > 0.0f) == (b > 0.0f) ? INFINITY : -INFINITY);
    if (fabs(fma(-next, b, a)) < fabs(r)) q = next;
    else break;
  }
  return q;
}

// Elements [32c, 32c + cnt) of one head's row: src (fp32) into the row at dst in `type`.
inline void kv_store_chunk(__global const float* src, int cnt, __global uchar* dst, int type, int c) {
  if (type == KV_Q8_0) {  // cnt == 32: ggml's quantize_row_q8_0_ref
    __global uchar* b = dst + (ulong)c * Q8_0_BYTES;
    float amax = 0.0f;
    for (int j = 0; j < QK; ++j) {
      const float ax = fabs(src[j]);
      amax = amax < ax ? ax : amax;  // std::max(amax, ax): a NaN never wins
    }
    const float d = kv_div_rn(amax, 127.0f);
    const float id = d != 0.0f ? kv_div_rn(1.0f, d) : 0.0f;
    ((__global ushort*)b)[0] = kv_f32_to_f16(d);
    for (int j = 0; j < QK; ++j) ((__global char*)b)[2 + j] = (char)round(src[j] * id);
  } else if (type == KV_F16) {
    __global ushort* o = (__global ushort*)dst + (ulong)c * QK;
    for (int j = 0; j < cnt; ++j) o[j] = kv_f32_to_f16(src[j]);
  } else {
    __global float* o = (__global float*)dst + (ulong)c * QK;
    for (int j = 0; j < cnt; ++j) o[j] = src[j];
  }
}

// Appends n rows of k and v (fp32, rows of heads x head_dim, strides ldk / ldv) at position n_past
// of a typed cache; keys and values may differ in type. One item per (32 elements of a head, head,
// row): global (ceil(head_dim / 32), heads, n).
__kernel void kv_store_pages(__global const float* k, ulong k_off, int ldk, __global const float* v, ulong v_off,
                             int ldv, __global uchar* kc, ulong kc_off, ulong k_ts, ulong k_hs, int k_type,
                             __global uchar* vc, ulong vc_off, ulong v_ts, ulong v_hs, int v_type, int head_dim,
                             int n_past) {
  const int c = get_global_id(0), h = get_global_id(1), i = get_global_id(2);
  if (c * QK >= head_dim) return;
  const int cnt = min(QK, head_dim - c * QK);
  const ulong t = (ulong)(n_past + i), col = (ulong)h * head_dim + (ulong)c * QK;
  kv_store_chunk(k + k_off + (ulong)i * ldk + col, cnt, kc + kc_off + t * k_ts + (ulong)h * k_hs, k_type, c);
  kv_store_chunk(v + v_off + (ulong)i * ldv + col, cnt, vc + vc_off + t * v_ts + (ulong)h * v_hs, v_type, c);
}

// q . key for one key row of `type` (q in local memory, head_dim floats).
inline float kv_dot(__local const float* q, __global const uchar* row, int type, int head_dim) {
  float16 acc = (float16)(0.0f);
  const int n16 = head_dim / 16;
  float s = 0.0f;
  if (type == KV_Q8_0) {  // head_dim % 32 == 0
    for (int u = 0; u < n16; ++u) acc += deq16_q8_0(row, u) * vload16(u, q);
  } else if (type == KV_F16) {
    for (int u = 0; u < n16; ++u) acc += vload_half16(u, (__global const half*)row) * vload16(u, q);
    for (int d = n16 * 16; d < head_dim; ++d) s += q[d] * vload_half(d, (__global const half*)row);
  } else {
    for (int u = 0; u < n16; ++u) acc += vload16(u, (__global const float*)row) * vload16(u, q);
    for (int d = n16 * 16; d < head_dim; ++d) s += q[d] * ((__global const float*)row)[d];
  }
  return hsum16(acc) + s;
}

// sum_c p[c] * value(j0 + c)[d] over cnt values from `rows` (token j0's row of the head), stride ts.
inline float kv_weighted(__local const float* p, __global const uchar* rows, ulong ts, int type, int d, int cnt) {
  float a = 0.0f;
  if (type == KV_Q8_0) {
    __global const uchar* b = rows + (ulong)(d / QK) * Q8_0_BYTES;
    const int e = 2 + d % QK;
    for (int c = 0; c < cnt; ++c, b += ts)
      a += p[c] * (vload_half(0, (__global const half*)b) * (float)((__global const char*)b)[e]);
  } else if (type == KV_F16) {
    for (int c = 0; c < cnt; ++c, rows += ts) a += p[c] * vload_half(d, (__global const half*)rows);
  } else {
    for (int c = 0; c < cnt; ++c, rows += ts) a += p[c] * ((__global const float*)rows)[d];
  }
  return a;
}

// Causal GQA attention over a typed cache, with `attention`'s semantics (scale, softcap, window,
// n_past). One work-group per (query head h, query row i); global (ATT_WG * n_heads, n). One pass
// over the keys (online softmax): each chunk of ATT_WG positions takes its scores (an item per
// key), the chunk maximum rescales the running sums, and each item accumulates p x V for the
// output dims lid, lid + ATT_WG, ... in registers. The query sits in local memory.
#define ATT_DIMS (ATT_MAX_HD / ATT_WG)
__kernel __attribute__((reqd_work_group_size(ATT_WG, 1, 1))) void attention_pages(
    __global const float* q, ulong q_off, int ldq, __global const uchar* kc, ulong kc_off, ulong k_ts, ulong k_hs,
    int k_type, __global const uchar* vc, ulong vc_off, ulong v_ts, ulong v_hs, int v_type, __global float* out,
    ulong out_off, int ldo, int head_dim, int group, int n_past, float scale, float softcap, int window) {
  __local float qv[ATT_MAX_HD];
  __local float part[ATT_WG];
  __local float p[ATT_WG];
  const int lid = get_local_id(0);
  const int h = get_group_id(0), i = get_global_id(1);
  const int kvh = h / group;
  const int visible = n_past + i + 1;
  const int first = window > 0 ? max(0, visible - window) : 0;
  __global const float* qi = q + q_off + (ulong)i * ldq + (ulong)h * head_dim;
  for (int d = lid; d < head_dim; d += ATT_WG) qv[d] = qi[d];
  barrier(CLK_LOCAL_MEM_FENCE);
  __global const uchar* kh = kc + kc_off + (ulong)kvh * k_hs;
  __global const uchar* vh = vc + vc_off + (ulong)kvh * v_hs;

  float acc[ATT_DIMS];
  for (int r = 0; r < ATT_DIMS; ++r) acc[r] = 0.0f;
  float mx = -INFINITY, sum = 0.0f;
  for (int j0 = first; j0 < visible; j0 += ATT_WG) {
    const int j = j0 + lid;
    float s = -INFINITY;
    if (j < visible) {
      s = kv_dot(qv, kh + (ulong)j * k_ts, k_type, head_dim) * scale;
      if (softcap > 0.0f) s = softcap * tanh(s / softcap);
    }
    float cmx = s;
    TANDEM_REDUCE(part, lid, ATT_WG, cmx, TANDEM_MAX);
    const float nmx = fmax(mx, cmx);
    const float alpha = exp(mx - nmx);  // 0 on the first chunk (mx = -inf)
    const float e = j < visible ? exp(s - nmx) : 0.0f;
    sum = sum * alpha + e;
    p[lid] = e;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int cnt = min(ATT_WG, visible - j0);
    __global const uchar* vrows = vh + (ulong)j0 * v_ts;
    for (int r = 0; r < ATT_DIMS; ++r) {
      const int d = lid + r * ATT_WG;
      if (d < head_dim) acc[r] = acc[r] * alpha + kv_weighted(p, vrows, v_ts, v_type, d, cnt);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    mx = nmx;
  }
  TANDEM_REDUCE(part, lid, ATT_WG, sum, TANDEM_ADD);
  const float inv = 1.0f / sum;
  __global float* o = out + out_off + (ulong)i * ldo + (ulong)h * head_dim;
  for (int r = 0; r < ATT_DIMS; ++r) {
    const int d = lid + r * ATT_WG;
    if (d < head_dim) o[d] = acc[r] * inv;
  }
}

// Fast sync (HeteroInfer): after the op's kernels (the queue is in order, so they have finished
// and their stores are done), one work-item writes the op's sequence number into a completion
// flag in the shared memory pool, which the host polls instead of asking the driver.
__kernel void signal_flag(__global volatile ulong* flag, ulong flag_off, ulong value) {
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  flag[flag_off] = value;
}
