/* Q4_0 block products with vrmpy, reading the weight row in the model's layout: the nibbles are
 * unpacked in registers, never repacked in memory.
 *
 * A group of 8 blocks (144 bytes: d, 16 nibble bytes, ...) becomes one vector of their 128
 * nibble bytes: slot s (bytes 16s..16s+15) must hold block s's bytes, which start at qs + 18s,
 * so the window loaded at qs + 2s has them in slot s; masks and vors assemble the vector. The
 * low nibbles are values 0..15 of each block, the high nibbles values 16..31 (a halfword shift
 * and a mask: the bits shifted in from the next byte are masked off); minus 8 each is an exact
 * int8 in [-8, 7], so vrmpy(Vb, Vb) needs no offset correction. (u8 x s8 vrmpy on the raw
 * nibbles would save the two vsubs per 8 blocks but need 8 * sum(x) subtracted per block on the
 * scalar core, which is the busier side.) Each block is 4 words (values 0..15 and 16..31
 * accumulate into the same lanes), and two levels of folding over the chunk's 4 group vectors
 * leave one word per block. Every partial sum of a Q4_0 block fits int16 (|sum| <= 32 * 8 * 127
 * = 32512), so a fold is vpacke (the words' low halves, exact) and vdmpy by 1s (adjacent
 * halfwords summed into words): under qemu ~90 ns against vdeal's ~450, the same word order.
 *
 * The activations must be in matching halves: thx_q4_0_split_halves deals each 8-block group
 * once per activation row (by 16-byte elements: even ones are each block's values 0..15, odd
 * ones values 16..31), so no weight row pays for the permute. */
#include "hexagon/protocol.h"
#include "hvx_util.h"
#include "kernels.h"

void thx_q4_0_split_halves(const int8_t* x, uint32_t nb, int8_t* halves) {
  for (uint32_t g = 0; 8 * g < nb; ++g) {
    /* Blocks 4..7 only when the group has them: reads stay inside the row's stride. */
    const HVX_Vector x47 = nb - 8 * g > 4 ? thx_load_a(x + 256 * g + 128) : Q6_V_vzero();
    const HVX_VectorPair d = Q6_W_vdeal_VVR(x47, thx_load_a(x + 256 * g), -16);
    thx_store_a(halves + 256 * g, Q6_V_lo_W(d));
    thx_store_a(halves + 256 * g + 128, Q6_V_hi_W(d));
  }
}

static inline HVX_Vector q4_0_group(const uint8_t* qs, const int8_t* halves) {
  HVX_Vector nib = thx_slot(thx_load_u(qs), thx_slot_mask16[0]);
#pragma clang loop unroll(full)
  for (int s = 1; s < 8; ++s) nib = Q6_V_vor_VV(nib, thx_slot(thx_load_u(qs + 2 * s), thx_slot_mask16[s]));
  const HVX_Vector low4 = Q6_Vb_vsplat_R(0x0f), eight = Q6_Vb_vsplat_R(8);
  const HVX_Vector lo = Q6_Vb_vsub_VbVb(Q6_V_vand_VV(nib, low4), eight);
  const HVX_Vector hi = Q6_Vb_vsub_VbVb(Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(nib, 4), low4), eight);
  return Q6_Vw_vrmpyacc_VwVbVb(Q6_Vw_vrmpy_VbVb(lo, thx_load_a(halves)), hi, thx_load_a(halves + 128));
}

/* The fold of hvx_util.h, for words that fit int16. */
static inline HVX_Vector fold_pairs_int16(HVX_Vector lo, HVX_Vector hi) {
  return Q6_Vw_vdmpy_VhRb(Q6_Vh_vpacke_VwVw(hi, lo), 0x01010101);
}

/* A group past `count` is zero; no array of vectors (see matmul_q8_0.c). */
#define THX_Q4_GROUP(g) \
  (8 * (g) < count ? q4_0_group(qs + (g) * 8 * THX_Q4_0_BLOCK_BYTES, halves + (g) * 256) : Q6_V_vzero())

__attribute__((noinline)) void thx_q4_0_chunk_sums(const uint8_t* blocks, uint32_t count, const int8_t* halves,
                                                   int32_t* sums) {
  const uint8_t* qs = blocks + 2;
  const HVX_Vector s01 = fold_pairs_int16(THX_Q4_GROUP(0), THX_Q4_GROUP(1));
  const HVX_Vector s23 = fold_pairs_int16(THX_Q4_GROUP(2), THX_Q4_GROUP(3));
  thx_store_a(sums, fold_pairs_int16(s01, s23));
}
