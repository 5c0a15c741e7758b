/* The DSP's kernels, each inner loop in a function of its own so that `llvm-objdump-19 -d` of the
 * binary attributes its packets. K-quants (Q2_K..Q6_K) are out of scope for now: their
 * sub-block scales would need their own word grouping here and in the reference.
 *
 * Pointers are into the shared pool, checked by runtime_validate.c before any kernel runs. */
#ifndef TANDEM_HEXAGON_DSP_KERNELS_H
#define TANDEM_HEXAGON_DSP_KERNELS_H

#include <stdint.h>

/* fp32 rows -> int8 rows (protocol.h's activation layout) + fp16 scales. Scalar IEEE float. */
void thx_quantize_rows(const float* x, int8_t* q, uint16_t* d, uint32_t n, uint32_t in);
void thx_quantize_block(const float* x, int8_t* q, uint16_t* d); /* one block of 32 */

/* Up to 32 blocks (count, 1..32) of one weight row against the matching activation blocks:
 * sums[k] = block k's exact int32 dot product for k < count; sums[count..32) are left undefined.
 * blocks: the first block's fp16 scale, any alignment; x / halves and sums (32 words): 128-byte
 * aligned. */
void thx_q8_0_chunk_sums(const uint8_t* blocks, uint32_t count, const int8_t* x, int32_t* sums);
void thx_q4_0_chunk_sums(const uint8_t* blocks, uint32_t count, const int8_t* halves, int32_t* sums);
/* One activation row of nb blocks rearranged for the Q4_0 kernel (matmul_q4_0.c says how):
 * 256 bytes per group of 8 blocks. */
void thx_q4_0_split_halves(const int8_t* x, uint32_t nb, int8_t* halves);

/* A finite fp16 scale as m * 2^(e - 25), packed in one word as (m << 8) | e: m the signed
 * significand with its leading one (none for subnormals), e = max(exponent field, 1); the word
 * is 0 (e = 0) for inf and NaN, which take the literal float path (accumulate.c). */
int32_t thx_scale_parts(uint32_t h);

/* acc += (dw_k * dx_k) * float(sums[k]) for k < count, in order (reference.h's sum); dw_k is the
 * fp16 scale at blocks + k * block_bytes, dx_k is dx_bits[k], split as dx_parts[k]. */
float thx_accumulate_blocks(float acc, const int32_t* sums, const uint8_t* blocks, uint32_t block_bytes,
                            const int32_t* dx_parts, const uint16_t* dx_bits, uint32_t count);

/* y [n][out] = x [n][in] times w [out][in]^T; in <= THX_MAX_IN. format: THX_FORMAT_*. */
void thx_matmul(uint32_t format, const uint8_t* w, const int8_t* q, const uint16_t* xd, float* y, uint32_t n,
                uint32_t in, uint32_t out);

#endif
