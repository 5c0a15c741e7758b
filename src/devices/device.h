// The device contract: what every processor tandem runs on offers to the executor.
//
// Small on purpose (ggml-backend style): identity and capabilities, `supports()` per call,
// asynchronous `submit()` returning a completion, and, for static-graph devices (NPUs),
// `prepare()` of a graph for one static shape, cached, with its cost measured and reported.
// Invariant checks that hold for every device (shapes, ranges, static-shape refusal) live in
// validate_call() beside the contract, not in each device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model.h"

namespace tandem::devices {

enum class DeviceKind { kCpu, kGpu, kNpu };
const char* device_kind_name(DeviceKind k);

struct DeviceCaps {
  DeviceKind kind = DeviceKind::kCpu;
  bool dynamic_shapes = true;   // false: only shapes prepared ahead of time run
  bool unified_memory = true;   // host memory is mapped by the device, never copied
  bool async = false;           // submit() returns before the work is done
  std::string detail;           // one line: ISA, OpenCL version, NPU target, ...
};

// The ops of the forward pass, as every device receives them.
enum class OpKind { kGetRows, kRmsNorm, kMatmul, kAddBias, kRope, kKvStore, kAttention, kSwiglu, kAdd };
const char* op_kind_name(OpKind k);

// An fp32 activation in shared memory: rows x cols, row stride ld (elements).
struct Act {
  float* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
  // Rows the underlying buffer holds from `data` on (0: just `rows`). Rows past `rows` are
  // scratch this call may not rely on: a static-shape device may pad into them in place, reading
  // whatever is there and writing results nobody reads, instead of copying into a staging buffer.
  int64_t capacity = 0;
  int64_t capacity_rows() const { return capacity > rows ? capacity : rows; }
};

// One op invocation with everything a device needs. Which fields an op reads:
//   get_rows   weight (embedding), ids[out.rows]            -> out
//   rmsnorm    a, weight (gain), eps                        -> out
//   matmul     a (x), weight rows [row_begin, row_end)      -> out columns [row_begin, row_end)
//              (a row range is how a weight-centric split gives each device its share; each
//              device writes only its columns, so merging a split costs nothing)
//   add_bias   weight (bias)                                -> out (in place)
//   rope       cos/sin [out.rows x head_dim/2], n_heads, head_dim, half_split -> out (in place)
//   kv_store   a (k), b (v), kv_dim = a.cols, n_past, context -> k_cache, v_cache
//   attention  a (q), k_cache, v_cache, n_heads, n_kv_heads, head_dim, n_past, context -> out
//   swiglu     a (up)                                       -> out (gate, in place)
//   add        a                                            -> out (in place, residual)
struct OpCall {
  OpKind kind = OpKind::kMatmul;
  const Weight* weight = nullptr;
  int64_t row_begin = 0, row_end = 0;
  Act a, b, out;
  const int32_t* ids = nullptr;
  float eps = 0;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0, n_past = 0, context = 0;
  const float* cos = nullptr;
  const float* sin = nullptr;
  bool half_split = false;
  float* k_cache = nullptr;  // keys [context x kv_dim]
  float* v_cache = nullptr;  // values transposed [kv_dim x context]

  // A matmul of weight rows [row_begin, row_end) of x (m rows, stride ldx) into y (stride ldy).
  static OpCall matmul(const Weight* w, int64_t row_begin, int64_t row_end, const float* x, int64_t m,
                       int64_t ldx, float* y, int64_t ldy);
  std::string describe() const;  // for errors and traces
};

// A graph a static-shape device builds ahead of time: one op at a fixed shape (for a matmul,
// a weight's row range at a fixed number of activation rows; for an elementwise op, its rows x
// cols, and for rmsnorm the gain weight and eps that are baked into the graph).
struct GraphSpec {
  OpKind kind = OpKind::kMatmul;
  const Weight* weight = nullptr;
  int64_t row_begin = 0, row_end = 0;
  int64_t m = 0;     // activation rows
  int64_t cols = 0;  // output columns (the full width; a matmul writes [row_begin, row_end) of it)
  float eps = 0;     // rmsnorm
  static GraphSpec of(const OpCall& call);
  std::string key() const;  // identifies the graph in the device's cache
};

struct PrepareReport {
  bool cached = false;        // the graph was already built
  double prepare_seconds = 0; // cost of building it (measured, or modeled for an emulated NPU)
};

// Completion of submitted work. wait() returns the work's status (a failed kernel reports here).
class Completion {
 public:
  virtual ~Completion() = default;
  virtual Status wait() = 0;
  virtual bool ready() = 0;
  // Time the device spent on the work: measured, or modeled for an emulated device.
  virtual double device_seconds() const = 0;
};

// Work that had already finished when submit() returned (devices that run synchronously on
// their worker thread: the cpu, the emulated npu).
class FinishedCompletion final : public Completion {
 public:
  FinishedCompletion(Status status, double seconds) : status_(std::move(status)), seconds_(seconds) {}
  Status wait() override { return status_; }
  bool ready() override { return true; }
  double device_seconds() const override { return seconds_; }

 private:
  Status status_;
  double seconds_;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual DeviceCaps caps() const = 0;
  virtual bool supports(const OpCall& call) const = 0;
  virtual Result<std::unique_ptr<Completion>> submit(const OpCall& call) = 0;
  // Maps a block of the shared memory pool for the device (once, up front): afterwards every
  // pointer inside it is used in place. Devices that address host memory directly need nothing.
  virtual Status map_shared_memory(void* base, size_t bytes) { return Status::Ok(); }
  // Static-graph devices build graphs here; dynamic devices need not override it.
  virtual Result<PrepareReport> prepare(const GraphSpec& spec);
  // Total prepare time spent so far (reported by tools).
  virtual double prepare_seconds_total() const { return 0.0; }
  // Fast synchronization (HeteroInfer): a device that can write a completion flag into shared
  // memory after each kernel does so into `flag` (8 bytes of the mapped pool, 0 at first; each
  // kernel stores its sequence number there), and its completions' ready() then reads the flag
  // instead of asking the driver. false: the device cannot, ready() keeps asking the driver.
  virtual bool use_completion_flag(uint64_t* flag) { return false; }
  // Bytes copied between host and device memory so far (0 on unified memory used in place).
  virtual uint64_t bytes_copied() const { return 0; }
};

// Checks every device's preconditions; the message names the op, the field and the value.
Status validate_call(const OpCall& call);

}  // namespace tandem::devices
