// Device conformance, in the habit of llama.cpp's tests/test-backend-ops.cpp: every op case is
// defined once (op, shape, how its inputs are built) and runs on every device of the registry
// against the cpu device (fp32 GEMM) as the reference.
//
// Per case and device: the device must support the call (a static-graph device must refuse it
// until prepare()d), its outputs must be finite and within an NMSE bound of the reference, and
// nothing outside what the reference writes may change: every buffer carries sentinel padding
// before and after, output gaps between strided rows and matmul columns outside the row range
// start as sentinels too, and all of them must come back bit for bit. Inputs are padded with a
// NaN sentinel as well, so an out-of-bounds read shows up as a non-finite output.
//
// TANDEM_CONFORMANCE_PERF=1 also times each case on each device (median of a few runs, device
// seconds and wall) and prints a table when the binary exits. Times are never asserted.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>

#include "devices/cpu/matmul/matmul.h"
#include "devices/registry.h"
#include "tests/devices/conformance_models.h"
#include "tests/model/test_models.h"
#include "tests/support/require_opencl.h"

namespace tandem::devices {
namespace {

// ---------------------------------------------------------------------------------------------
// Buffers with sentinel padding.

constexpr size_t kPad = 64;                       // floats of padding before and after each buffer
constexpr uint32_t kSentinelBits = 0x7fc0deadu;   // a quiet NaN with a payload nothing computes

float sentinel() { return std::bit_cast<float>(kSentinelBits); }
bool same_bits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

struct Buf {
  std::string name;
  bool output = false;
  std::vector<float> mem;  // kPad + n + kPad
  size_t n = 0;
  float* data() { return mem.data() + kPad; }
  const float* data() const { return mem.data() + kPad; }
};

// Everything one op call points into; built twice per test (reference and device), identically.
struct Instance {
  std::vector<std::unique_ptr<Buf>> bufs;  // stable addresses: the call points into them
  std::vector<int32_t> ids;
  OpCall call;
  std::mt19937 rng{20240607};

  Buf& add(const std::string& name, size_t n, bool output) {
    auto b = std::make_unique<Buf>();
    b->name = name;
    b->output = output;
    b->n = n;
    b->mem.assign(n + 2 * kPad, sentinel());
    bufs.push_back(std::move(b));
    return *bufs.back();
  }
  // An activation of rows x cols with row stride ld; the gaps between rows stay sentinels.
  Act act(const std::string& name, int64_t rows, int64_t cols, int64_t ld, bool output, bool random,
          float scale = 1.0f) {
    Buf& b = add(name, size_t((rows - 1) * ld + cols), output);
    if (random) fill(b.data(), rows, cols, ld, scale);
    return Act{b.data(), rows, cols, ld};
  }
  void fill(float* p, int64_t rows, int64_t cols, int64_t ld, float scale) {
    std::normal_distribution<float> dist(0.0f, scale);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) p[i * ld + j] = dist(rng);
  }
};

// ---------------------------------------------------------------------------------------------
// Cases: each defined once.

struct Case {
  std::string name;  // gtest-safe
  OpKind kind;
  std::string model;  // a conformance model key (the weights, and what the devices are opened with)
  std::function<void(Instance&, const Model&)> build;
  double nmse_fp32;  // bound for fp32 devices (cpu, opencl)
  double nmse_npu;   // bound for the npu (fp16 compute)
};

std::string type_tag(DType t) {
  std::string s(dtype_name(t));
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

const Weight& layer0(const Model& m, Weight LayerWeights::*w) { return m.layers()[0].*w; }

void add_get_rows(std::vector<Case>& out) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0}) {
    for (int n : {1, 7, 33, 300}) {  // 300: a prompt's rows, which the cpu spreads over its threads
      const bool strided = n == 7;
      out.push_back(Case{
          "get_rows_" + type_tag(t) + "_n" + std::to_string(n) + (strided ? "_strided" : ""), OpKind::kGetRows,
          model_key(Arch::kLlama, t),
          [t, n, strided](Instance& in, const Model& m) {
            // token_embd when it carries the type under test, else a 2-D weight that does.
            const Weight* w = &m.token_embd();
            if (w->type != t) w = &layer0(m, &LayerWeights::w_gate);
            EXPECT_EQ(w->type, t) << "the generated model has no " << dtype_name(t) << " table";
            std::uniform_int_distribution<int32_t> pick(0, int32_t(w->rows - 1));
            in.ids.resize(size_t(n));
            for (int i = 0; i < n; ++i) in.ids[size_t(i)] = pick(in.rng);
            in.ids[0] = int32_t(w->rows - 1);            // the last row
            if (n > 1) in.ids[1] = 0;                     // the first
            if (n > 2) in.ids[2] = in.ids[0];             // a repeat
            in.call.kind = OpKind::kGetRows;
            in.call.weight = w;
            in.call.ids = in.ids.data();
            in.call.out = in.act("out", n, w->cols, w->cols + (strided ? 5 : 0), true, false);
          },
          0.0, 0.0});
    }
  }
}

void add_rmsnorm(std::vector<Case>& out) {
  for (const char* key : {"llama-f32", "wide-f16"}) {
    for (int n : {1, 7, 33}) {
      const std::string model = key;
      out.push_back(Case{"rmsnorm_" + std::string(key[0] == 'w' ? "wide" : "w64") + "_n" + std::to_string(n),
                         OpKind::kRmsNorm, model,
                         [n](Instance& in, const Model& m) {
                           const Weight& g = layer0(m, &LayerWeights::attn_norm);
                           in.call.kind = OpKind::kRmsNorm;
                           in.call.weight = &g;
                           in.call.eps = m.config().rms_eps;
                           in.call.a = in.act("x", n, g.cols, g.cols, false, true, 3.0f);
                           in.call.out = in.act("out", n, g.cols, g.cols, true, false);
                         },
                         1e-10, 1e-5});
    }
  }
}

void add_matmul(std::vector<Case>& out) {
  struct Range {
    int64_t begin, end;
    const char* tag;
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0}) {
    for (int m : {1, 2, 7, 16, 33}) {
      for (Range r : {Range{0, 128, "full"}, Range{32, 96, "r32_96"}}) {
        out.push_back(Case{"matmul_" + type_tag(t) + "_m" + std::to_string(m) + "_" + r.tag, OpKind::kMatmul,
                           model_key(Arch::kLlama, t),
                           [m, r](Instance& in, const Model& model) {
                             const Weight& w = layer0(model, &LayerWeights::w_gate);  // 128 x 64
                             const Act x = in.act("x", m, w.cols, w.cols, false, true);
                             const Act y = in.act("y", m, w.rows, w.rows, true, false);
                             in.call = OpCall::matmul(&w, r.begin, r.end, x.data, m, x.ld, y.data, y.ld);
                           },
                           1e-10, 1e-5});
      }
    }
    // Strided x and y, and a range that ends at the last row, on a weight of the other aspect.
    out.push_back(Case{"matmul_" + type_tag(t) + "_m5_down_r16_64_strided", OpKind::kMatmul,
                       model_key(Arch::kLlama, t),
                       [](Instance& in, const Model& model) {
                         const Weight& w = layer0(model, &LayerWeights::w_down);  // 64 x 128
                         const Act x = in.act("x", 5, w.cols, w.cols + 3, false, true);
                         const Act y = in.act("y", 5, w.rows, w.rows + 7, true, false);
                         in.call = OpCall::matmul(&w, 16, w.rows, x.data, 5, x.ld, y.data, y.ld);
                       },
                       1e-10, 1e-5});
  }
}

void add_add_bias(std::vector<Case>& out) {
  for (bool kv : {false, true}) {
    for (int n : {1, 7, 600}) {  // 600: a prompt's rows, which the cpu spreads over its threads
      const bool strided = n == 7;
      out.push_back(Case{std::string("add_bias_") + (kv ? "bk" : "bq") + "_n" + std::to_string(n) +
                             (strided ? "_strided" : ""),
                         OpKind::kAddBias, model_key(Arch::kQwen2, DType::F32),
                         [kv, n, strided](Instance& in, const Model& m) {
                           const Weight& b = layer0(m, kv ? &LayerWeights::bk : &LayerWeights::bq);
                           in.call.kind = OpKind::kAddBias;
                           in.call.weight = &b;
                           in.call.out = in.act("out", n, b.cols, b.cols + (strided ? 9 : 0), true, true);
                         },
                         1e-12, 1e-5});
    }
  }
}

void add_rope(std::vector<Case>& out) {
  struct Shape {
    int n, pos, heads, head_dim;
  };
  for (bool half : {false, true}) {
    for (Shape s : {Shape{1, 0, 4, 16}, Shape{7, 0, 4, 16}, Shape{5, 37, 4, 16}, Shape{1, 1000, 4, 16},
                    Shape{3, 250, 2, 64}, Shape{300, 3, 4, 16}}) {  // 300 rows: spread over the cpu's threads
      out.push_back(Case{std::string("rope_") + (half ? "half" : "adjacent") + "_n" + std::to_string(s.n) + "_pos" +
                             std::to_string(s.pos) + "_h" + std::to_string(s.heads) + "x" +
                             std::to_string(s.head_dim),
                         OpKind::kRope, "llama-f32",
                         [half, s](Instance& in, const Model&) {
                           const int hh = s.head_dim / 2;
                           Buf& cs = in.add("cos", size_t(s.n * hh), false);
                           Buf& sn = in.add("sin", size_t(s.n * hh), false);
                           for (int i = 0; i < s.n; ++i)
                             for (int j = 0; j < hh; ++j) {
                               const double a = double(s.pos + i) * std::pow(10000.0, -2.0 * j / s.head_dim);
                               cs.data()[i * hh + j] = float(std::cos(a));
                               sn.data()[i * hh + j] = float(std::sin(a));
                             }
                           const int64_t cols = int64_t(s.heads) * s.head_dim;
                           in.call.kind = OpKind::kRope;
                           in.call.cos = cs.data();
                           in.call.sin = sn.data();
                           in.call.n_heads = s.heads;
                           in.call.head_dim = s.head_dim;
                           in.call.half_split = half;
                           in.call.out = in.act("x", s.n, cols, cols + (s.n == 7 ? 4 : 0), true, true);
                         },
                         1e-10, 1e-5});
    }
  }
}

void add_kv_store(std::vector<Case>& out) {
  struct Shape {
    int n, n_past;
  };
  for (Shape s : {Shape{1, 0}, Shape{7, 0}, Shape{1, 20}, Shape{6, 13}, Shape{9, 39}}) {
    out.push_back(Case{"kv_store_n" + std::to_string(s.n) + "_past" + std::to_string(s.n_past), OpKind::kKvStore,
                       "llama-f32",
                       [s](Instance& in, const Model&) {
                         const int kv_dim = 32, context = 48;
                         in.call.kind = OpKind::kKvStore;
                         in.call.a = in.act("k", s.n, kv_dim, kv_dim, false, true);
                         in.call.b = in.act("v", s.n, kv_dim, kv_dim, false, true);
                         // Caches hold earlier positions already; only the new ones may change.
                         in.call.k_cache = in.act("k_cache", context, kv_dim, kv_dim, true, true).data;
                         in.call.v_cache = in.act("v_cache", kv_dim, context, context, true, true).data;
                         in.call.n_past = s.n_past;
                         in.call.context = context;
                         in.call.out = in.call.a;  // as the transformer graph passes it: only rows count
                       },
                       0.0, 0.0});
  }
}

void add_attention(std::vector<Case>& out) {
  struct Heads {
    int heads, kv_heads, head_dim;
  };
  struct Shape {
    int n, n_past;
  };
  for (Heads h : {Heads{4, 4, 16}, Heads{4, 2, 16}, Heads{8, 2, 64}, Heads{2, 1, 256}}) {  // 256: opencl max
    for (Shape s : {Shape{1, 0}, Shape{1, 17}, Shape{7, 0}, Shape{5, 12}, Shape{33, 0}, Shape{16, 40}}) {
      out.push_back(Case{"attention_h" + std::to_string(h.heads) + "_kv" + std::to_string(h.kv_heads) + "_d" +
                             std::to_string(h.head_dim) + "_n" + std::to_string(s.n) + "_past" +
                             std::to_string(s.n_past),
                         OpKind::kAttention, "llama-f32",
                         [h, s](Instance& in, const Model&) {
                           const int context = 64, kv_dim = h.kv_heads * h.head_dim, q_dim = h.heads * h.head_dim;
                           const int valid = s.n_past + s.n;
                           in.call.kind = OpKind::kAttention;
                           in.call.n_heads = h.heads;
                           in.call.n_kv_heads = h.kv_heads;
                           in.call.head_dim = h.head_dim;
                           in.call.n_past = s.n_past;
                           in.call.context = context;
                           const bool strided = s.n == 5;
                           in.call.a = in.act("q", s.n, q_dim, q_dim + (strided ? 8 : 0), false, true);
                           float* kc = in.act("k_cache", context, kv_dim, kv_dim, false, true).data;
                           float* vc = in.act("v_cache", kv_dim, context, context, false, true).data;
                           // Positions past n_past + n are not written yet: poison them, so a device
                           // that attends to them (rather than reading and masking) is visibly wrong.
                           for (int p = valid; p < context; ++p)
                             for (int j = 0; j < kv_dim; ++j) kc[p * kv_dim + j] = 1e3f, vc[j * context + p] = 1e3f;
                           in.call.k_cache = kc;
                           in.call.v_cache = vc;
                           in.call.out = in.act("out", s.n, q_dim, q_dim + (strided ? 3 : 0), true, false);
                         },
                         1e-9, 1e-5});
    }
  }
}

void add_elementwise(std::vector<Case>& out) {
  for (OpKind k : {OpKind::kSwiglu, OpKind::kAdd}) {
    for (int n : {1, 7, 33, 300}) {  // 300: a prompt's rows, which the cpu spreads over its threads
      const int cols = k == OpKind::kSwiglu ? 128 : 64;
      out.push_back(Case{std::string(op_kind_name(k)) + "_n" + std::to_string(n) + "_w" + std::to_string(cols), k,
                         "llama-f32",
                         [k, n, cols](Instance& in, const Model&) {
                           in.call.kind = k;
                           in.call.a = in.act("a", n, cols, cols, false, true, 2.0f);
                           in.call.out = in.act("out", n, cols, cols, true, true, 2.0f);
                         },
                         1e-10, 1e-5});
    }
  }
}

void add_strided_elementwise(std::vector<Case>& v) {
  // Rows that are views into wider buffers (ld > cols): a device must run them or refuse them
  // in supports() (opencl once accepted them and then failed in submit).
  const std::vector<Case> strided = {
      Case{"rmsnorm_strided", OpKind::kRmsNorm, "llama-f32",
           [](Instance& in, const Model& m) {
             const Weight& g = layer0(m, &LayerWeights::attn_norm);
             in.call.kind = OpKind::kRmsNorm;
             in.call.weight = &g;
             in.call.eps = m.config().rms_eps;
             in.call.a = in.act("x", 3, g.cols, g.cols + 4, false, true);
             in.call.out = in.act("out", 3, g.cols, g.cols + 4, true, false);
           },
           1e-10, 1e-5},
      Case{"add_strided", OpKind::kAdd, "llama-f32",
           [](Instance& in, const Model&) {
             in.call.kind = OpKind::kAdd;
             in.call.a = in.act("a", 3, 64, 70, false, true);
             in.call.out = in.act("out", 3, 64, 72, true, true);
           },
           1e-10, 1e-5},
      Case{"swiglu_strided", OpKind::kSwiglu, "llama-f32",
           [](Instance& in, const Model&) {
             in.call.kind = OpKind::kSwiglu;
             in.call.a = in.act("a", 3, 128, 136, false, true);
             in.call.out = in.act("out", 3, 128, 132, true, true);
           },
           1e-10, 1e-5},
      Case{"kv_store_strided", OpKind::kKvStore, "llama-f32",
           [](Instance& in, const Model&) {
             in.call.kind = OpKind::kKvStore;
             in.call.a = in.act("k", 3, 32, 64, false, true);  // k and v as views into a wider row
             in.call.b = in.act("v", 3, 32, 64, false, true);
             in.call.k_cache = in.act("k_cache", 16, 32, 32, true, true).data;
             in.call.v_cache = in.act("v_cache", 32, 16, 16, true, true).data;
             in.call.n_past = 4;
             in.call.context = 16;
             in.call.out = in.call.a;
           },
           0.0, 0.0},
  };
  v.insert(v.end(), strided.begin(), strided.end());
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    std::vector<Case> v;
    add_get_rows(v);
    add_rmsnorm(v);
    add_matmul(v);
    add_strided_elementwise(v);
    add_add_bias(v);
    add_rope(v);
    add_kv_store(v);
    add_attention(v);
    add_elementwise(v);
    return v;
  }();
  return all;
}

// ---------------------------------------------------------------------------------------------
// Devices, results and the perf table.

std::shared_ptr<Model> model_for(const std::string& key) {
  static std::map<std::string, std::shared_ptr<Model>> models;
  auto& m = models[key];
  if (!m) m = tandem::testing::load_or_die(conformance_model_path(key));
  return m;
}

// Opening the opencl device builds its kernels, so it is opened once per model and kept until
// the environment tears down. cpu and npu devices are opened fresh per test (cheap, and a fresh
// npu has no graph prepared, which the static-shape check relies on).
struct DeviceCache {
  std::map<std::string, std::unique_ptr<Device>> open;
  std::map<std::string, std::string> unavailable;
};
DeviceCache& device_cache() {
  static DeviceCache* c = new DeviceCache();
  return *c;
}

Result<std::unique_ptr<Device>> open_fresh(const std::string& name, const std::string& model_key, int threads) {
  return open_device(name, model_for(model_key), threads);
}

Device* cached_device(const std::string& name, const std::string& model_key, std::string* why) {
  DeviceCache& c = device_cache();
  const std::string key = name + "/" + model_key;
  if (auto it = c.open.find(key); it != c.open.end()) return it->second.get();
  if (auto it = c.unavailable.find(key); it != c.unavailable.end()) return *why = it->second, nullptr;
  auto d = open_fresh(name, model_key, 2);
  if (!d.ok()) return c.unavailable[key] = *why = d.status().message(), nullptr;
  return (c.open[key] = std::move(*d)).get();
}

bool perf_mode() {
  const char* e = std::getenv("TANDEM_CONFORMANCE_PERF");
  return e && std::string(e) == "1";
}

struct PerfRow {
  size_t case_index;
  std::string device;
  double device_us, wall_us;
};
std::vector<PerfRow>& perf_rows() {
  static std::vector<PerfRow> rows;
  return rows;
}

// Worst NMSE per op and device, printed at exit (the report's summary).
std::map<std::pair<std::string, std::string>, double>& worst_nmse() {
  static std::map<std::pair<std::string, std::string>, double> w;
  return w;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

class ConformanceEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!worst_nmse().empty()) {
      std::printf("\nconformance: worst NMSE per op and device\n");
      for (const auto& [k, v] : worst_nmse()) std::printf("  %-10s %-7s %.3e\n", k.first.c_str(), k.second.c_str(), v);
    }
    if (!perf_rows().empty()) {
      std::printf("\nconformance perf (median of runs; device = Completion::device_seconds)\n");
      std::printf("%-10s %-34s %-7s %12s %12s\n", "op", "shape", "device", "device_us", "wall_us");
      std::vector<PerfRow> rows = perf_rows();
      std::stable_sort(rows.begin(), rows.end(),
                       [](const PerfRow& a, const PerfRow& b) { return a.case_index < b.case_index; });
      for (const PerfRow& r : rows) {
        const Case& c = cases()[r.case_index];
        const std::string op = op_kind_name(c.kind);
        const std::string shape = c.name.rfind(op + "_", 0) == 0 ? c.name.substr(op.size() + 1) : c.name;
        std::printf("%-10s %-34s %-7s %12.1f %12.1f\n", op.c_str(), shape.c_str(), r.device.c_str(),
                    r.device_us, r.wall_us);
      }
    }
    device_cache().open.clear();  // release OpenCL objects before static destruction
  }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new ConformanceEnvironment());

// ---------------------------------------------------------------------------------------------
// Running and comparing.

Instance instantiate(const Case& c, const Model& model) {
  Instance in;
  c.build(in, model);
  return in;
}

// Padding (inputs and outputs) must keep its sentinels on both sides.
void expect_padding_intact(const Instance& in, const std::string& who) {
  for (const auto& b : in.bufs) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < b->mem.size(); ++i) {
      if (i >= kPad && i < kPad + b->n) continue;
      if (!same_bits(b->mem[i], sentinel())) bad++ == 0 ? first = i : 0;
    }
    EXPECT_EQ(bad, 0u) << who << " wrote " << bad << " floats of padding around '" << b->name << "' (first at offset "
                       << int64_t(first) - int64_t(kPad) << " of " << b->n << ")";
  }
}

// Inputs must not change at all.
void expect_inputs_unchanged(const Instance& in, const Instance& init, const std::string& who) {
  for (size_t k = 0; k < in.bufs.size(); ++k) {
    if (in.bufs[k]->output) continue;
    size_t bad = 0;
    for (size_t i = 0; i < in.bufs[k]->mem.size(); ++i) bad += !same_bits(in.bufs[k]->mem[i], init.bufs[k]->mem[i]);
    EXPECT_EQ(bad, 0u) << who << " changed " << bad << " floats of input '" << in.bufs[k]->name << "'";
  }
}

// Compares the device's outputs with the reference's: what the reference left as it was must be
// left bit for bit; what it changed must be finite and within NMSE. Returns the worst NMSE.
double compare_outputs(const Instance& got, const Instance& want, const Instance& init, const std::string& dev) {
  double worst = 0;
  for (size_t k = 0; k < got.bufs.size(); ++k) {
    const Buf& g = *got.bufs[k];
    const Buf& w = *want.bufs[k];
    const Buf& i0 = *init.bufs[k];
    if (!g.output) continue;
    size_t touched = 0, nonfinite = 0, written = 0;
    int64_t first_touched = -1, first_nonfinite = -1;
    double num = 0, den = 1e-30;
    for (size_t i = 0; i < g.n; ++i) {
      const float gv = g.data()[i], wv = w.data()[i], iv = i0.data()[i];
      if (same_bits(wv, iv)) {  // the reference did not write here (or wrote the same value)
        if (!same_bits(gv, iv) && gv != iv) touched++ == 0 ? first_touched = int64_t(i) : 0;
        continue;
      }
      ++written;
      EXPECT_TRUE(std::isfinite(wv)) << "the reference wrote a non-finite value to '" << w.name << "'[" << i << "]";
      if (!std::isfinite(gv)) {
        nonfinite++ == 0 ? first_nonfinite = int64_t(i) : 0;
        continue;
      }
      num += (double(gv) - wv) * (double(gv) - wv);
      den += double(wv) * wv;
    }
    // A pure output (it starts as sentinels) must be written; an in-place one may legitimately
    // come back unchanged (rope at position 0 is the identity).
    if (same_bits(i0.data()[0], sentinel())) {
      EXPECT_GT(written, 0u) << "the reference wrote nothing to '" << g.name << "'";
    }
    EXPECT_EQ(touched, 0u) << dev << " wrote " << touched << " floats of '" << g.name
                           << "' that it must leave alone (first at " << first_touched << ")";
    EXPECT_EQ(nonfinite, 0u) << dev << " left " << nonfinite << " non-finite floats in '" << g.name
                             << "' (first at " << first_nonfinite << ")";
    worst = std::max(worst, num / den);
  }
  return worst;
}

Status run_once(Device& d, const OpCall& call, double* device_s = nullptr) {
  auto r = d.submit(call);
  if (!r.ok()) return r.status();
  Status s = (*r)->wait();
  if (device_s) *device_s = (*r)->device_seconds();
  return s;
}

// Runs one case on one device against the cpu reference (checks as EXPECTs; GTEST_SKIP when the
// device refuses the case). Returns the NMSE, or -1 when it did not get that far.
void check_case(const std::string& dev_name, Device& dev, const Case& c, size_t index, double* nmse = nullptr) {
  if (nmse) *nmse = -1;
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);  // the reference GEMM is fp32, not bf16 prefill
  std::shared_ptr<Model> model = model_for(c.model);
  if (!model) {
    ADD_FAILURE() << "model " << c.model;
    return;
  }
  // The reference: the cpu device, one thread (so a 2-thread cpu under test checks the split).
  auto ref = open_fresh("cpu", c.model, 1);
  if (!ref.ok()) {
    ADD_FAILURE() << ref.status().message();
    return;
  }
  Instance want = instantiate(c, *model), got = instantiate(c, *model), init = instantiate(c, *model);
  if (Status v = validate_call(want.call); !v.ok()) {
    ADD_FAILURE() << v.message();
    return;
  }
  if (Status rs = run_once(**ref, want.call); !rs.ok()) {
    ADD_FAILURE() << "reference: " << rs.message();
    return;
  }
  expect_padding_intact(want, "the cpu reference");

  // The capability and the caps agree: a device that runs only prepared shapes can prepare them.
  EXPECT_EQ(dev.static_graphs() != nullptr, !dev.caps().dynamic_shapes) << dev_name;
  if (!dev.caps().dynamic_shapes) {
    EXPECT_FALSE(dev.supports(got.call)) << "a static-graph device must refuse an unprepared shape";
    EXPECT_FALSE(dev.submit(got.call).ok()) << "a static-graph device must not run an unprepared shape";
    auto p = prepare_graph(dev, GraphSpec::of(got.call));
    if (!p.ok()) {
      GTEST_SKIP() << dev_name << " prepares no graph for " << c.name << ": " << p.status().message();
      return;
    }
    EXPECT_FALSE(p->cached);
    auto again = prepare_graph(dev, GraphSpec::of(got.call));
    if (!again.ok()) {
      ADD_FAILURE() << again.status().message();
      return;
    }
    EXPECT_TRUE(again->cached);
    if (!dev.supports(got.call)) {
      ADD_FAILURE() << "prepared, yet refused: " << got.call.describe();
      return;
    }
  }
  if (!dev.supports(got.call)) {
    GTEST_SKIP() << dev_name << " does not support " << got.call.describe();
    return;
  }

  if (Status s = run_once(dev, got.call); !s.ok()) {
    ADD_FAILURE() << dev_name << " accepted (supports) but failed " << got.call.describe() << ": " << s.message();
    return;
  }
  expect_padding_intact(got, dev_name);
  expect_inputs_unchanged(got, init, dev_name);
  const double err = compare_outputs(got, want, init, dev_name);
  const double bound = dev.caps().kind == DeviceKind::kNpu ? c.nmse_npu : c.nmse_fp32;
  EXPECT_LE(err, bound) << dev_name << " " << c.name << ": NMSE " << err;
  if (nmse) *nmse = err;

  if (perf_mode() && index != size_t(-1)) {
    constexpr int kReps = 7;
    std::vector<double> dev_s, wall_s;
    for (int r = 0; r < kReps + 1; ++r) {
      double ds = 0;
      const auto t0 = std::chrono::steady_clock::now();
      const Status ps = run_once(dev, got.call, &ds);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!ps.ok()) {
        ADD_FAILURE() << ps.message();
        return;
      }
      if (r == 0) continue;  // warm-up
      dev_s.push_back(ds);
      wall_s.push_back(wall);
    }
    perf_rows().push_back(PerfRow{index, dev_name, median(dev_s) * 1e6, median(wall_s) * 1e6});
  }
}

class Conformance : public ::testing::TestWithParam<std::tuple<std::string, size_t>> {};

TEST_P(Conformance, MatchesCpuReference) {
  const auto& [dev_name, index] = GetParam();
  const Case& c = cases()[index];
  ASSERT_TRUE(model_for(c.model)) << "model " << c.model;
  // The device under test.
  std::unique_ptr<Device> fresh;
  Device* dev = nullptr;
  if (dev_name == "opencl") {
    std::string why;
    dev = cached_device(dev_name, c.model, &why);
    if (!dev) TANDEM_OPENCL_MISSING("opencl is not available here: " << why);
  } else {
    auto d = open_fresh(dev_name, c.model, 2);
    if (!d.ok()) GTEST_SKIP() << dev_name << " is not available here: " << d.status().message();
    fresh = std::move(*d);
    dev = fresh.get();
  }
  double err = -1;
  check_case(dev_name, *dev, c, index, &err);
  if (err >= 0) {
    double& worst = worst_nmse()[{op_kind_name(c.kind), dev_name}];
    worst = std::max(worst, err);
  }
}

std::vector<size_t> all_case_indices() {
  std::vector<size_t> v(cases().size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllOps, Conformance,
                         ::testing::Combine(::testing::Values("cpu", "opencl", "npu"),
                                            ::testing::ValuesIn(all_case_indices())),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + cases()[std::get<1>(info.param)].name;
                         });

// ---------------------------------------------------------------------------------------------
// The checks themselves: a cpu device that misbehaves in one chosen way must be caught.

enum class Fault { kWriteBefore, kWriteAfter, kWriteOutsideRange, kNan, kOff, kTouchInput };

class FaultyDevice final : public Device {
 public:
  FaultyDevice(std::unique_ptr<Device> inner, Fault f) : inner_(std::move(inner)), fault_(f) {}
  std::string name() const override { return "faulty"; }
  DeviceCaps caps() const override { return inner_->caps(); }
  bool supports(const OpCall& c) const override { return inner_->supports(c); }
  Result<std::unique_ptr<Completion>> submit(const OpCall& c) override {
    auto r = inner_->submit(c);
    if (!r.ok() || !(*r)->wait().ok()) return r;
    float* y = c.out.data;  // every buffer has kPad floats of padding, so these writes stay in memory
    switch (fault_) {
      case Fault::kWriteBefore: y[-1] = 0; break;
      case Fault::kWriteAfter: y[(c.out.rows - 1) * c.out.ld + c.out.cols] = 0; break;
      case Fault::kWriteOutsideRange: y[c.row_begin - 1] = 0; break;
      case Fault::kNan: y[c.row_begin] = NAN; break;
      case Fault::kOff: y[c.row_begin] *= 1.01f; break;
      case Fault::kTouchInput: c.a.data[0] += 1; break;
    }
    return r;
  }

 private:
  std::unique_ptr<Device> inner_;
  Fault fault_;
};

TEST(ConformanceChecks, CatchAFaultyDevice) {
  const Case* mm = nullptr;
  for (const Case& c : cases())
    if (c.name == "matmul_f32_m2_r32_96") mm = &c;
  ASSERT_NE(mm, nullptr);
  auto faulty = [&](Fault f) {
    auto d = open_fresh("cpu", mm->model, 2);
    EXPECT_TRUE(d.ok());
    return FaultyDevice(std::move(*d), f);
  };
  {
    FaultyDevice d = faulty(Fault::kWriteBefore);
    EXPECT_NONFATAL_FAILURE(check_case("faulty", d, *mm, size_t(-1)), "floats of padding around 'y'");
  }
  {
    FaultyDevice d = faulty(Fault::kWriteAfter);
    EXPECT_NONFATAL_FAILURE(check_case("faulty", d, *mm, size_t(-1)), "floats of padding around 'y'");
  }
  {
    FaultyDevice d = faulty(Fault::kWriteOutsideRange);
    EXPECT_NONFATAL_FAILURE(check_case("faulty", d, *mm, size_t(-1)), "that it must leave alone");
  }
  {
    FaultyDevice d = faulty(Fault::kNan);
    EXPECT_NONFATAL_FAILURE(check_case("faulty", d, *mm, size_t(-1)), "non-finite");
  }
  {
    FaultyDevice d = faulty(Fault::kOff);
    EXPECT_NONFATAL_FAILURE(check_case("faulty", d, *mm, size_t(-1)), "NMSE");
  }
  {
    FaultyDevice d = faulty(Fault::kTouchInput);
    EXPECT_NONFATAL_FAILURE(check_case("faulty", d, *mm, size_t(-1)), "of input 'x'");
  }
  {
    auto d = open_fresh("cpu", mm->model, 2);
    ASSERT_TRUE(d.ok());
    double err = -1;
    check_case("cpu", **d, *mm, size_t(-1), &err);  // and a sound device passes
    EXPECT_GE(err, 0.0);
  }
}

// ---------------------------------------------------------------------------------------------
// Device bugs found by this test, left as failing repros for src/ (the lead fixes them).

// opencl: supports() accepts rows with a stride (ld > cols) for rmsnorm, swiglu, add and
// kv_store, but submit() then refuses them ("opencl rmsnorm: strided rows", ...). The contract
// says supports() is per call: an executor that asks and is told yes must be able to submit.
// The cpu device runs all four. Fix: refuse strided rows in OpenclDevice::supports() (or run them).

// Every op kind has at least one case, and names are unique (gtest would reject duplicates, but
// a missing op would pass silently).
TEST(ConformanceCases, CoverEveryOp) {
  std::map<OpKind, int> per_op;
  for (const Case& c : cases()) per_op[c.kind]++;
  for (OpKind k : {OpKind::kGetRows, OpKind::kRmsNorm, OpKind::kMatmul, OpKind::kAddBias, OpKind::kRope,
                   OpKind::kKvStore, OpKind::kAttention, OpKind::kSwiglu, OpKind::kAdd})
    EXPECT_GT(per_op[k], 0) << op_kind_name(k);
}

}  // namespace
}  // namespace tandem::devices
