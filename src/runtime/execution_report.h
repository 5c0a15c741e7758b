// What a forward pass did, for people (`tandem run -v`, `tandem bench`) and tools (JSON): the
// memory pool's layout, bytes copied between devices, the NPU's graph builds and fallbacks, and
// per-device work. Every Forward fills what applies to it; the rest stays zero.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/memory_pool.h"

namespace tandem {

struct DeviceUsage {
  uint64_t tasks = 0;
  double busy_seconds = 0;    // wall time its worker spent inside its kernels
  double device_seconds = 0;  // time the device reports (modeled for the emulated NPU)
  uint64_t queued_ahead = 0;  // kernels queued while a same-device dependency was in flight
};

struct ExecutionReport {
  std::string forward;  // what ran: "op graph on cpu", "opencl+npu hybrid", ...
  // Memory pool: one block; a few activation slots reused by every layer.
  uint64_t pool_bytes = 0;
  uint64_t pool_regions = 0;
  uint64_t activation_slots = 0;
  int slot_layers = 0;
  // Copies: host merge steps (padding staging) and host<->device copies inside devices. On
  // unified memory used in place both stay 0 for every strategy without padding.
  uint64_t host_bytes_copied = 0;
  uint64_t device_bytes_copied = 0;
  // fp32 bytes of the pool converted to or from a device's precision (the npu's fp16 staging),
  // both ways: the pool holds fp32 activations, so a device computing in fp16 pays this per kernel.
  uint64_t device_bytes_converted = 0;
  // The NPU: graphs built (static shapes), their modeled build time, and fallbacks to the GPU.
  uint64_t npu_graphs = 0;
  uint64_t npu_graphs_compiled = 0;  // of those, programs from a compile cache (tandem compile)
  uint64_t npu_graphs_not_cached = 0;  // built at run time although a compile cache was given
  std::string npu_first_not_cached;    // the first of those and why
  double npu_prepare_seconds = 0;
  uint64_t npu_prepare_fallbacks = 0;  // parts lowered onto the GPU: no graph (per chunk)
  uint64_t npu_run_fallbacks = 0;      // kernels the NPU failed, run again on the GPU
  uint64_t reruns_behind_failure = 0;  // kernels queued behind a failed one: discarded, run again
  // Ops placed past their role's device (it does not support them), and the first, in words.
  uint64_t placed_elsewhere = 0;
  std::string first_placement;
  // Row ops (rmsnorm, swiglu, add) the compiler's placement put on the NPU beside its matmuls
  // (PartitionOptions::npu_row_ops), summed over the chunks of the run.
  uint64_t npu_row_ops = 0;
  uint64_t npu_fused = 0;  // fused rmsnorm + projections (norm_linear programs) launched on the NPU
  // The KV cache: who owns it and in what layout (with a compile cache and an npu: why not the
  // npu's pages), and the appends the npu ran into its pages with the compiler's programs.
  std::string kv;
  uint64_t kv_bytes = 0;  // the cache's memory, every layer, K and V
  uint64_t npu_kv_appends = 0;
  std::string device_note;  // how the device set was completed (the cpu joining an npu alone), or ""
  std::string plan;         // the solver's plan that ran and why each matmul went where, or "" (a fixed strategy)
  // Synchronization (multi-device runs).
  std::string sync;          // "fast" | "blocking" | "" (single device)
  std::string flag_devices;  // fast sync: devices whose completions are flags in the pool
  uint64_t fast_waits = 0, fast_fallbacks = 0;
  uint64_t blocking_by_choice = 0, blocking_no_free_core = 0;  // --sync fast waits that blocked, and why
  uint64_t tasks = 0;
  // Kernels queued on their device while a same-device dependency was still in flight (the
  // driver waits only at cross-device edges).
  uint64_t queued_ahead = 0;
  std::map<std::string, DeviceUsage> devices;
};

// A report with the pool's part filled in.
inline ExecutionReport report_with_pool(std::string forward, const MemoryPool& pool) {
  ExecutionReport r;
  r.forward = std::move(forward);
  r.pool_bytes = pool.total_bytes();
  r.pool_regions = pool.region_count();
  r.activation_slots = pool.slot_count();
  r.slot_layers = pool.slot_layers();
  return r;
}

}  // namespace tandem
