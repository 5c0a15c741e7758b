// Per-thread scratch buffers for the matmul kernels (packed activations and weight panels).
// The pool's threads live as long as the pool, so thread_local buffers are allocated on the first
// call of a given size and then reused by every later call: no malloc in steady state.
#include <cstdlib>
#include <new>

#include "devices/cpu/matmul/matmul_internal.h"

namespace tandem::cpu::detail {
namespace {

struct ScratchBuffers {
  void* ptr[kScratchSlots] = {};
  size_t size[kScratchSlots] = {};
  ~ScratchBuffers() {
    for (void* p : ptr) std::free(p);
  }
};

thread_local ScratchBuffers t_scratch;

}  // namespace

void* thread_scratch(ScratchSlot slot, size_t bytes) {
  ScratchBuffers& s = t_scratch;
  if (bytes > s.size[slot]) {
    std::free(s.ptr[slot]);
    // Round up to whole cache lines (aligned_alloc requires a multiple of the alignment) and
    // leave one spare line so vector loads that run past the last element stay inside.
    const size_t rounded = (bytes + 127) / 64 * 64;
    s.ptr[slot] = std::aligned_alloc(64, rounded);
    if (!s.ptr[slot]) throw std::bad_alloc();
    s.size[slot] = rounded - 64;
  }
  return s.ptr[slot];
}

}  // namespace tandem::cpu::detail
