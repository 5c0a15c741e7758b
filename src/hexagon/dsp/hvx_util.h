/* HVX building blocks shared by the matmul kernels (128-byte vectors, v66). */
#ifndef TANDEM_HEXAGON_DSP_HVX_UTIL_H
#define TANDEM_HEXAGON_DSP_HVX_UTIL_H

#include <hexagon_protos.h>
#include <hexagon_types.h>
#include <stdint.h>

/* 128 bytes from any address (vmemu). The weight rows' blocks are 34 or 18 bytes, so nothing in
 * them is aligned; the pool's guard (protocol.h) covers the windows that run past a buffer. */
static inline HVX_Vector thx_load_u(const uint8_t* p) { return *(const HVX_UVector*)p; }

static inline HVX_Vector thx_load_a(const void* p) { return *(const HVX_Vector*)p; }

/* The predicate "bit `bit` of the byte's index is set": vand of the index vector 0..127 with
 * that bit in every byte. Selecting with these by 16-, 32- and 64-byte halves takes 3
 * predicates where one vsetq per slot boundary would take 7 (HVX has 4 Q registers). */
static inline HVX_VectorPred thx_index_bit(uint32_t bit) {
  static const uint8_t iota[128] __attribute__((aligned(128))) = {
#define THX_I8(b) b, b + 1, b + 2, b + 3, b + 4, b + 5, b + 6, b + 7
#define THX_I32(b) THX_I8(b), THX_I8(b + 8), THX_I8(b + 16), THX_I8(b + 24)
      THX_I32(0), THX_I32(32), THX_I32(64), THX_I32(96)
#undef THX_I32
#undef THX_I8
  };
  return Q6_Q_vand_VR(thx_load_a(iota), bit * 0x01010101u);
}

/* Adjacent words summed: the result's words 0..15 are lo's pairs (2i, 2i+1), words 16..31 hi's.
 * Groups of 2g words per block in lo and hi become groups of g words, lo's blocks first. Three
 * levels over eight vectors of 8-word blocks (or two over four of 4-word blocks) leave one word
 * per block, in the order the blocks came. */
static inline HVX_Vector thx_fold_pairs(HVX_Vector lo, HVX_Vector hi) {
  const HVX_VectorPair d = Q6_W_vdeal_VVR(hi, lo, -4); /* even words | odd words */
  return Q6_Vw_vadd_VwVw(Q6_V_lo_W(d), Q6_V_hi_W(d));
}

#endif
