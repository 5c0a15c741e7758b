/* The command protocol between a host process and the Hexagon DSP process (qemu-hexagon here,
 * a cDSP behind FastRPC on a phone). Plain C, shared verbatim by the host (C++) and the
 * freestanding DSP code, so both sides read the same offsets.
 *
 * One MAP_SHARED file under /dev/shm holds everything:
 *
 *   [0, 4096)                    the header below (control words, one command slot)
 *   [4096, map_bytes - 256)      the pool: every buffer a command names is (offset, bytes) in here
 *   [map_bytes - 256, map_bytes) the guard: never part of a buffer. The matmul kernels read
 *                                128-byte windows that may run up to 256 bytes past the end of a
 *                                weight buffer (bytes that never reach a result); the guard keeps
 *                                those reads inside the mapping wherever the buffer lies.
 *
 * A call is FastRPC-shaped: a handle (the module), a method id, in/out buffers as
 * (pool offset, bytes) pairs, scalar arguments, a status code. The host writes the command
 * slot, then bumps `doorbell` (release); the DSP sees the new doorbell (acquire), writes
 * `accepted`, runs, writes the outputs, `status` and `result`, then stores `completion = doorbell`
 * last after a barrier (release). The host waits for completion == its doorbell (acquire).
 * One command is in flight at a time; sequence numbers are 32-bit and wrap.
 */
#ifndef TANDEM_HEXAGON_PROTOCOL_H
#define TANDEM_HEXAGON_PROTOCOL_H

#include <stdint.h>

#define THX_MAGIC 0x31584854u   /* "THX1" little-endian */
#define THX_VERSION 1u
#define THX_HEADER_BYTES 4096u  /* the pool starts here */
#define THX_GUARD_BYTES 256u    /* at the end of the mapping, see above */

/* The quantized activation layout (quantize's output, the matmuls' input): row r of int8 values
 * starts at r * thx_act_stride(in) bytes of its buffer, whose pool offset is a multiple of 128,
 * so the kernels load whole aligned HVX vectors; bytes past `in` in a row are written as 0 and
 * never read into a result. Scales: fp16 bits, row r's block b at [r * in / 32 + b]. */
#define THX_ACT_ROW_ALIGN 128u
#define THX_BLOCK 32u                 /* values per block, Q8_0 and Q4_0 */
#define THX_MAX_IN (32u * 4096u)      /* the DSP keeps one fp32 scale per block of a row: 16 KiB */

/* Block bytes of the weight formats (ggml's layouts, as the model file carries them). */
#define THX_Q8_0_BLOCK_BYTES 34u      /* fp16 d, then 32 int8 */
#define THX_Q4_0_BLOCK_BYTES 18u      /* fp16 d, then 16 bytes: value j<16 low nibble of byte j,
                                         value j>=16 high nibble of byte j-16, each minus 8 */

/* `format` scalars: ggml's type ids. */
#define THX_FORMAT_Q4_0 2u
#define THX_FORMAT_Q8_0 8u

/* The one module the DSP process serves (FastRPC would return it from remote_handle64_open). */
#define THX_HANDLE_KERNELS 1u

/* Methods of THX_HANDLE_KERNELS. Buffers by index:
 *   PING         -: result[0] = THX_VERSION, result[1] = arg[0] (echo)
 *   QUANTIZE     buf[0] in fp32 x [n][in], buf[1] out int8 q (activation layout),
 *                buf[2] out fp16 scales [n][in/32]; format = THX_FORMAT_Q8_0
 *   MATMUL_Q8_0  buf[0] in weights [out][in/32] blocks, buf[1] in q, buf[2] in scales,
 *   MATMUL_Q4_0  buf[3] out fp32 y [n][out]; format = the method's own
 *   QUIT         the DSP completes the command, then exits 0
 *   PROGRAM      arg[0] = the compiled program's index (a binary tandem compile linked); n, in,
 *                out, format must be the program's. buf[0] in fp32 x [n][in], buf[1] scratch
 *                (n rows of the activation layout, then fp16 scales [n][in/32]; 128-aligned),
 *                buf[2] in weights [out][in/32] blocks, buf[3] out fp32 y [n][out]. One call
 *                quantizes and multiplies.
 * Alignment: x and y 4 bytes, scales 2 bytes, q 128 bytes, weights any byte. */
#define THX_METHOD_PING 1u
#define THX_METHOD_QUANTIZE 2u
#define THX_METHOD_MATMUL_Q8_0 3u
#define THX_METHOD_MATMUL_Q4_0 4u
#define THX_METHOD_QUIT 5u
#define THX_METHOD_PROGRAM 6u

/* Status codes the DSP writes. A bad command gets one of these; the DSP keeps serving. */
#define THX_OK 0u
#define THX_E_HANDLE 1u     /* no such handle */
#define THX_E_METHOD 2u     /* no such method */
#define THX_E_BOUNDS 3u     /* a buffer leaves the pool, or its length overflows */
#define THX_E_ARGS 4u       /* a zero or inconsistent scalar (in not a multiple of 32, format) */
#define THX_E_ALIGN 5u      /* a buffer misaligned for its element type */
#define THX_E_TOO_LARGE 6u  /* in > THX_MAX_IN, or a buffer shorter than the shape needs */

/* dsp_state */
#define THX_DSP_STARTING 0u
#define THX_DSP_SERVING 1u
#define THX_DSP_EXITED 2u

#define THX_MAX_BUFFERS 4

struct thx_buffer {
  uint32_t offset; /* from the start of the mapping; must lie in the pool */
  uint32_t bytes;
};

/* Every field is a 32-bit word at a fixed offset (checked below). Host- and DSP-written words
 * live on separate 64-byte lines so that polling one side does not bounce the other's line. */
struct thx_header {
  /* 0: written by the host before the DSP starts */
  uint32_t magic;
  uint32_t version;
  uint32_t header_bytes;
  uint32_t map_bytes;
  uint32_t reserved0[12];
  /* 64: the DSP's state words */
  uint32_t dsp_state;     /* THX_DSP_* */
  uint32_t dsp_version;   /* the protocol version the DSP speaks, written before SERVING */
  uint32_t accepted;      /* the doorbell value of the command the DSP is running */
  uint32_t reserved1[13];
  /* 128: host -> DSP */
  uint32_t doorbell;
  uint32_t reserved2[15];
  /* 192: DSP -> host, stored last for each command */
  uint32_t completion;
  uint32_t reserved3[15];
  /* 256: the command slot */
  uint32_t handle;
  uint32_t method;
  uint32_t status;        /* DSP */
  uint32_t reserved4;
  struct thx_buffer buf[THX_MAX_BUFFERS];
  uint32_t n, in, out, format;
  uint32_t arg[4];
  uint32_t result[4];     /* DSP */
};

#ifdef __cplusplus
#include <cstddef>
#define THX_OFFSET_CHECK(field, at) static_assert(offsetof(thx_header, field) == (at), #field)
#else
#include <stddef.h>
#define THX_OFFSET_CHECK(field, at) _Static_assert(offsetof(struct thx_header, field) == (at), #field)
#endif
THX_OFFSET_CHECK(map_bytes, 12);
THX_OFFSET_CHECK(dsp_state, 64);
THX_OFFSET_CHECK(accepted, 72);
THX_OFFSET_CHECK(doorbell, 128);
THX_OFFSET_CHECK(completion, 192);
THX_OFFSET_CHECK(handle, 256);
THX_OFFSET_CHECK(buf, 272);
THX_OFFSET_CHECK(n, 304);
THX_OFFSET_CHECK(arg, 320);
THX_OFFSET_CHECK(result, 336);
#undef THX_OFFSET_CHECK

/* Bytes of one quantized activation row. */
static inline uint32_t thx_act_stride(uint32_t in) {
  return (in + THX_ACT_ROW_ALIGN - 1u) & ~(THX_ACT_ROW_ALIGN - 1u);
}

#endif /* TANDEM_HEXAGON_PROTOCOL_H */
