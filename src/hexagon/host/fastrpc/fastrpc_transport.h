// The DSP transport of a Snapdragon phone: the cDSP behind the kernel's FastRPC driver, an
// unsigned protection domain of our own (the only kind a retail phone lets an app create), our
// module opened in it, and the pool a dma-buf both sides map. Each protocol.h call is one
// FASTRPC_IOCTL_INVOKE on the module: the command slot's words in, status and results out; the
// buffers stay (offset, bytes) in the mapped pool, validated on the DSP as under qemu.
//
// Status (docs/hexagon.md): written from the driver's uapi and the user library's protocol, built
// in every build, never run -- no phone here. Not done yet: the reverse-RPC file service through
// which the DSP loader reads a module from the host (a module the DSP cannot load from its own
// search path fails to open, with the loader's text), and the DSP-side skel entry of our module.
#pragma once

#include <memory>
#include <string>

#include "hexagon/host/dsp_transport.h"

namespace tandem::hexagon {

struct FastrpcOptions {
  std::string device = "/dev/fastrpc-cdsp";  // TANDEM_FASTRPC_DEVICE overrides
  std::string shell;  // "": fastrpc_shell_unsigned_3 in /vendor/dsp/cdsp, /vendor/dsp, /dsp/cdsp, /dsp, /usr/lib/dsp(/cdsp)
  std::string module_uri = "file:///libtandem_hexagon_skel.so?tandem_thx_skel_handle_invoke&_modver=1.0&_dom=cdsp";
  size_t pool_bytes = size_t(64) << 20;
};

class FastrpcTransport final : public DspTransport {
 public:
  static Result<std::unique_ptr<FastrpcTransport>> open(const FastrpcOptions& options = {});
  ~FastrpcTransport() override;

  Result<DspReply> invoke(const DspCall& call, std::optional<std::chrono::milliseconds> timeout = std::nullopt) override;
  Result<PoolBuffer> allocate(size_t bytes, size_t align = THX_ACT_ROW_ALIGN) override;
  void reset_pool() override { next_ = THX_HEADER_BYTES; }
  uint8_t* host(PoolBuffer b) const override { return base_ + b.offset; }
  bool alive() const override { return !dead_; }
  Status close() override;
  std::string describe() const override { return "FastRPC " + device_; }

 private:
  FastrpcTransport() = default;
  Status create_protection_domain(const std::string& shell_path);
  Status map_pool(size_t bytes);
  Status open_module(const std::string& uri);
  Result<int> alloc_dma_buf(size_t bytes, void** mapping);

  std::string device_;
  int fd_ = -1;             // the driver's node
  int pool_fd_ = -1;        // the pool's dma-buf
  uint8_t* base_ = nullptr;
  size_t map_bytes_ = 0;
  size_t next_ = THX_HEADER_BYTES;
  uint32_t module_ = 0;     // the module's remote handle
  bool dead_ = false;
};

}  // namespace tandem::hexagon
