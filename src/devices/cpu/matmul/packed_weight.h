// A weight repacked for the int8 decode kernels: sixteen rows interleaved so one zmm holds a
// piece of each of them, and the dot products of sixteen rows are sixteen lanes of one register.
//
// Why repack: in GGUF's row-major Q4_0 / Q8_0 every 32-element block of every row carries its own
// fp16 scale, so a kernel on that layout spends most of its instructions widening nibbles and
// broadcasting one scale per block per row -- decode then runs out of instructions before it runs
// out of memory bandwidth. Interleaved, the block's sixteen scales are one 32-byte load and one
// conversion, and the quantized values feed vpdpbusd (u8 x s8 -> s32, four products per lane)
// directly against int8-quantized activations. The packed copy has exactly the bytes of the
// original (plus row padding to a multiple of 16).
//
// Layout, per group of 16 rows (the last group zero-padded), per 32-column block b:
//   qs     [b][j][lane]: dword j of row (16g + lane)'s block b -- four bytes of its quants.
//          Q4_0 (4 dwords): bytes as stored; low nibbles are elements 4j..4j+3, high nibbles
//          elements 16+4j..16+4j+3, both offset by +8. Q8_0 (8 dwords): elements 4j..4j+3,
//          stored XOR 0x80 (= value + 128 as u8, since vpdpbusd wants an unsigned operand).
//   scales [b][lane]:    the fp16 block scales.
// A group's qs for all blocks come first, then its scales; groups are 64-byte aligned.
//
// Q4_K (super-blocks of 256: eight 32-element sub-blocks with 6-bit scales and minimums against
// the super-block's fp16 d and dmin) packs each sub-block b as a Q4_0 block: qs [b][j][lane] with
// elements 4j.. in the low nibbles and 16+4j.. in the high ones (Q4_K stores a sub-block pair's
// 64 values as the low and high nibbles of 32 bytes; they are regrouped), no +8 offset: the
// value is d * scale * q - dmin * min with q in 0..15. Then, where Q4_0 has its fp16 scales,
// [b][lane] the 6-bit scales (16 bytes) and [b][lane] the 6-bit minimums (16 bytes); after
// those, per super-block [s][lane] the fp16 d (32 bytes) and [s][lane] the fp16 dmin (32 bytes).
// 4.625 bits per weight against Q4_K's 4.5.
//
// Q6_K (super-blocks of 256: sixteen 16-element sub-blocks with int8 scales, one fp16 d) packs each
// 32-column block as a Q8_0 block of (q - 32) + 128 bytes, then [b][lane] the int8 scale of its
// first 16 columns and [b][lane] that of its last 16, then per super-block [s][lane] the fp16 d:
// 8.6 bits per weight against Q6_K's 6.56 (the 6-bit quants are unpacked once, here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "devices/cpu/matmul/matmul.h"

namespace tandem {
class ThreadPool;
}

namespace tandem::cpu {

struct PackedWeight {
  static constexpr int kRows = 16;  // rows per group (the zmm's dword lanes)

  DType type = DType::Q4_0;  // Q4_0, Q8_0, Q4_K or Q6_K
  int64_t rows = 0, cols = 0;
  int64_t groups = 0, blocks = 0;
  size_t qs_bytes_per_block = 0;  // 256 (Q4_0) or 512 (Q8_0): one block of all 16 rows
  size_t group_bytes = 0;         // stride between groups

  const uint8_t* group(int64_t g) const { return data_ + size_t(g) * group_bytes; }
  const uint8_t* qs(int64_t g) const { return group(g); }
  const uint16_t* scales(int64_t g) const {
    return reinterpret_cast<const uint16_t*>(group(g) + size_t(blocks) * qs_bytes_per_block);
  }
  // Q4_K: [b][lane] 6-bit scales then [b][lane] minimums (where the others have scales()), and
  // the super-blocks' [s][lane] fp16 d then [s][lane] dmin. Q6_K: the halves' int8 scales, then d.
  const uint8_t* k_scales_mins(int64_t g) const { return group(g) + size_t(blocks) * qs_bytes_per_block; }
  const uint16_t* k_super(int64_t g) const {
    return reinterpret_cast<const uint16_t*>(k_scales_mins(g) + size_t(blocks) * kRows * 2);
  }
  size_t bytes() const { return size_t(groups) * group_bytes; }

  const uint8_t* data_ = nullptr;  // in `owned_` or in a PackedArena
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> owned_;
};

// Huge-page memory for many packed weights: one 2 MiB-rounded allocation per weight would waste
// up to 2 MiB each in resident memory (the last huge page of each is whole once touched; ~260 MB
// over tinyllama's 155 matrices), so weights are carved out of 64 MiB chunks instead.
class PackedArena {
 public:
  PackedArena() = default;
  PackedArena(const PackedArena&) = delete;
  PackedArena& operator=(const PackedArena&) = delete;
  uint8_t* allocate(size_t bytes);  // 64-byte aligned; lives as long as the arena

 private:
  std::vector<std::unique_ptr<uint8_t, PackedWeight::Free>> chunks_;
  size_t used_ = 0, capacity_ = 0;
};

// Whether decode on this CPU can use packed weights of this type (AVX-512 VNNI; Q4_0, Q8_0, Q4_K, Q6_K).
bool can_pack_for_decode(DType type);

// The packed copy of `w` (all its rows), built on the pool's threads; null where
// can_pack_for_decode(w.type) is false. The copy lives in anonymous memory advised for huge pages
// (in `arena` when given, else its own), so the decode stream walks few TLB entries.
std::unique_ptr<PackedWeight> pack_for_decode(ThreadPool& pool, const WeightView& w, PackedArena* arena = nullptr);

}  // namespace tandem::cpu
