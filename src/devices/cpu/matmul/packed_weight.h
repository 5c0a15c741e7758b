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
// The other types follow the same plan: a block of 32 columns of 16 rows is nibbles (four
// dwords per row, regrouped as Q4_0's) or bytes (eight), then per-block metadata [b][lane], then
// per-super-block metadata [s][lane] for the 256-column types. What each type keeps:
//   Q4_1, Q5_1  nibbles (0..15) / five-bit quants; fp16 d then fp16 m per block      (5.0 / 6.0 bpw)
//   Q5_0        five-bit quants (0..31, value q - 16); fp16 d per block             (5.5 bpw)
//   IQ4_NL      nibbles as stored (indices into the 16 levels); fp16 d per block     (4.5 bpw)
//   Q2_K        two-bit quants; u8 scale of the first 16 columns, of the last 16, then their u8
//               minimums per block; fp16 d then fp16 dmin per super-block       (3.06 bpw vs 2.625)
//   Q3_K        three-bit quants (0..7, value q - 4); int8 scale of the first 16 columns, then of
//               the last 16, per block; fp16 d per super-block                   (3.56 bpw vs 3.44)
//   Q4_K        nibbles; u8 scale then u8 minimum per block; fp16 d then fp16 dmin per super-block
//               (4.625 bpw against Q4_K's 4.5: its 6-bit scales are spread to bytes)
//   Q5_K        five-bit quants; as Q4_K otherwise                                   (5.625 bpw)
//   Q6_K        six-bit quants (0..63, value q - 32); int8 scale of the first 16 then of the last
//               16 columns per block; fp16 d per super-block                     (6.56 bpw as Q6_K)
//   IQ4_XS      nibbles as stored; int8 (scale - 32) per block; fp16 d per super-block (4.31 bpw)
// Five-bit quants are nibbles (the low four bits, regrouped) followed by eight 64-bit masks: bit
// (4 lane + t) of mask j is the fifth bit of byte t of lane `lane` of the j-th dword vector --
// dwords 0..3 of the low nibbles, then 4..7 of the high ones -- so the kernel sets it with one
// masked byte add per vector. Those 64 bytes follow the block's nibbles (320 bytes a block).
// Two-bit quants are two zmm: dword vector 4z + k is bits 2k and 2k+1 of each byte of zmm z (one
// shift and one mask to unpack); three-bit quants add eight masks of their third bit after them;
// six-bit quants are nibbles followed by the top two bits as two-bit fields (384 bytes a block).
#pragma once

#include <algorithm>
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

  DType type = DType::Q4_0;  // one of packed_types()
  int64_t rows = 0, cols = 0;
  int64_t groups = 0, blocks = 0;
  size_t qs_bytes_per_block = 0;    // 128, 192, 256, 320, 384 (two to six bits), 512 (bytes)
  size_t meta_bytes_per_block = 0;  // 16 rows' per-block scales (and minimums)
  size_t group_bytes = 0;           // stride between groups

  const uint8_t* group(int64_t g) const { return data_ + size_t(g) * group_bytes; }
  const uint8_t* qs(int64_t g) const { return group(g); }
  // [b] the block's metadata (meta_bytes_per_block), then the super-blocks' [s][lane] fp16 values.
  const uint8_t* block_meta(int64_t g) const { return group(g) + size_t(blocks) * qs_bytes_per_block; }
  const uint16_t* super_meta(int64_t g) const {
    return reinterpret_cast<const uint16_t*>(block_meta(g) + size_t(blocks) * meta_bytes_per_block);
  }
  size_t bytes() const { return size_t(groups) * group_bytes; }

  const uint8_t* data_ = nullptr;  // in `owned_` or in a PackedArena
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> owned_;
};

// Prefetches a group's metadata (block scales and minimums, then super-block values) ahead of the
// decode kernels. It follows the group's quants, so it is a second stream of a few lines per group
// that starts anew at every group: the hardware prefetchers pick each one up only after some demand
// misses, each a whole DRAM latency, while the quants' stream runs on (Q4_0 decode lost 10-15% of
// its bandwidth so on AMD Zen 5). While the kernel walks group g it fetches group g+1's metadata,
// a line per block from the first block on; the first group of a run of groups fetches its own
// at its start.
class MetaPrefetch {
 public:
  // `group`: absolute index into w; `first`: the first group the caller walks in a row.
  MetaPrefetch(const PackedWeight& w, int64_t group, bool first) {
    const size_t tail = w.group_bytes - size_t(w.blocks) * w.qs_bytes_per_block;
    const int64_t lines = int64_t((tail + kLine - 1) / kLine);
    if (first)
      for (int64_t l = 0; l < lines; ++l) __builtin_prefetch(w.block_meta(group) + l * kLine);
    if (group + 1 >= w.groups) return;
    next_ = w.block_meta(group + 1);
    lines_ = lines;
    // One line per block keeps at() to a compare and a prefetch in the kernels' inner loop (it
    // runs once per 16 x 32 block: a loop there cost Q4_0 decode a fifth of its instructions).
    // Metadata wider than a line per block (no type has it at 32 columns a block) goes at once.
    for (int64_t l = w.blocks; l < lines; ++l) __builtin_prefetch(next_ + l * kLine);
  }
  // In block b of the group: line b of the next group's metadata.
  void at(int64_t b) const {
    if (b < lines_) __builtin_prefetch(next_ + b * kLine);
  }

 private:
  static constexpr int64_t kLine = 64;
  const uint8_t* next_ = nullptr;
  int64_t lines_ = 0;  // 0 when there is no next group
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

// Whether decode on this CPU can use packed weights of this type (AVX-512 VNNI present, and the type
// one of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS).
bool can_pack_for_decode(DType type);

// The packed copy of `w` (all its rows), built on the pool's threads; null where
// can_pack_for_decode(w.type) is false. The copy lives in anonymous memory advised for huge pages
// (in `arena` when given, else its own), so the decode stream walks few TLB entries.
std::unique_ptr<PackedWeight> pack_for_decode(ThreadPool& pool, const WeightView& w, PackedArena* arena = nullptr);

}  // namespace tandem::cpu
