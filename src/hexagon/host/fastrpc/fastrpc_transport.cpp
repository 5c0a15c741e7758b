#include "hexagon/host/fastrpc/fastrpc_transport.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hexagon/host/fastrpc/fastrpc_uapi.h"

namespace tandem::hexagon {

namespace {

using fastrpc::InvokeArg;

std::string errno_text(int e) { return std::strerror(e); }

// Our module's one method beside the handle64 interface's open (0) and close (1).
constexpr uint32_t kMethodCall = 2;

// The command slot's words, protocol.h offsets 256..335 (handle .. arg[3]).
struct SlotIn {
  uint32_t handle, method, status, reserved;
  uint32_t buf[THX_MAX_BUFFERS][2];
  uint32_t n, in, out, format;
  uint32_t arg[4];
};
struct SlotOut {
  uint32_t status;
  uint32_t result[4];
};
static_assert(sizeof(SlotIn) == 80 && sizeof(SlotOut) == 20);

std::string find_shell() {
  for (const char* dir : {"/vendor/dsp/cdsp/", "/vendor/dsp/", "/dsp/cdsp/", "/dsp/", "/usr/lib/dsp/cdsp/", "/usr/lib/dsp/"}) {
    const std::string p = std::string(dir) + "fastrpc_shell_unsigned_3";
    if (access(p.c_str(), R_OK) == 0) return p;
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<FastrpcTransport>> FastrpcTransport::open(const FastrpcOptions& options) {
  std::unique_ptr<FastrpcTransport> t(new FastrpcTransport());
  const char* env = std::getenv("TANDEM_FASTRPC_DEVICE");
  t->device_ = env && *env ? env : options.device;
  t->fd_ = ::open(t->device_.c_str(), O_RDWR | O_CLOEXEC);
  if (t->fd_ < 0)
    return Unsupported("hexagon: FastRPC: cannot open " + t->device_ + ": " + errno_text(errno) +
                       " (the cDSP node of a Snapdragon's FastRPC driver; elsewhere the DSP runs under qemu-hexagon)");
  const std::string shell = options.shell.empty() ? find_shell() : options.shell;
  if (shell.empty())
    return NotFound("hexagon: FastRPC: no fastrpc_shell_unsigned_3 in /vendor/dsp/cdsp, /vendor/dsp, /dsp or /usr/lib/dsp");
  TANDEM_RETURN_IF_ERROR(t->create_protection_domain(shell));
  TANDEM_RETURN_IF_ERROR(t->map_pool(THX_HEADER_BYTES + options.pool_bytes + THX_GUARD_BYTES));
  TANDEM_RETURN_IF_ERROR(t->open_module(options.module_uri));
  return t;
}

FastrpcTransport::~FastrpcTransport() {
  if (base_) munmap(base_, map_bytes_);
  if (pool_fd_ >= 0) ::close(pool_fd_);
  if (fd_ >= 0) ::close(fd_);  // the driver releases the protection domain
}

Result<int> FastrpcTransport::alloc_dma_buf(size_t bytes, void** mapping) {
  fastrpc::AllocDmaBuf a{-1, 0, bytes};
  if (ioctl(fd_, fastrpc::kIoctlAllocDmaBuf, &a) != 0)
    return IoError("hexagon: FastRPC: " + device_ + ": a dma-buf of " + std::to_string(bytes) + " bytes: " + errno_text(errno));
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    ::close(a.fd);
    return IoError("hexagon: FastRPC: mapping a dma-buf: " + errno_text(e));
  }
  *mapping = p;
  return a.fd;
}

Status FastrpcTransport::create_protection_domain(const std::string& shell_path) {
  std::ifstream in(shell_path, std::ios::binary);
  const std::vector<char> shell((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (shell.empty() || shell.size() > (size_t(2) << 20))
    return InvalidArgument("hexagon: FastRPC: " + shell_path + ": " + std::to_string(shell.size()) +
                           " bytes is not a shell (the driver takes 1 byte .. 2 MiB)");
  // The driver maps the shell from a dma-buf: a plain pointer would be read as a kernel address.
  void* mapping = nullptr;
  TANDEM_ASSIGN_OR_RETURN(const int shell_fd, alloc_dma_buf(shell.size(), &mapping));
  std::memcpy(mapping, shell.data(), shell.size());
  fastrpc::InitCreate c{uint32_t(shell.size()), shell_fd, fastrpc::kUnsignedModule, 0, uint64_t(uintptr_t(mapping))};
  const int r = ioctl(fd_, fastrpc::kIoctlInitCreate, &c);
  const int e = errno;
  munmap(mapping, shell.size());
  ::close(shell_fd);
  if (r != 0)
    return IoError("hexagon: FastRPC: " + device_ + ": creating an unsigned protection domain with " + shell_path + ": " +
                   errno_text(e) + " (ECONNREFUSED: this cDSP takes no unsigned PD)");
  return Status::Ok();
}

Status FastrpcTransport::map_pool(size_t bytes) {
  void* mapping = nullptr;
  TANDEM_ASSIGN_OR_RETURN(pool_fd_, alloc_dma_buf(bytes, &mapping));
  base_ = static_cast<uint8_t*>(mapping);
  map_bytes_ = bytes;
  fastrpc::MemMap m{};
  m.fd = pool_fd_;
  m.flags = fastrpc::kMapFd;
  m.vaddrin = uint64_t(uintptr_t(mapping));
  m.length = bytes;
  if (ioctl(fd_, fastrpc::kIoctlMemMap, &m) != 0)
    return IoError("hexagon: FastRPC: mapping the " + std::to_string(bytes) + "-byte pool into the DSP: " + errno_text(errno));
  // The header as protocol.h lays it out: the DSP side checks it as the qemu runtime does.
  auto* h = reinterpret_cast<thx_header*>(base_);
  h->magic = THX_MAGIC;
  h->version = THX_VERSION;
  h->header_bytes = THX_HEADER_BYTES;
  h->map_bytes = uint32_t(bytes);
  return Status::Ok();
}

Status FastrpcTransport::open_module(const std::string& uri) {
  uint32_t prim_in[2] = {uint32_t(uri.size() + 1), 255};
  uint32_t prim_out[2] = {0, 0};
  char dlerror[256] = {0};
  InvokeArg args[4] = {
      {uint64_t(uintptr_t(prim_in)), sizeof prim_in, -1, 0},
      {uint64_t(uintptr_t(uri.c_str())), uri.size() + 1, -1, 0},
      {uint64_t(uintptr_t(prim_out)), sizeof prim_out, -1, 0},
      {uint64_t(uintptr_t(dlerror)), 255, -1, 0},
  };
  fastrpc::Invoke inv{fastrpc::kRemotectlHandle, fastrpc::scalars(fastrpc::kRemotectlOpen, 2, 2),
                      uint64_t(uintptr_t(args))};
  const int r = ioctl(fd_, fastrpc::kIoctlInvoke, &inv);
  if (r != 0 || prim_out[1] != 0)
    return IoError("hexagon: FastRPC: opening " + uri + ": " + (r != 0 ? "ioctl " + std::to_string(r) + " " + errno_text(errno)
                                                                      : "error " + std::to_string(prim_out[1])) +
                   (dlerror[0] ? std::string(": ") + dlerror : std::string()) +
                   " (tandem serves no reverse-RPC file reads yet: the module must be where the DSP loads it itself)");
  module_ = prim_out[0];
  return Status::Ok();
}

Result<DspReply> FastrpcTransport::invoke(const DspCall& call, std::optional<std::chrono::milliseconds>) {
  if (dead_) return Internal("hexagon: FastRPC: the protection domain is gone");
  SlotIn in{call.handle, call.method, 0, 0, {}, call.n, call.in, call.out, call.format, {}};
  for (int i = 0; i < THX_MAX_BUFFERS; ++i) {
    in.buf[i][0] = call.buf[i].offset;
    in.buf[i][1] = call.buf[i].bytes;
  }
  std::memcpy(in.arg, call.arg, sizeof in.arg);
  SlotOut out{};
  InvokeArg args[2] = {{uint64_t(uintptr_t(&in)), sizeof in, -1, 0}, {uint64_t(uintptr_t(&out)), sizeof out, -1, 0}};
  fastrpc::Invoke inv{module_, fastrpc::scalars(kMethodCall, 1, 1), uint64_t(uintptr_t(args))};
  const auto t0 = std::chrono::steady_clock::now();
  int r;
  do r = ioctl(fd_, fastrpc::kIoctlInvoke, &inv);
  while (r != 0 && errno == EINTR);
  if (r != 0) {
    dead_ = true;  // the driver's wait is its own: a failed invoke ends this transport
    return Internal("hexagon: FastRPC: invoke of " + method_name(call.method) + " failed: " +
                    (r < 0 ? errno_text(errno) : "DSP error " + std::to_string(r)));
  }
  DspReply reply;
  reply.status = out.status;
  std::memcpy(reply.result, out.result, sizeof reply.result);
  reply.round_trip_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  return reply;
}

Result<PoolBuffer> FastrpcTransport::allocate(size_t bytes, size_t align) {
  return bump_allocate(&next_, map_bytes_, bytes, align);
}

Status FastrpcTransport::close() {
  dead_ = true;
  return Status::Ok();
}

}  // namespace tandem::hexagon
