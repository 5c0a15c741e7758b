/* Q8_0 block sums with vrmpy, reading the weight row in the model's layout.
 *
 * A group of 4 blocks (136 bytes: d, 32 int8, d, 32 int8, ...) becomes one vector of their 128
 * int8 values: slot k (bytes 32k..32k+31) must hold block k's values, which start at
 * qs + 34k, so the 128-byte window loaded at qs + 2k has them exactly in slot k; three vmuxes
 * pick each slot from its window. vrmpy(Vb, Vb) then gives 8 words per block; both operands are
 * signed int8 (the weights natively, the activations from quantize), so no offset correction.
 * A full group's last window ends at the group's last byte; a partial one reads past it (the
 * bytes land in slots whose sums are never used). */
#include "hexagon/protocol.h"
#include "hvx_util.h"
#include "kernels.h"

static inline HVX_Vector q8_0_group(const uint8_t* qs, const int8_t* x, HVX_VectorPred odd32, HVX_VectorPred odd64) {
  const HVX_Vector w01 = Q6_V_vmux_QVV(odd32, thx_load_u(qs + 2), thx_load_u(qs));
  const HVX_Vector w23 = Q6_V_vmux_QVV(odd32, thx_load_u(qs + 6), thx_load_u(qs + 4));
  const HVX_Vector w = Q6_V_vmux_QVV(odd64, w23, w01);
  return Q6_Vw_vrmpy_VbVb(w, thx_load_a(x));
}

__attribute__((noinline)) void thx_q8_0_chunk_sums(const uint8_t* blocks, uint32_t count, const int8_t* x,
                                                   int32_t* sums) {
  const HVX_VectorPred odd32 = thx_index_bit(32), odd64 = thx_index_bit(64);
  const uint32_t groups = (count + 3) / 4;
  const uint32_t group_bytes = 4 * THX_Q8_0_BLOCK_BYTES;
  const uint8_t* qs = blocks + 2;
  HVX_Vector p[8];
  for (uint32_t g = 0; g < 8; ++g)
    p[g] = g < groups ? q8_0_group(qs + g * group_bytes, x + g * 128, odd32, odd64) : Q6_V_vzero();
  const HVX_Vector s0123 = thx_fold_pairs(thx_fold_pairs(p[0], p[1]), thx_fold_pairs(p[2], p[3]));
  const HVX_Vector s4567 = thx_fold_pairs(thx_fold_pairs(p[4], p[5]), thx_fold_pairs(p[6], p[7]));
  *(HVX_Vector*)sums = thx_fold_pairs(s0123, s4567);
}
