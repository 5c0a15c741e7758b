/* Checking a command's buffers and shapes before any kernel touches memory: a bad command gets
 * an error status, never a fault. Every size is computed in 64 bits (u32 x u32 products cannot
 * wrap there) and every bound is written so that it cannot overflow 32 bits either. */
#include "runtime.h"

uint32_t thx_check_buffer(struct thx_pool pool, struct thx_buffer b, uint64_t need, uint32_t align, void** p) {
  const uint32_t limit = pool.map_bytes - THX_GUARD_BYTES; /* map_bytes > header + guard: start-up checks */
  if (b.offset < THX_HEADER_BYTES || b.offset > limit || b.bytes > limit - b.offset) return THX_E_BOUNDS;
  if (b.offset & (align - 1u)) return THX_E_ALIGN;
  if (need > b.bytes) return THX_E_TOO_LARGE;
  *p = pool.base + b.offset;
  return THX_OK;
}

int thx_overlap(struct thx_buffer a, struct thx_buffer b) {
  if (a.bytes == 0 || b.bytes == 0) return 0;
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes; /* both end inside the pool */
}
