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
#include "hexagon/host/dsp_transport.h"
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

class DspSession final : public DspTransport {
 public:
  static Result<std::unique_ptr<DspSession>> open(const DspSessionOptions& options = {});
  ~DspSession();  // kills and reaps the process if it still runs

  // QUIT, then waits for the process to exit (kills it after 2 s).
  Status close() override;

  Result<DspReply> invoke(const DspCall& call, std::optional<std::chrono::milliseconds> timeout = std::nullopt) override;

  // The pool: a bump allocator over [THX_HEADER_BYTES, size - THX_GUARD_BYTES).
  Result<PoolBuffer> allocate(size_t bytes, size_t align = THX_ACT_ROW_ALIGN) override;
  void reset_pool() override { next_ = THX_HEADER_BYTES; }
  uint8_t* host(PoolBuffer b) const override { return shm_.data() + b.offset; }
  std::string describe() const override { return "qemu-hexagon pid " + std::to_string(process_.pid()); }
  size_t map_bytes() const { return shm_.size(); }

  pid_t pid() const { return process_.pid(); }
  bool alive() const override { return !dead_; }
  // True while the DSP has taken up a command and not completed it.
  bool command_running() const;
  int64_t last_round_trip_ns() const { return last_round_trip_ns_; }

 private:
  DspSession(ShmFile shm, DspProcess process, const DspSessionOptions& options);
  thx_header* header() const { return reinterpret_cast<thx_header*>(shm_.data()); }
  Status wait_until_serving(std::chrono::milliseconds timeout);
  Status dead_status() const;

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
