// The Hexagon NPU behind the device contract: matmuls run as Hexagon v66 HVX-128 code in a DSP
// process (src/hexagon: qemu-hexagon here, a cDSP behind FastRPC on a phone), commanded through
// the doorbell + completion-flag protocol in a shared file (hexagon/protocol.h).
//
// Like the phone's NPU it runs static graphs only: prepare() packs a weight's rows into the DSP's
// pool once (Q4_0 / Q8_0 as the model carries them, other types requantized to Q8_0:
// weight_repack.h) and reserves the graph's activation buffers; submit() copies the fp32 rows
// into the pool, has the DSP quantize them to int8 per block of 32 and multiply (vrmpy into
// int32, block scales and the fp32 sum on the scalar core: hexagon/reference.h is that
// arithmetic, bit for bit) and copies the products out. The DSP has integer vectors only (v66:
// no qfloat), so the row ops (rmsnorm, swiglu, add), rope and attention stay on the device in the
// GPU's role; prepare() refuses them with that reason.
//
// With a compile cache (tandem compile: its matmul programs lowered to Hexagon, hexagon/codegen)
// the DSP process runs the cache's binary, its SHA-256 and target checked first, and a graph of a
// shape the cache compiled runs that program: quantize and multiply in one call, in the
// schedule's loop order. Other shapes run the binary's generic kernels.
//
// If the DSP process dies or hangs (the call's timeout is bounded; a hung process is killed),
// the failed call reports it and every later prepare() and supports() says no: the runtime's
// fallback reruns the work on the GPU's role and the run goes on there.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compile_cache/cache.h"
#include "devices/device.h"
#include "hexagon/host/dsp_session.h"
#include "hexagon/host/dsp_transport.h"

namespace tandem::devices {

class HexagonDevice final : public Device, public StaticGraphs, public CompiledPrograms, public MemoryTraffic {
 public:
  // Starts the DSP with a pool sized for the model's layer weights (null model: a small pool, for
  // listing), over the transport TANDEM_HEXAGON_TRANSPORT names: qemu (a qemu-hexagon child) or
  // fastrpc (a phone's cDSP: host/fastrpc); by default qemu where the toolchain is, else fastrpc
  // where the driver's node is. Unsupported, saying what is missing, where neither is.
  static Result<std::unique_ptr<HexagonDevice>> open(std::shared_ptr<const Model> model,
                                                     hexagon::DspSessionOptions options = {});
  // The same device with the DSP's arithmetic computed on the host by the oracle
  // (hexagon/reference.h) instead of by the DSP: the same graphs, refusals and shares, so a run on
  // it is what a run on the DSP must equal bit for bit. Needs no toolchain.
  static std::unique_ptr<HexagonDevice> open_host_oracle();

  std::string name() const override { return session_ ? "hexagon" : "hexagon-ref"; }
  DeviceCaps caps() const override;
  std::string identity() const override;
  bool supports(const OpCall& call) const override;
  Result<std::unique_ptr<Completion>> submit(const OpCall& call) override;
  StaticGraphs* static_graphs() override { return this; }
  CompiledPrograms* compiled_programs() override { return this; }
  const MemoryTraffic* memory_traffic() const override { return this; }

  // The ISA this device runs (a compile cache's Hexagon objects must be built for it).
  static constexpr const char* kTarget = "hexagon-v66-hvx128";

  // CompiledPrograms (before any prepare): the cache's Hexagon objects verified, its binary run.
  Status use_compile_cache(std::shared_ptr<const compile_cache::CompileCache> cache) override;
  uint64_t graphs_from_cache() const override { return from_cache_; }
  uint64_t graphs_not_cached() const override { return not_cached_; }
  std::string first_not_cached() const override { return first_not_cached_; }

  // StaticGraphs
  Result<PrepareReport> prepare(const GraphSpec& spec) override;
  double prepare_seconds_total() const override { return prepare_total_; }
  uint64_t graphs_prepared() const override { return graphs_.size(); }
  // MemoryTraffic: activations in and products out of the DSP's pool, and the weights packed.
  uint64_t bytes_copied() const override { return copied_; }
  uint64_t bytes_converted() const override { return 0; }

  // The DSP process, for tests that kill it mid-run.
  pid_t dsp_pid() const;
  // Calls the DSP completed (two per matmul: quantize, multiply).
  uint64_t dsp_calls() const { return dsp_calls_; }

 private:
  // A buffer of the DSP's pool, or of the host for the oracle.
  struct Buffer {
    hexagon::PoolBuffer pool;
    uint8_t* host = nullptr;
  };
  struct PackedRows {  // a weight's rows [row_begin, row_end) in the DSP's formats
    hexagon::WeightFormat format;
    Buffer buf;
  };
  struct Staging {  // a graph shape's activation buffers; scratch = q then scales
    Buffer x, scratch, q, scales, y;
  };
  struct Graph {
    const PackedRows* weights = nullptr;
    const Staging* staging = nullptr;
    uint32_t m = 0, in = 0, out = 0;
    int64_t program = -1;  // the compile cache's Hexagon program, or -1: the generic kernels
  };
  HexagonDevice(std::unique_ptr<hexagon::DspTransport> s, hexagon::DspSessionOptions o)
      : session_(std::move(s)), options_(std::move(o)) {}
  bool alive() const { return !session_ || session_->alive(); }
  Status dead() const;  // why the DSP can take no more work
  Result<Buffer> allocate(size_t bytes, size_t align);
  Status run_on_host(const Graph& g);  // the oracle's quantize + matmul of the staged rows
  Result<const PackedRows*> pack(const Weight& w, int64_t row_begin, int64_t row_end);
  Result<const Staging*> staging_for(uint32_t m, uint32_t in, uint32_t out);
  Status run(const Graph& g, const OpCall& c);

  mutable std::mutex mu_;  // one DSP call at a time; prepare and submit may come from two threads
  std::unique_ptr<hexagon::DspTransport> session_;   // null: the host oracle computes
  hexagon::DspSessionOptions options_;               // what session_ was opened with
  std::shared_ptr<const compile_cache::CompileCache> cache_;
  uint64_t from_cache_ = 0, not_cached_ = 0;
  std::string first_not_cached_;
  std::vector<std::unique_ptr<uint8_t[]>> host_memory_;  // the oracle's buffers
  std::map<std::string, PackedRows> packed_;
  std::map<std::string, Staging> staging_;
  std::map<std::string, Graph> graphs_;
  double prepare_total_ = 0;
  uint64_t copied_ = 0;
  uint64_t dsp_calls_ = 0;
};

}  // namespace tandem::devices
