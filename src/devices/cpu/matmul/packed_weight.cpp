// Builds the interleaved copy described in packed_weight.h. Plain byte moves (compiled with
// baseline flags): the kernels that read the layout live in gemv_int8_*_avx512.cpp.
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

// One 32-column block of one row in the packed form's terms: its quants as unsigned codes in
// element order, and the per-block and per-super-block values the kernel scales them with.
struct BlockCodes {
  uint8_t q[32];      // two-bit 0..3, three-bit 0..7, nibble 0..15, five-bit 0..31, byte 0..255
  uint16_t half[2];   // per-block fp16 (d, m)
  uint8_t byte[4];    // per-block bytes (scales and minimums, of the block or of its halves)
  uint16_t super[2];  // per-super-block fp16 (d, dmin)
};

// What a type keeps per block and super-block (packed_weight.h).
struct PackedForm {
  // 2 (two-bit fields), 3 (two-bit fields + third-bit masks), 4 (nibbles), 5 (nibbles + fifth-bit
  // masks), 6 (nibbles + two-bit fields of the top bits) or 8 (bytes)
  int code_bits;
  int halves, bytes, supers;
};

PackedForm form_of(DType t) {
  switch (t) {
    case DType::Q4_0: return {4, 1, 0, 0};
    case DType::Q8_0: return {8, 1, 0, 0};
    case DType::Q4_1: return {4, 2, 0, 0};
    case DType::Q5_0: return {5, 1, 0, 0};
    case DType::Q5_1: return {5, 2, 0, 0};
    case DType::IQ4_NL: return {4, 1, 0, 0};
    case DType::Q2_K: return {2, 0, 4, 2};
    case DType::Q3_K: return {3, 0, 2, 1};
    case DType::Q4_K: return {4, 0, 2, 2};
    case DType::Q5_K: return {5, 0, 2, 2};
    case DType::Q6_K: return {6, 0, 2, 1};
    case DType::IQ4_XS: return {4, 0, 1, 1};
    default: return {0, 0, 0, 0};
  }
}

// Q2_K / Q3_K's two-bit field of element e of a super-block: in each half (128 elements) byte l
// of the half's 32 holds elements l, l+32, l+64, l+96 in bits 0-1, 2-3, 4-5, 6-7.
int two_bits(const uint8_t* qs, int e) { return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

// Q3_K's 6-bit scale of 16-element sub-block j, minus 32 (ggml's unpacking of its 12 bytes).
int q3_k_scale(const uint8_t* scales, int j) {
  const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

uint32_t fifth_bits(const uint8_t* qh) { return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24; }

// Block b of a row (ggml's element orders, as the dequantizers in core/ read them).
void codes_of(DType t, const uint8_t* row, int64_t b, BlockCodes& c) {
  c = {};
  const int64_t s = b / 8;
  const int j = int(b % 8);  // sub-block within a 256-column super-block
  switch (t) {
    case DType::Q4_1: {
      const auto* blk = reinterpret_cast<const BlockQ4_1*>(row) + b;
      for (int e = 0; e < 16; ++e) c.q[e] = blk->qs[e] & 15, c.q[e + 16] = blk->qs[e] >> 4;
      std::memcpy(&c.half[0], &blk->d, 2);
      std::memcpy(&c.half[1], &blk->m, 2);
      return;
    }
    case DType::Q5_0:
    case DType::Q5_1: {
      const uint8_t* qs;
      uint32_t qh;
      if (t == DType::Q5_0) {
        const auto* blk = reinterpret_cast<const BlockQ5_0*>(row) + b;
        qs = blk->qs, qh = fifth_bits(blk->qh);
        std::memcpy(&c.half[0], &blk->d, 2);
      } else {
        const auto* blk = reinterpret_cast<const BlockQ5_1*>(row) + b;
        qs = blk->qs, qh = fifth_bits(blk->qh);
        std::memcpy(&c.half[0], &blk->d, 2);
        std::memcpy(&c.half[1], &blk->m, 2);
      }
      for (int e = 0; e < 16; ++e) {
        c.q[e] = uint8_t((qs[e] & 15) | ((qh >> e) & 1) << 4);
        c.q[e + 16] = uint8_t((qs[e] >> 4) | ((qh >> (e + 16)) & 1) << 4);
      }
      return;
    }
    case DType::IQ4_NL: {
      const auto* blk = reinterpret_cast<const BlockIQ4_NL*>(row) + b;
      for (int e = 0; e < 16; ++e) c.q[e] = blk->qs[e] & 15, c.q[e + 16] = blk->qs[e] >> 4;
      std::memcpy(&c.half[0], &blk->d, 2);
      return;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      // Sub-block j's 32 quants: the low (even j) or high (odd j) nibbles of qs[32 (j/2) ..];
      // Q5_K's fifth bit of element k is bit j of qh[k].
      const uint8_t *qs, *scales, *qh = nullptr;
      if (t == DType::Q4_K) {
        const auto* blk = reinterpret_cast<const BlockQ4_K*>(row) + s;
        qs = blk->qs, scales = blk->scales;
        std::memcpy(&c.super[0], &blk->d, 2);
        std::memcpy(&c.super[1], &blk->dmin, 2);
      } else {
        const auto* blk = reinterpret_cast<const BlockQ5_K*>(row) + s;
        qs = blk->qs, scales = blk->scales, qh = blk->qh;
        std::memcpy(&c.super[0], &blk->d, 2);
        std::memcpy(&c.super[1], &blk->dmin, 2);
      }
      k4_scale_min(scales, j, &c.byte[0], &c.byte[1]);
      for (int e = 0; e < 32; ++e) {
        const uint8_t byte = qs[(j / 2) * 32 + e];
        c.q[e] = (j & 1) ? uint8_t(byte >> 4) : uint8_t(byte & 15);
        if (qh) c.q[e] = uint8_t(c.q[e] | ((qh[e] >> j) & 1) << 4);
      }
      return;
    }
    case DType::Q2_K: {
      // Per 16 elements a 4-bit scale (low nibble) and minimum (high nibble): those of the
      // block's two halves.
      const auto* blk = reinterpret_cast<const BlockQ2_K*>(row) + s;
      std::memcpy(&c.super[0], &blk->d, 2);
      std::memcpy(&c.super[1], &blk->dmin, 2);
      for (int k = 0; k < 32; ++k) c.q[k] = uint8_t(two_bits(blk->qs, j * 32 + k));
      c.byte[0] = blk->scales[2 * j] & 15, c.byte[1] = blk->scales[2 * j + 1] & 15;
      c.byte[2] = blk->scales[2 * j] >> 4, c.byte[3] = blk->scales[2 * j + 1] >> 4;
      return;
    }
    case DType::Q3_K: {
      // Code = the two bits + 4 x the high bit (value code - 4); the halves' scales - 32 as int8.
      const auto* blk = reinterpret_cast<const BlockQ3_K*>(row) + s;
      std::memcpy(&c.super[0], &blk->d, 2);
      for (int k = 0; k < 32; ++k) {
        const int e = j * 32 + k;
        c.q[k] = uint8_t(two_bits(blk->qs, e) | ((blk->hmask[e % 32] >> (e / 32)) & 1) << 2);
      }
      c.byte[0] = uint8_t(int8_t(q3_k_scale(blk->scales, 2 * j)));
      c.byte[1] = uint8_t(int8_t(q3_k_scale(blk->scales, 2 * j + 1)));
      return;
    }
    case DType::Q6_K: {
      const auto* blk = reinterpret_cast<const BlockQ6_K*>(row) + s;
      std::memcpy(&c.super[0], &blk->d, 2);
      for (int k = 0; k < 32; ++k) {  // ggml's element order (dequantize_row_q6_k)
        const int e = j * 32 + k, half = e / 128, l = e % 32, quarter = (e % 128) / 32;
        const uint8_t lo_byte = blk->ql[half * 64 + l + (quarter & 1) * 32];
        const int lo = quarter < 2 ? lo_byte & 0xF : lo_byte >> 4;
        const int hi = (blk->qh[half * 32 + l] >> (2 * quarter)) & 3;
        c.q[k] = uint8_t(lo | (hi << 4));  // value q - 32
      }
      c.byte[0] = uint8_t(blk->scales[2 * j]);
      c.byte[1] = uint8_t(blk->scales[2 * j + 1]);
      return;
    }
    case DType::IQ4_XS: {
      const auto* blk = reinterpret_cast<const BlockIQ4_XS*>(row) + s;
      std::memcpy(&c.super[0], &blk->d, 2);
      const int code = ((blk->scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | ((blk->scales_h >> (2 * j)) & 3) << 4;
      c.byte[0] = uint8_t(int8_t(code - 32));
      const uint8_t* qs = blk->qs + j * 16;
      for (int e = 0; e < 16; ++e) c.q[e] = qs[e] & 15, c.q[e + 16] = qs[e] >> 4;
      return;
    }
    default: return;
  }
}

// One group of a type without a byte-copy packer (layout in packed_weight.h). Rows past the end
// get all-zero metadata (scale 0) and quants of value 0 (byte 128 for the byte types).
void pack_group_codes(const WeightView& w, const PackedWeight& p, int64_t g, uint8_t* dst) {
  constexpr int kR = PackedWeight::kRows;
  const PackedForm f = form_of(p.type);
  const int64_t r0 = g * kR;
  const int lanes = int(std::min<int64_t>(kR, w.rows - r0));
  const int64_t supers = p.blocks / 8;
  std::memset(dst, 0, p.group_bytes);
  uint8_t* meta = dst + size_t(p.blocks) * p.qs_bytes_per_block;
  uint8_t* super = meta + size_t(p.blocks) * p.meta_bytes_per_block;
  BlockCodes c;
  for (int64_t b = 0; b < p.blocks; ++b) {
    uint8_t* qb = dst + size_t(b) * p.qs_bytes_per_block;
    uint8_t* mb = meta + size_t(b) * p.meta_bytes_per_block;
    for (int lane = 0; lane < kR; ++lane) {
      if (lane < lanes) {
        codes_of(p.type, static_cast<const uint8_t*>(w.data) + size_t(r0 + lane) * w.row_bytes, b, c);
      } else {
        c = {};
        if (f.code_bits == 8) std::memset(c.q, 128, sizeof c.q);
      }
      // Element of byte t of a lane's dword in the v-th dword vector (int8_blocks_avx512.h).
      auto element = [](int v, int t) { return v < 4 ? 4 * v + t : 16 + 4 * (v - 4) + t; };
      if (f.code_bits == 8) {
        for (int k = 0; k < 32; ++k) qb[(size_t(k / 4) * kR + size_t(lane)) * 4 + size_t(k % 4)] = c.q[k];
      } else if (f.code_bits <= 3) {
        // Vector v = 4 z + k is bits 2k, 2k+1 of the bytes of zmm z.
        for (int v = 0; v < 8; ++v)
          for (int t = 0; t < 4; ++t)
            qb[size_t(v / 4) * 64 + size_t(lane) * 4 + size_t(t)] |= uint8_t((c.q[element(v, t)] & 3) << (2 * (v % 4)));
      } else {
        for (int d = 0; d < 4; ++d)
          for (int t = 0; t < 4; ++t)
            qb[(size_t(d) * kR + size_t(lane)) * 4 + size_t(t)] = uint8_t((c.q[4 * d + t] & 15) | (c.q[16 + 4 * d + t] & 15) << 4);
      }
      if (f.code_bits == 6)  // the top two bits as two-bit fields after the nibbles
        for (int v = 0; v < 8; ++v)
          for (int t = 0; t < 4; ++t)
            qb[256 + size_t(v / 4) * 64 + size_t(lane) * 4 + size_t(t)] |= uint8_t(((c.q[element(v, t)] >> 4) & 3) << (2 * (v % 4)));
      if (f.code_bits == 3 || f.code_bits == 5) {  // the top bit as masks after the low bits
        const int top = f.code_bits - 1;
        uint64_t* masks = reinterpret_cast<uint64_t*>(qb + (f.code_bits == 3 ? 128 : 256));
        for (int v = 0; v < 8; ++v)
          for (int t = 0; t < 4; ++t) masks[v] |= uint64_t((c.q[element(v, t)] >> top) & 1) << (4 * lane + t);
      }
      for (int k = 0; k < f.halves; ++k) std::memcpy(mb + k * 32 + lane * 2, &c.half[k], 2);
      for (int k = 0; k < f.bytes; ++k) mb[f.halves * 32 + k * 16 + lane] = c.byte[k];
      if (b % 8 == 0)
        for (int k = 0; k < f.supers; ++k) std::memcpy(super + (size_t(k) * size_t(supers) + size_t(b / 8)) * 32 + lane * 2, &c.super[k], 2);
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

bool can_pack_for_decode(DType type) { return form_of(type).code_bits != 0 && detail::packed_decode_available(); }

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
  const PackedForm f = form_of(w.type);
  constexpr size_t kQsBytes[] = {0, 0, 128, 192, 256, 320, 384, 0, 512};  // by code bits
  p->qs_bytes_per_block = kQsBytes[f.code_bits];
  p->meta_bytes_per_block = size_t(f.halves) * 32 + size_t(f.bytes) * 16;
  const size_t raw = size_t(p->blocks) * (p->qs_bytes_per_block + p->meta_bytes_per_block) +
                     size_t(p->blocks / 8) * size_t(f.supers) * 32;
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
      if (w.type == DType::Q4_0 || w.type == DType::Q8_0) {
        pack_group(w, *p, int64_t(g), dst + g * p->group_bytes);
      } else {
        pack_group_codes(w, *p, int64_t(g), dst + g * p->group_bytes);
      }
    }
  });
  return p;
}

}  // namespace tandem::cpu
