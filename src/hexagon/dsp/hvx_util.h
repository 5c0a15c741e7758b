/* HVX building blocks shared by the matmul kernels (128-byte vectors, v66).
 *
 * The kernels are shaped by what qemu-hexagon (where they run today) makes cheap or dear, where
 * the choice costs a phone's DSP little. Measured per instruction under qemu 7.2 on this
 * machine: vand / vor / vadd / vsub / vasr ~7 ns (inlined host vector code), vmemu ~20, vextract
 * ~60, vrmpy ~80, vdmpy ~60, vpacke ~30, vmux / valign / vror ~80-100, vdeal / vshuff / vdelta
 * ~450 (helpers looping over the network's stages), and a vector store ~1500. So slots are
 * picked with vand + vor rather than vmux, unaligned windows are vmemu loads rather than aligned
 * lines and valigns, a chunk of 32 blocks leaves HVX as one store of its 32 block sums, and the
 * words are folded into those sums with vpacke + vdmpy rather than vdeal (on a DSP each of
 * these is a packet or two either way). Nothing may spill a vector to the stack: a spill is a
 * store. */

/* The fold that turns per-block groups of words into one word per block: the result's words
 * 0..15 are lo's adjacent pairs (2i, 2i+1) summed, words 16..31 hi's. Groups of 2g words per
 * block in lo and hi become groups of g words, lo's blocks first, so log2(words per block)
 * levels over a chunk's group vectors leave its block sums in block order. Each format has its
 * own version (matmul_q8_0.c, matmul_q4_0.c): what differs is the range of the words. */
#ifndef TANDEM_HEXAGON_DSP_HVX_UTIL_H
#define TANDEM_HEXAGON_DSP_HVX_UTIL_H

#include <hexagon_protos.h>
#include <hexagon_types.h>
#include <stdint.h>

/* 128 bytes from any address, as one vmemu: volatile, so that clang does not rebuild it from
 * aligned loads and valigns (cheaper on paper, dearer under qemu). The weight rows' blocks
 * are 34 or 18 bytes, so nothing in them is aligned; the pool's guard (protocol.h) covers the
 * windows that run past a buffer. */
static inline HVX_Vector thx_load_u(const uint8_t* p) { return *(volatile const HVX_UVector*)p; }

static inline HVX_Vector thx_load_a(const void* p) { return *(const HVX_Vector*)p; }

static inline void thx_store_a(void* p, HVX_Vector v) { *(HVX_Vector*)p = v; }

/* Byte masks: row k of thx_slot_mask32 is 0xff in slot k (bytes 32k..32k+31) and 0 elsewhere;
 * thx_slot_mask16 likewise for 16-byte slots. */
extern const uint8_t thx_slot_mask32[4][128];
extern const uint8_t thx_slot_mask16[8][128];

static inline HVX_Vector thx_slot(HVX_Vector v, const uint8_t* mask) { return Q6_V_vand_VV(v, thx_load_a(mask)); }

#endif
