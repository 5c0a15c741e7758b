// How the host talks to a DSP: calls in the FastRPC shape of protocol.h (a handle, a method,
// buffers as (offset, bytes) in a pool both sides map, scalars, a status), over a transport. Two
// transports implement it: DspSession (a qemu-hexagon child sharing a file under /dev/shm: this
// machine) and FastrpcTransport (a Snapdragon's cDSP through the kernel's FastRPC driver). The
// hexagon device holds a DspTransport and does not know which.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "hexagon/protocol.h"
#include "hexagon/reference.h"

namespace tandem::hexagon {

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

// One DSP behind some transport. One call at a time (not thread-safe; the device serializes).
class DspTransport {
 public:
  virtual ~DspTransport() = default;

  // Runs a call. A DSP refusal is a reply with status != THX_OK, not an error: the Status is
  // for the transport (the DSP died, the call timed out).
  virtual Result<DspReply> invoke(const DspCall& call, std::optional<std::chrono::milliseconds> timeout = std::nullopt) = 0;
  // The pool: buffers both sides address by offset.
  virtual Result<PoolBuffer> allocate(size_t bytes, size_t align = THX_ACT_ROW_ALIGN) = 0;
  virtual void reset_pool() = 0;
  virtual uint8_t* host(PoolBuffer b) const = 0;
  virtual bool alive() const = 0;
  // Ends the DSP side (QUIT, or the protection domain's release).
  virtual Status close() = 0;
  // "qemu-hexagon pid 1234", "FastRPC /dev/fastrpc-cdsp": for messages.
  virtual std::string describe() const = 0;

  // Typed calls: a refusal becomes an error Status naming the method and the reason.
  Result<uint32_t> ping(uint32_t echo);  // the DSP's protocol version; checks the echo
  Status quantize(PoolBuffer x, PoolBuffer q, PoolBuffer scales, uint32_t n, uint32_t in);
  Status matmul(WeightFormat format, PoolBuffer weights, PoolBuffer q, PoolBuffer scales, PoolBuffer y, uint32_t n,
                uint32_t in, uint32_t out);
  // A compiled program of the DSP's binary (codegen/kernel_source.h): quantize + multiply in one call.
  Status run_program(uint32_t index, WeightFormat format, PoolBuffer x, PoolBuffer scratch, PoolBuffer weights,
                     PoolBuffer y, uint32_t n, uint32_t in, uint32_t out);

 protected:
  Status refusal(uint32_t method, uint32_t status) const;
  Status invoke_checked(const DspCall& c);  // invoke, a refusal as an error
};

// The pools' bump allocator over [THX_HEADER_BYTES, map_bytes - THX_GUARD_BYTES): *next moves on.
Result<PoolBuffer> bump_allocate(size_t* next, size_t map_bytes, size_t bytes, size_t align);

}  // namespace tandem::hexagon
