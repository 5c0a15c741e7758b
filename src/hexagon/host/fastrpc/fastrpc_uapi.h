// The Linux FastRPC driver's user interface, as far as a client of the cDSP needs it: the ioctl
// numbers and argument layouts of the upstream driver's include/uapi/misc/fastrpc.h (torvalds/linux;
// Qualcomm's newer vendor driver for SM8650 / SM8750 uses the same numbers 1-11 and 13), and the
// invoke scalars of the open-source user library (quic/fastrpc inc/remote.h REMOTE_SCALARS_MAKEX).
// Written from those definitions' published layouts (fixed-width fields, natural alignment), so a
// build needs no kernel headers; the sizes below are checked at compile time.
#pragma once

#include <cstdint>

#include <sys/ioctl.h>

namespace tandem::hexagon::fastrpc {

struct InvokeArg {  // fastrpc_invoke_args
  uint64_t ptr;
  uint64_t length;
  int32_t fd;     // -1: copied inline; a dma-buf fd: mapped zero-copy (ptr must be its mapping)
  uint32_t attr;
};
struct Invoke {  // fastrpc_invoke
  uint32_t handle;
  uint32_t sc;     // scalars(): method and buffer counts
  uint64_t args;   // InvokeArg[]: in buffers, then out buffers
};
struct InitCreate {  // fastrpc_init_create
  uint32_t filelen;
  int32_t filefd;   // the shell's dma-buf
  uint32_t attrs;   // kUnsignedModule for an unsigned protection domain
  uint32_t siglen;
  uint64_t file;    // the shell's mapping
};
struct AllocDmaBuf {  // fastrpc_alloc_dma_buf
  int32_t fd;       // out
  uint32_t flags;
  uint64_t size;
};
struct MemMap {  // fastrpc_mem_map
  int32_t version;
  int32_t fd;
  int32_t offset;
  uint32_t flags;
  uint64_t vaddrin;
  uint64_t length;
  uint64_t vaddrout;  // out: the DSP's address of the mapping
  int32_t attrs;
  int32_t reserved[4];
};
static_assert(sizeof(InvokeArg) == 24 && sizeof(Invoke) == 16 && sizeof(InitCreate) == 24);
static_assert(sizeof(AllocDmaBuf) == 16 && sizeof(MemMap) == 64);

constexpr unsigned long kIoctlAllocDmaBuf = _IOWR('R', 1, AllocDmaBuf);
constexpr unsigned long kIoctlInvoke = _IOWR('R', 3, Invoke);
constexpr unsigned long kIoctlInitCreate = _IOWR('R', 5, InitCreate);
constexpr unsigned long kIoctlMemMap = _IOWR('R', 10, MemMap);

// The values quic/fastrpc's headers produce (computed with its structs), so a layout slip fails the build.
static_assert(kIoctlInvoke == 0xc0105203ul && kIoctlInitCreate == 0xc0185205ul && kIoctlAllocDmaBuf == 0xc0105201ul &&
              kIoctlMemMap == 0xc040520aul);

constexpr uint32_t kUnsignedModule = 1u << 3;  // fastrpc_proc_attr FASTRPC_MODE_UNSIGNED_MODULE
constexpr uint32_t kMapFd = 2;                 // fastrpc_map_flags FASTRPC_MAP_FD
constexpr uint32_t kRemotectlHandle = 0;       // the static handle that opens modules by URI
constexpr uint32_t kRemotectlOpen = 0;         // its method: {namelen, errlen}, name -> {handle, err}, errbuf

// REMOTE_SCALARS_MAKEX(attr, method, in, out, in handles, out handles).
constexpr uint32_t scalars(uint32_t method, uint32_t in, uint32_t out, uint32_t in_handles = 0, uint32_t out_handles = 0) {
  return (method & 0x1f) << 24 | (in & 0xff) << 16 | (out & 0xff) << 8 | (in_handles & 0xf) << 4 | (out_handles & 0xf);
}
static_assert(scalars(kRemotectlOpen, 2, 2) == 0x00020200u);  // remotectl_open's, from quic/fastrpc

}  // namespace tandem::hexagon::fastrpc
