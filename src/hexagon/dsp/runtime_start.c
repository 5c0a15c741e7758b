/* The DSP process's entry: `qemu-hexagon tandem_hexagon_dsp <shm path>`. No C library: _start
 * reads argc and argv from the initial stack (Linux's layout, which qemu-hexagon builds: [sp] is
 * argc, [sp + 4 ...] the argv pointers; checked with a probe that printed them), maps the shared
 * file, checks its header and serves. Exit codes: 0 after QUIT, 2 usage, 3 the file could not be
 * opened or mapped, 4 its header is not ours, 5 the host went away. */
#include "hexagon/protocol.h"
#include "runtime.h"
#include "sys.h"

/* r29 is the stack pointer. Align it to 128 so HVX spill slots can be aligned; clear the frame
 * pointer (r30) and the return address so a debugger's backtrace ends here. */
__asm__(
    ".text\n"
    ".global _start\n"
    ".type _start, @function\n"
    "_start:\n"
    "  { r0 = r29; r30 = #0; r31 = #0 }\n"
    "  r29 = and(r29, #-128)\n"
    "  call thx_main\n"
    "  trap0(#0)\n");

static void fail(int code, const char* what, const char* path) {
  thx_write_str(2, "tandem hexagon dsp: ");
  thx_write_str(2, what);
  if (path) {
    thx_write_str(2, " ");
    thx_write_str(2, path);
  }
  thx_write_str(2, "\n");
  thx_exit(code);
}

__attribute__((noreturn, used)) void thx_main(const uint32_t* sp) {
  const uint32_t argc = sp[0];
  const char* const* argv = (const char* const*)(sp + 1);
  if (argc != 2) fail(2, "usage: tandem_hexagon_dsp <shared file under /dev/shm>", 0);
  const char* path = argv[1];
  const long fd = thx_syscall6(THX_SYS_OPENAT, THX_AT_FDCWD, (long)path, THX_O_RDWR, 0, 0, 0);
  if (thx_is_error(fd)) fail(3, "cannot open", path);
  /* The file's size, not the header's claim, bounds the mapping: touching past the file's end
   * would be SIGBUS. */
  uint32_t size64[2] = {0, 0};
  const long r = thx_syscall6(THX_SYS_LLSEEK, fd, 0, 0, (long)size64, THX_SEEK_END, 0);
  if (thx_is_error(r) || size64[1] != 0 || size64[0] < THX_HEADER_BYTES + THX_GUARD_BYTES || size64[0] > 0x80000000u)
    fail(3, "the shared file's size is not usable:", path);
  const uint32_t size = size64[0];
  const long addr = thx_syscall6(THX_SYS_MMAP2, 0, size, THX_PROT_RW, THX_MAP_SHARED, fd, 0);
  if (thx_is_error(addr)) fail(3, "cannot map", path);
  thx_syscall3(THX_SYS_CLOSE, fd, 0, 0);

  volatile struct thx_header* h = (volatile struct thx_header*)addr;
  if (h->magic != THX_MAGIC || h->version != THX_VERSION || h->header_bytes != THX_HEADER_BYTES ||
      h->map_bytes != size)
    fail(4, "the shared file's header is not protocol version 1 of this size:", path);
  const uint32_t parent = (uint32_t)thx_syscall3(THX_SYS_GETPPID, 0, 0, 0);
  h->dsp_version = THX_VERSION;
  h->accepted = h->doorbell;
  __asm__ volatile("barrier" ::: "memory");
  h->dsp_state = THX_DSP_SERVING;

  struct thx_pool pool = {(uint8_t*)addr, size};
  thx_serve(pool, parent);
  h->dsp_state = THX_DSP_EXITED;
  thx_exit(0);
}
