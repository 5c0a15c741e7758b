/* Q8_0 block products with vrmpy, reading the weight row in the model's layout.
 *
 * A group of 4 blocks (136 bytes: d, 32 int8, d, 32 int8, ...) becomes one vector of their 128
 * int8 values: slot k (bytes 32k..32k+31) must hold block k's values, which start at
 * qs + 34k, so the 128-byte window loaded at qs + 2k has them exactly in slot k; a mask per
 * slot and three vors assemble the vector. vrmpy(Vb, Vb) then gives 8 words per block, and three
 * levels of folding over the chunk's 8 group vectors leave one word per block. Both operands are
 * signed int8 (the weights natively, the activations from quantize), so no offset correction.
 * A full group's last window ends at the group's last byte; a partial one reads past it (into
 * slots whose sums are never used). */
#include "hexagon/protocol.h"
#include "hvx_util.h"
#include "kernels.h"

/* The fold of hvx_util.h by halfword arithmetic: each word w is split exactly into h * 2^16 + l
 * (l its low half sign-extended, h small: a Q8_0 block's |sum| < 2^20), the l's and the h's are
 * packed into halfwords (vpacke) and adjacent ones summed into words (vdmpy by 1s), then
 * recombined. Under qemu ~250 ns against ~450 for vdeal + vadd, which gives the same words.
 * (Q4_0's words fit int16 whole, so its fold skips the split.) */
static inline HVX_Vector low_half(HVX_Vector w) { return Q6_Vw_vasr_VwR(Q6_Vw_vasl_VwR(w, 16), 16); }

static inline HVX_Vector fold_pairs_split(HVX_Vector lo, HVX_Vector hi) {
  const HVX_Vector l_lo = low_half(lo), l_hi = low_half(hi);
  const HVX_Vector h_lo = Q6_Vw_vasr_VwR(Q6_Vw_vsub_VwVw(lo, l_lo), 16);
  const HVX_Vector h_hi = Q6_Vw_vasr_VwR(Q6_Vw_vsub_VwVw(hi, l_hi), 16);
  const HVX_Vector l_sum = Q6_Vw_vdmpy_VhRb(Q6_Vh_vpacke_VwVw(l_hi, l_lo), 0x01010101);
  const HVX_Vector h_sum = Q6_Vw_vdmpy_VhRb(Q6_Vh_vpacke_VwVw(h_hi, h_lo), 0x01010101);
  return Q6_Vw_vadd_VwVw(Q6_Vw_vasl_VwR(h_sum, 16), l_sum);
}

static inline HVX_Vector q8_0_group(const uint8_t* qs, const int8_t* x) {
  const HVX_Vector w01 = Q6_V_vor_VV(thx_slot(thx_load_u(qs), thx_slot_mask32[0]),
                                     thx_slot(thx_load_u(qs + 2), thx_slot_mask32[1]));
  const HVX_Vector w23 = Q6_V_vor_VV(thx_slot(thx_load_u(qs + 4), thx_slot_mask32[2]),
                                     thx_slot(thx_load_u(qs + 6), thx_slot_mask32[3]));
  return Q6_Vw_vrmpy_VbVb(Q6_V_vor_VV(w01, w23), thx_load_a(x));
}

/* A group past `count` is zero. Written out group by group and folded as it goes, so that the
 * eight group vectors never sit in an array: clang keeps such an array on the stack, and under
 * qemu each vector store costs ~1.5 us. */
#define THX_Q8_GROUP(g) \
  (4 * (g) < count ? q8_0_group(qs + (g) * 4 * THX_Q8_0_BLOCK_BYTES, x + (g) * 128) : Q6_V_vzero())

__attribute__((noinline)) void thx_q8_0_chunk_sums(const uint8_t* blocks, uint32_t count, const int8_t* x,
                                                   int32_t* sums) {
  const uint8_t* qs = blocks + 2;
  const HVX_Vector s01 = fold_pairs_split(THX_Q8_GROUP(0), THX_Q8_GROUP(1));
  const HVX_Vector s23 = fold_pairs_split(THX_Q8_GROUP(2), THX_Q8_GROUP(3));
  const HVX_Vector s45 = fold_pairs_split(THX_Q8_GROUP(4), THX_Q8_GROUP(5));
  const HVX_Vector s67 = fold_pairs_split(THX_Q8_GROUP(6), THX_Q8_GROUP(7));
  thx_store_a(sums, fold_pairs_split(fold_pairs_split(s01, s23), fold_pairs_split(s45, s67)));
}
