#include "hexagon/host/dsp_transport.h"

#include <algorithm>
#include <array>

namespace tandem::hexagon {

std::string method_name(uint32_t method) {
  switch (method) {
    case THX_METHOD_PING: return "ping";
    case THX_METHOD_QUANTIZE: return "quantize";
    case THX_METHOD_MATMUL_Q8_0: return "matmul_q8_0";
    case THX_METHOD_MATMUL_Q4_0: return "matmul_q4_0";
    case THX_METHOD_QUIT: return "quit";
    case THX_METHOD_PROGRAM: return "program";
    default: return "method " + std::to_string(method);
  }
}

const char* dsp_status_text(uint32_t status) {
  switch (status) {
    case THX_OK: return "ok";
    case THX_E_HANDLE: return "no such handle";
    case THX_E_METHOD: return "no such method";
    case THX_E_BOUNDS: return "a buffer leaves the pool or its length overflows";
    case THX_E_ARGS: return "bad scalar arguments or overlapping buffers";
    case THX_E_ALIGN: return "a buffer is misaligned for its elements";
    case THX_E_TOO_LARGE: return "the shape is too large for the DSP or its buffers";
    default: return "unknown status";
  }
}

Status DspTransport::refusal(uint32_t method, uint32_t status) const {
  const std::string m = "hexagon DSP refused " + method_name(method) + ": " + dsp_status_text(status) + " (status " +
                        std::to_string(status) + ")";
  return status == THX_E_BOUNDS || status == THX_E_TOO_LARGE ? OutOfRange(m) : InvalidArgument(m);
}

Status DspTransport::invoke_checked(const DspCall& c) {
  TANDEM_ASSIGN_OR_RETURN(DspReply r, invoke(c));
  return r.status == THX_OK ? Status::Ok() : refusal(c.method, r.status);
}

namespace {

// A call of four buffers and a shape: matmul's and a program's.
DspCall shaped_call(uint32_t method, WeightFormat format, std::array<PoolBuffer, THX_MAX_BUFFERS> bufs, uint32_t n,
                    uint32_t in, uint32_t out) {
  DspCall c;
  c.method = method;
  for (int i = 0; i < THX_MAX_BUFFERS; ++i) c.buf[i] = bufs[size_t(i)];
  c.n = n;
  c.in = in;
  c.out = out;
  c.format = uint32_t(format);
  return c;
}

}  // namespace

Result<uint32_t> DspTransport::ping(uint32_t echo) {
  DspCall c;
  c.method = THX_METHOD_PING;
  c.arg[0] = echo;
  TANDEM_ASSIGN_OR_RETURN(DspReply r, invoke(c));
  if (r.status != THX_OK) return refusal(c.method, r.status);
  if (r.result[1] != echo)
    return Internal("hexagon DSP ping echoed " + std::to_string(r.result[1]) + " for " + std::to_string(echo));
  return r.result[0];
}

Status DspTransport::quantize(PoolBuffer x, PoolBuffer q, PoolBuffer scales, uint32_t n, uint32_t in) {
  DspCall c;
  c.method = THX_METHOD_QUANTIZE;
  c.buf[0] = x;
  c.buf[1] = q;
  c.buf[2] = scales;
  c.n = n;
  c.in = in;
  c.format = THX_FORMAT_Q8_0;
  return invoke_checked(c);
}

Status DspTransport::matmul(WeightFormat format, PoolBuffer weights, PoolBuffer q, PoolBuffer scales, PoolBuffer y,
                          uint32_t n, uint32_t in, uint32_t out) {
  const DspCall c = shaped_call(format == WeightFormat::kQ8_0 ? THX_METHOD_MATMUL_Q8_0 : THX_METHOD_MATMUL_Q4_0, format,
                                {weights, q, scales, y}, n, in, out);
  return invoke_checked(c);
}

Status DspTransport::run_program(uint32_t index, WeightFormat format, PoolBuffer x, PoolBuffer scratch, PoolBuffer weights,
                               PoolBuffer y, uint32_t n, uint32_t in, uint32_t out) {
  DspCall c = shaped_call(THX_METHOD_PROGRAM, format, {x, scratch, weights, y}, n, in, out);
  c.arg[0] = index;
  return invoke_checked(c);
}

Result<PoolBuffer> bump_allocate(size_t* next, size_t map_bytes, size_t bytes, size_t align) {
  if (align == 0 || (align & (align - 1)) != 0) return InvalidArgument("hexagon: alignment must be a power of two");
  const size_t at = (*next + align - 1) & ~(align - 1);
  const size_t end_of_pool = map_bytes - THX_GUARD_BYTES;
  if (at > end_of_pool || bytes > end_of_pool - at)
    return OutOfRange("hexagon: the pool has " + std::to_string(end_of_pool - std::min(at, end_of_pool)) + " bytes left, " +
                      std::to_string(bytes) + " asked");
  *next = at + bytes;
  return PoolBuffer{uint32_t(at), uint32_t(bytes)};
}

}  // namespace tandem::hexagon
