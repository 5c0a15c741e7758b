// A session with one DSP process: the shared file, the child (qemu-hexagon running the DSP
// binary), a pool allocator over the shared file, and calls in the FastRPC shape (protocol.h).
//
// One call at a time (not thread-safe; the device wrapper serializes). Every call either
// completes, or fails with a Status that says what happened to the DSP: its exit ("hexagon DSP
// process exited with signal 9 (Killed) during matmul_q4_0"), a timeout (the process is then
// killed), or the DSP's own refusal of a bad command (it keeps serving). Once the process is
// gone every later call fails at once with the same story.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <sys/types.h>

#include "core/status.h"
#include "hexagon/host/dsp_process.h"
#include "hexagon/host/shm_file.h"
#include "hexagon/protocol.h"
#include "hexagon/reference.h"

namespace tandem::hexagon {

struct DspSessionOptions {
  size_t pool_bytes = size_t(64) << 20;  // usable pool (the header and the guard come on top)
  std::string qemu;                      // empty: find_hexagon_toolchain()
  std::string dsp_binary;                // empty: find_hexagon_toolchain()
  std::chrono::milliseconds start_timeout{10000};
  std::chrono::milliseconds call_timeout{60000};  // per call, unless the call names its own
};

// A range of the pool, as the protocol names buffers.
struct PoolBuffer {
  uint32_t offset = 0, bytes = 0;
};

// A raw call: what goes into the command slot.
struct DspCall {
  uint32_t handle = THX_HANDLE_KERNELS;
  uint32_t method = 0;
  PoolBuffer buf[THX_MAX_BUFFERS];
  uint32_t n = 0, in = 0, out = 0, format = 0;
  uint32_t arg[4] = {0, 0, 0, 0};
};

struct DspReply {
  uint32_t status = THX_OK;      // the DSP's THX_* code
  uint32_t result[4] = {0, 0, 0, 0};
  int64_t round_trip_ns = 0;      // doorbell rung -> completion flag seen
};

// "ping", "quantize", "matmul_q8_0", "matmul_q4_0", "quit", "program", or "method <id>".
std::string method_name(uint32_t method);
// The DSP status code in words ("a buffer leaves the pool").
const char* dsp_status_text(uint32_t status);

class DspSession {
 public:
  static Result<std::unique_ptr<DspSession>> open(const DspSessionOptions& options = {});
  ~DspSession();  // kills and reaps the process if it still runs

  // QUIT, then waits for the process to exit (kills it after 2 s).
  Status close();

  // Runs a call. A DSP refusal is a reply with status != THX_OK, not an error: the Status is
  // for the transport (the process died, the call timed out).
  Result<DspReply> invoke(const DspCall& call, std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // Typed calls: a refusal becomes an error Status naming the method and the reason.
  Result<uint32_t> ping(uint32_t echo);  // the DSP's protocol version; checks the echo
  Status quantize(PoolBuffer x, PoolBuffer q, PoolBuffer scales, uint32_t n, uint32_t in);
  Status matmul(WeightFormat format, PoolBuffer weights, PoolBuffer q, PoolBuffer scales, PoolBuffer y, uint32_t n,
                uint32_t in, uint32_t out);

  // A compiled program of the binary (codegen/kernel_source.h): quantize + multiply in one call.
  Status run_program(uint32_t index, WeightFormat format, PoolBuffer x, PoolBuffer scratch, PoolBuffer weights,
                     PoolBuffer y, uint32_t n, uint32_t in, uint32_t out);

  // The pool: a bump allocator over [THX_HEADER_BYTES, size - THX_GUARD_BYTES).
  Result<PoolBuffer> allocate(size_t bytes, size_t align = THX_ACT_ROW_ALIGN);
  void reset_pool() { next_ = THX_HEADER_BYTES; }
  uint8_t* host(PoolBuffer b) const { return shm_.data() + b.offset; }
  size_t map_bytes() const { return shm_.size(); }

  pid_t pid() const { return process_.pid(); }
  bool alive() const { return !dead_; }
  // True while the DSP has taken up a command and not completed it.
  bool command_running() const;
  int64_t last_round_trip_ns() const { return last_round_trip_ns_; }

 private:
  DspSession(ShmFile shm, DspProcess process, const DspSessionOptions& options);
  thx_header* header() const { return reinterpret_cast<thx_header*>(shm_.data()); }
  Status wait_until_serving(std::chrono::milliseconds timeout);
  Status dead_status() const;
  Status refusal(uint32_t method, uint32_t status) const;

  ShmFile shm_;
  DspProcess process_;
  DspSessionOptions options_;
  uint32_t seq_ = 0;
  size_t next_ = THX_HEADER_BYTES;
  bool dead_ = false;
  std::string death_;  // what happened, once dead_
  int64_t last_round_trip_ns_ = 0;
};

}  // namespace tandem::hexagon
