/* The DSP's kernels, each inner loop in a function of its own so that `llvm-objdump-19 -d` of the
 * binary attributes its packets. K-quants (Q2_K..Q6_K) are out of scope for now: their
 * sub-block scales would need a second reduction level here and in the reference.
 *
 * Pointers are into the shared pool, checked by runtime_validate.c before any kernel runs. */
#ifndef TANDEM_HEXAGON_DSP_KERNELS_H
#define TANDEM_HEXAGON_DSP_KERNELS_H

#include <stdint.h>

/* fp32 rows -> int8 rows (protocol.h's activation layout) + fp16 scales. Scalar IEEE float. */
void thx_quantize_rows(const float* x, int8_t* q, uint16_t* d, uint32_t n, uint32_t in);
void thx_quantize_block(const float* x, int8_t* q, uint16_t* d); /* one block of 32 */

/* Up to 32 blocks of one weight row against 32 blocks of one activation row: sums[k] = the exact
 * int32 dot product of block k, k < count (1..32); sums[count..32) are left undefined.
 * blocks: the first block's fp16 scale, any alignment; x: 128-byte aligned; sums: 128-byte
 * aligned, 32 words. */
typedef void (*thx_chunk_sums_fn)(const uint8_t* blocks, uint32_t count, const int8_t* x, int32_t* sums);
void thx_q8_0_chunk_sums(const uint8_t* blocks, uint32_t count, const int8_t* x, int32_t* sums);
void thx_q4_0_chunk_sums(const uint8_t* blocks, uint32_t count, const int8_t* x, int32_t* sums);

/* acc += (dw_k * dx_k) * float(sums[k]) for k < count, in order (reference.h's sum). */
float thx_accumulate_blocks(float acc, const int32_t* sums, const uint8_t* blocks, uint32_t block_bytes,
                            const float* dx, uint32_t count);

/* y [n][out] = x [n][in] times w [out][in]^T; in <= THX_MAX_IN. */
void thx_matmul(const uint8_t* w, uint32_t block_bytes, thx_chunk_sums_fn chunk, const int8_t* q,
                const uint16_t* xd, float* y, uint32_t n, uint32_t in, uint32_t out);

#endif
