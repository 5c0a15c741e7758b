// Builds the interleaved copy described in packed_weight.h. Plain byte moves (compiled with
// baseline flags): the kernels that read the layout live in gemv_int8_avx512.cpp.
#include "devices/cpu/matmul/packed_weight.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/quant.h"
#include "core/thread_pool.h"
#include "devices/cpu/matmul/matmul_internal.h"

namespace tandem::cpu {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kArenaChunk = size_t(64) << 20;

// Anonymous memory aligned to a huge page and advised for transparent huge pages: a 600 MB
// weight set then needs ~300 TLB entries instead of ~150000 4 KiB ones.
uint8_t* alloc_huge(size_t bytes) {
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP the copy still works
#endif
  return static_cast<uint8_t*>(p);
}

template <class Block>
const Block* block_at(const WeightView& w, int64_t row, int64_t b) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + size_t(row) * w.row_bytes) + b;
}

// The 6-bit scale and minimum of sub-block j of a Q4_K super-block (ggml's get_scale_min_k4).
void k4_scale_min(const uint8_t* q, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// One Q4_K group (layout in packed_weight.h).
void pack_group_q4_k(const WeightView& w, const PackedWeight& p, int64_t g, uint8_t* dst) {
  constexpr int kR = PackedWeight::kRows;
  const int64_t r0 = g * kR;
  const int lanes = int(std::min<int64_t>(kR, w.rows - r0));
  std::memset(dst, 0, p.group_bytes);
  uint8_t* meta = dst + size_t(p.blocks) * p.qs_bytes_per_block;
  uint16_t* super = reinterpret_cast<uint16_t*>(meta + size_t(p.blocks) * kR * 2);
  const int64_t supers = p.blocks / 8;
  for (int lane = 0; lane < lanes; ++lane) {
    for (int64_t s = 0; s < supers; ++s) {
      const BlockQ4_K* blk = block_at<BlockQ4_K>(w, r0 + lane, s);
      std::memcpy(&super[s * kR + lane], &blk->d, 2);
      std::memcpy(&super[(supers + s) * kR + lane], &blk->dmin, 2);
      for (int j = 0; j < 8; ++j) {
        const int64_t b = s * 8 + j;
        k4_scale_min(blk->scales, j, &meta[b * kR * 2 + lane], &meta[b * kR * 2 + kR + lane]);
        // Sub-block j's 32 quants: the low (even j) or high (odd j) nibbles of qs[32 (j/2) ..].
        uint8_t q[32];
        for (int e = 0; e < 32; ++e) {
          const uint8_t byte = blk->qs[(j / 2) * 32 + e];
          q[e] = (j & 1) ? uint8_t(byte >> 4) : uint8_t(byte & 15);
        }
        uint8_t* qb = dst + size_t(b) * p.qs_bytes_per_block;
        for (int d = 0; d < 4; ++d)
          for (int t = 0; t < 4; ++t) qb[(size_t(d) * kR + size_t(lane)) * 4 + t] = uint8_t(q[4 * d + t] | (q[16 + 4 * d + t] << 4));
      }
    }
  }
}

// One Q6_K group (layout in packed_weight.h).
void pack_group_q6_k(const WeightView& w, const PackedWeight& p, int64_t g, uint8_t* dst) {
  constexpr int kR = PackedWeight::kRows;
  const int64_t r0 = g * kR;
  const int lanes = int(std::min<int64_t>(kR, w.rows - r0));
  std::memset(dst, 0, p.group_bytes);
  // Rows past the end: quants of value 0 (byte 128) under scale 0.
  for (int64_t b = 0; b < p.blocks; ++b)
    for (int lane = lanes; lane < kR; ++lane)
      for (int d = 0; d < 8; ++d) std::memset(dst + size_t(b) * p.qs_bytes_per_block + (size_t(d) * kR + size_t(lane)) * 4, 0x80, 4);
  uint8_t* meta = dst + size_t(p.blocks) * p.qs_bytes_per_block;
  uint16_t* super = reinterpret_cast<uint16_t*>(meta + size_t(p.blocks) * kR * 2);
  for (int lane = 0; lane < lanes; ++lane) {
    for (int64_t s = 0; s < p.blocks / 8; ++s) {
      const BlockQ6_K* blk = block_at<BlockQ6_K>(w, r0 + lane, s);
      std::memcpy(&super[s * kR + lane], &blk->d, 2);
      for (int e = 0; e < 256; ++e) {  // ggml's element order (dequantize_row_q6_k)
        const int half = e / 128, l = e % 32, quarter = (e % 128) / 32;
        const uint8_t lo_byte = blk->ql[half * 64 + l + (quarter & 1) * 32];
        const int lo = quarter < 2 ? lo_byte & 0xF : lo_byte >> 4;
        const int hi = (blk->qh[half * 32 + l] >> (2 * quarter)) & 3;
        const int64_t b = s * 8 + e / 32;
        const int k = e % 32;
        // (q - 32) + 128: the unsigned operand vpdpbusd wants.
        dst[size_t(b) * p.qs_bytes_per_block + (size_t(k / 4) * kR + size_t(lane)) * 4 + size_t(k % 4)] = uint8_t((lo | (hi << 4)) + 96);
      }
      for (int j = 0; j < 8; ++j) {
        const int64_t b = s * 8 + j;
        meta[b * kR * 2 + lane] = uint8_t(blk->scales[2 * j]);
        meta[b * kR * 2 + kR + lane] = uint8_t(blk->scales[2 * j + 1]);
      }
    }
  }
}

// One group: rows [16g, 16g + 16) of w (rows past the end stay zero: scale 0, quants 0).
void pack_group(const WeightView& w, const PackedWeight& p, int64_t g, uint8_t* dst) {
  const int64_t r0 = g * PackedWeight::kRows;
  const int lanes = int(std::min<int64_t>(PackedWeight::kRows, w.rows - r0));
  const int dwords = int(p.qs_bytes_per_block / 4 / PackedWeight::kRows);  // 4 (Q4_0) or 8 (Q8_0)
  uint8_t* qs = dst;
  uint16_t* scales = reinterpret_cast<uint16_t*>(dst + size_t(p.blocks) * p.qs_bytes_per_block);
  std::memset(dst, 0, p.group_bytes);
  for (int64_t b = 0; b < p.blocks; ++b) {
    uint8_t* qb = qs + size_t(b) * p.qs_bytes_per_block;
    for (int lane = 0; lane < lanes; ++lane) {
      const uint8_t* src;
      if (p.type == DType::Q4_0) {
        const BlockQ4_0* blk = block_at<BlockQ4_0>(w, r0 + lane, b);
        src = blk->qs;
        std::memcpy(&scales[b * PackedWeight::kRows + lane], &blk->d, 2);
      } else {
        const BlockQ8_0* blk = block_at<BlockQ8_0>(w, r0 + lane, b);
        src = reinterpret_cast<const uint8_t*>(blk->qs);
        std::memcpy(&scales[b * PackedWeight::kRows + lane], &blk->d, 2);
      }
      for (int j = 0; j < dwords; ++j) {
        uint8_t* out = qb + (size_t(j) * PackedWeight::kRows + size_t(lane)) * 4;
        std::memcpy(out, src + j * 4, 4);
        if (p.type == DType::Q8_0)
          for (int t = 0; t < 4; ++t) out[t] ^= 0x80;  // s8 -> u8 (value + 128)
      }
    }
  }
}

}  // namespace

void PackedWeight::Free::operator()(uint8_t* p) const { std::free(p); }

bool can_pack_for_decode(DType type) {
  return (type == DType::Q4_0 || type == DType::Q8_0 || type == DType::Q4_K || type == DType::Q6_K) &&
         detail::packed_decode_available();
}

uint8_t* PackedArena::allocate(size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  if (used_ + bytes > capacity_) {
    capacity_ = std::max(kArenaChunk, (bytes + kHugePage - 1) / kHugePage * kHugePage);
    chunks_.emplace_back(alloc_huge(capacity_));
    used_ = 0;
  }
  uint8_t* p = chunks_.back().get() + used_;
  used_ += bytes;
  return p;
}

std::unique_ptr<PackedWeight> pack_for_decode(ThreadPool& pool, const WeightView& w, PackedArena* arena) {
  const int64_t block = dtype_traits(w.type).block_size;
  if (!can_pack_for_decode(w.type) || w.rows <= 0 || w.cols <= 0 || w.cols % block != 0) return nullptr;
  auto p = std::make_unique<PackedWeight>();
  p->type = w.type;
  p->rows = w.rows;
  p->cols = w.cols;
  p->groups = (w.rows + PackedWeight::kRows - 1) / PackedWeight::kRows;
  p->blocks = w.cols / 32;
  p->qs_bytes_per_block = w.type == DType::Q8_0 || w.type == DType::Q6_K ? 512 : 256;
  // Per 32-column block 32 bytes of scales (fp16, or Q4_K's 6-bit scales and minimums), and for
  // Q4_K 64 bytes of fp16 d and dmin per super-block.
  const size_t raw = size_t(p->blocks) * (p->qs_bytes_per_block + PackedWeight::kRows * 2) +
                     (w.type == DType::Q4_K ? size_t(p->blocks / 8) * PackedWeight::kRows * 4 : 0) +
                     (w.type == DType::Q6_K ? size_t(p->blocks / 8) * PackedWeight::kRows * 2 : 0);
  p->group_bytes = (raw + 63) / 64 * 64;
  uint8_t* dst;
  if (arena) {
    dst = arena->allocate(p->bytes());
  } else {
    p->owned_.reset(alloc_huge(p->bytes()));
    dst = p->owned_.get();
  }
  p->data_ = dst;
  pool.parallel_for(size_t(p->groups), [&](size_t g0, size_t g1, int) {
    for (size_t g = g0; g < g1; ++g) {
      if (w.type == DType::Q4_K) {
        pack_group_q4_k(w, *p, int64_t(g), dst + g * p->group_bytes);
      } else if (w.type == DType::Q6_K) {
        pack_group_q6_k(w, *p, int64_t(g), dst + g * p->group_bytes);
      } else {
        pack_group(w, *p, int64_t(g), dst + g * p->group_bytes);
      }
    }
  });
  return p;
}

}  // namespace tandem::cpu
