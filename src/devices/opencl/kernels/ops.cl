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

// Fast sync (HeteroInfer): after the op's kernels (the queue is in order, so they have finished
// and their stores are done), one work-item writes the op's sequence number into a completion
// flag in the shared memory pool, which the host polls instead of asking the driver.
__kernel void signal_flag(__global volatile ulong* flag, ulong flag_off, ulong value) {
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  flag[flag_off] = value;
}
