/* Linux system calls from the freestanding DSP process: trap0(#1), the number in r6, arguments
 * in r0-r5, the result (or -errno) in r0. The numbers are the generic table's (asm-generic
 * unistd.h), which Hexagon Linux and qemu-hexagon use; on a 32-bit target futex (98) takes the
 * 32-bit timespec below. */
#ifndef TANDEM_HEXAGON_DSP_SYS_H
#define TANDEM_HEXAGON_DSP_SYS_H

#include <stdint.h>

#define THX_SYS_OPENAT 56
#define THX_SYS_CLOSE 57
#define THX_SYS_LLSEEK 62
#define THX_SYS_WRITE 64
#define THX_SYS_EXIT 93
#define THX_SYS_FUTEX 98
#define THX_SYS_SCHED_YIELD 124
#define THX_SYS_GETPPID 173
#define THX_SYS_MMAP2 222

#define THX_AT_FDCWD (-100)
#define THX_O_RDWR 2
#define THX_PROT_RW 3
#define THX_MAP_SHARED 1
#define THX_SEEK_END 2
#define THX_FUTEX_WAIT 0 /* shared (not FUTEX_PRIVATE_FLAG): the host process waits on the same words */
#define THX_FUTEX_WAKE 1

struct thx_timespec32 {
  int32_t tv_sec;
  int32_t tv_nsec;
};

static inline long thx_syscall6(long nr, long a0, long a1, long a2, long a3, long a4, long a5) {
  register long r0 __asm__("r0") = a0;
  register long r1 __asm__("r1") = a1;
  register long r2 __asm__("r2") = a2;
  register long r3 __asm__("r3") = a3;
  register long r4 __asm__("r4") = a4;
  register long r5 __asm__("r5") = a5;
  register long r6 __asm__("r6") = nr;
  __asm__ volatile("trap0(#1)"
                   : "+r"(r0)
                   : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6)
                   : "memory");
  return r0;
}

static inline long thx_syscall3(long nr, long a0, long a1, long a2) {
  return thx_syscall6(nr, a0, a1, a2, 0, 0, 0);
}

/* A syscall result in [-4095, -1] is -errno (mmap2's addresses are never that high). */
static inline int thx_is_error(long r) { return (unsigned long)r >= (unsigned long)-4095L; }

__attribute__((noreturn)) static inline void thx_exit(int code) {
  for (;;) thx_syscall3(THX_SYS_EXIT, code, 0, 0);
}

static inline void thx_write_str(int fd, const char* s) {
  long n = 0;
  while (s[n]) ++n;
  thx_syscall3(THX_SYS_WRITE, fd, (long)s, n);
}

#endif
