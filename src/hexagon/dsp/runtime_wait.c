/* Waiting for the host's doorbell, and raising the completion flag.
 *
 * The wait is staged so that back-to-back commands see a spinning DSP (lowest latency) while an
 * idle session costs no CPU: ~2000 polls of the doorbell, then ~100 sched_yields (each lets the
 * host, or the other work on a busy machine, run), then futex waits on the doorbell word with a
 * 20 ms timeout. The host wakes the futex after every doorbell, and the kernel compares the word
 * before sleeping, so no wake is lost; the timeout only serves to check that the host still
 * exists (getppid changes when the parent dies and we are re-parented). qemu-hexagon passes the
 * futex through to the host kernel, and a non-private futex on a MAP_SHARED page is keyed by the
 * file, so the host's futex calls and ours meet. Hexagon's `pause` would idle a hardware thread;
 * under qemu it is no yield at all, so the yield here is the syscall. */
#include "runtime.h"
#include "sys.h"

#define THX_SPIN_POLLS 2000
#define THX_YIELD_POLLS 100
#define THX_FUTEX_TIMEOUT_NS 20000000

static inline uint32_t load_acquire(volatile uint32_t* p) {
  const uint32_t v = *p;
  __asm__ volatile("barrier" ::: "memory"); /* later loads (the command slot) stay after this one */
  return v;
}

uint32_t thx_wait_doorbell(volatile struct thx_header* h, uint32_t seen, uint32_t parent_pid) {
  for (;;) {
    for (int i = 0; i < THX_SPIN_POLLS; ++i) {
      const uint32_t v = load_acquire(&h->doorbell);
      if (v != seen) return v;
    }
    for (int i = 0; i < THX_YIELD_POLLS; ++i) {
      thx_syscall3(THX_SYS_SCHED_YIELD, 0, 0, 0);
      const uint32_t v = load_acquire(&h->doorbell);
      if (v != seen) return v;
    }
    for (;;) {
      struct thx_timespec32 t = {0, THX_FUTEX_TIMEOUT_NS};
      thx_syscall6(THX_SYS_FUTEX, (long)&h->doorbell, THX_FUTEX_WAIT, (long)seen, (long)&t, 0, 0);
      const uint32_t v = load_acquire(&h->doorbell);
      if (v != seen) return v;
      if ((uint32_t)thx_syscall3(THX_SYS_GETPPID, 0, 0, 0) != parent_pid) thx_exit(5);
    }
  }
}

void thx_complete(volatile struct thx_header* h, uint32_t seq) {
  /* Release: every output and the status are visible before the flag. */
  __asm__ volatile("barrier" ::: "memory");
  h->completion = seq;
  __asm__ volatile("barrier" ::: "memory");
  thx_syscall6(THX_SYS_FUTEX, (long)&h->completion, THX_FUTEX_WAKE, 1, 0, 0, 0);
}
