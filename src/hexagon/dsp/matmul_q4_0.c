/* Q4_0 block sums with vrmpy, reading the weight row in the model's layout: the nibbles are
 * unpacked in registers, never repacked in memory.
 *
 * A group of 8 blocks (144 bytes: d, 16 nibble bytes, ...) becomes one vector of their 128
 * nibble bytes: slot s (bytes 16s..16s+15) must hold block s's bytes, which start at qs + 18s,
 * so the window loaded at qs + 2s has them in slot s; seven vmuxes (by 16-, 32- and 64-byte
 * halves) pick each slot. The low nibbles are values 0..15 of each block, the high nibbles
 * values 16..31; minus 8 each is an exact int8 in [-8, 7], so vrmpy(Vb, Vb) needs no offset
 * correction. (u8 x s8 vrmpy on the raw nibbles would save the two vsubs per 8 blocks but need
 * 8 * sum(x) subtracted per block on the scalar core, which the fp32 sum already keeps busy.)
 * The activation's matching halves are one vdeal of its two vectors by 16-byte elements: even
 * elements are each block's values 0..15, odd ones values 16..31. Each block is 4 words. */
#include "hexagon/protocol.h"
#include "hvx_util.h"
#include "kernels.h"

struct q4_preds {
  HVX_VectorPred odd16, odd32, odd64;
};

static inline HVX_Vector q4_0_group(const uint8_t* qs, const int8_t* x, int second_half, struct q4_preds pr) {
  const HVX_Vector a01 = Q6_V_vmux_QVV(pr.odd16, thx_load_u(qs + 2), thx_load_u(qs));
  const HVX_Vector a23 = Q6_V_vmux_QVV(pr.odd16, thx_load_u(qs + 6), thx_load_u(qs + 4));
  const HVX_Vector a45 = Q6_V_vmux_QVV(pr.odd16, thx_load_u(qs + 10), thx_load_u(qs + 8));
  const HVX_Vector a67 = Q6_V_vmux_QVV(pr.odd16, thx_load_u(qs + 14), thx_load_u(qs + 12));
  const HVX_Vector b03 = Q6_V_vmux_QVV(pr.odd32, a23, a01);
  const HVX_Vector b47 = Q6_V_vmux_QVV(pr.odd32, a67, a45);
  const HVX_Vector nib = Q6_V_vmux_QVV(pr.odd64, b47, b03);
  const HVX_Vector eight = Q6_Vb_vsplat_R(8);
  const HVX_Vector lo = Q6_Vb_vsub_VbVb(Q6_V_vand_VV(nib, Q6_Vb_vsplat_R(0x0f)), eight);
  const HVX_Vector hi = Q6_Vb_vsub_VbVb(Q6_Vub_vlsr_VubR(nib, 4), eight);
  /* Blocks 4..7's activations only when the group has them: reads stay inside the row's stride. */
  const HVX_Vector x47 = second_half ? thx_load_a(x + 128) : Q6_V_vzero();
  const HVX_VectorPair xs = Q6_W_vdeal_VVR(x47, thx_load_a(x), -16);
  return Q6_Vw_vrmpyacc_VwVbVb(Q6_Vw_vrmpy_VbVb(lo, Q6_V_lo_W(xs)), hi, Q6_V_hi_W(xs));
}

__attribute__((noinline)) void thx_q4_0_chunk_sums(const uint8_t* blocks, uint32_t count, const int8_t* x,
                                                   int32_t* sums) {
  const struct q4_preds pr = {thx_index_bit(16), thx_index_bit(32), thx_index_bit(64)};
  const uint32_t group_bytes = 8 * THX_Q4_0_BLOCK_BYTES;
  const uint8_t* qs = blocks + 2;
  HVX_Vector p[4];
  for (uint32_t g = 0; g < 4; ++g) {
    const uint32_t first = 8 * g;
    p[g] = first < count ? q4_0_group(qs + g * group_bytes, x + g * 256, count - first > 4, pr) : Q6_V_vzero();
  }
  *(HVX_Vector*)sums = thx_fold_pairs(thx_fold_pairs(p[0], p[1]), thx_fold_pairs(p[2], p[3]));
}
