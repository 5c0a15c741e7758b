// The transformer as a short list of ops for one chunk of tokens: the unit the planner places
// on devices. Everything is described as device OpCalls over buffers of the shared memory pool,
// so any device (or a split across devices) can run any op.
#pragma once

#include <cstdint>
#include <span>
#include <vector>
#include <string>

#include "graph/op.h"
#include "model/model.h"
#include "core/memory_pool.h"

namespace tandem::graph {

// The activation buffers and KV cache a forward pass works in, all regions of one MemoryPool,
// sized for chunks of up to max_batch tokens and a cache of `context` positions. The activation
// slots may hold more rows than a chunk (slot_rows >= max_batch): room for a static-shape device
// to pad a chunk up to its next graph size in place.
struct Buffers {
  int max_batch = 0, context = 0;
  int slot_rows = 0;  // rows every activation slot holds (>= max_batch)
  float *x = nullptr, *xb = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *att = nullptr;
  float *gate = nullptr, *up = nullptr, *cos = nullptr, *sin = nullptr, *normed = nullptr;
  // The local layers' rotation where it differs from the global one (ModelConfig::has_local_rope);
  // else the same tables as cos / sin.
  float *cos_local = nullptr, *sin_local = nullptr;
  int32_t* ids = nullptr;
  // Independent sequences (a server's slots), each with a KV cache of its own; the activation
  // slots are shared, so one chunk can hold rows of several sequences (a batched decode step).
  int n_seq = 1;
  // Per sequence, then per layer (index seq * n_layers + layer): [context x kv_dim], [kv_dim x context]
  std::vector<float*> k_cache, v_cache;
  // Or a typed cache (capacity 0: the above): f16 / q8_0 token-major rows, or, where an npu owns
  // the KV, fp16 pages in the compiled layout.
  KvGeometry kv_pages{0, 1, 0, 0, KvLayout::kTokenMajor};
  std::vector<uint8_t*> k_pages, v_pages;  // as k_cache: kv_pages.bytes() and kv_pages.values().bytes()
  uint64_t kv_bytes = 0;                    // the whole cache, every layer, K and V
};

// Reserves the regions in `pool` (call before pool.allocate()); bind() fills the pointers after.
class BufferPlan {
 public:
  // slot_rows 0: max_batch. kv_pages: the KV cache's geometry (its capacity the context, its width
  // the model's kv_dim; kv_cache_geometry below) or capacity 0 for the host's fp32 caches.
  // n_seq: how many sequences hold a cache of their own (each `context` positions).
  BufferPlan(MemoryPool& pool, const ModelConfig& cfg, int max_batch, int context, int slot_rows = 0,
             KvGeometry kv_pages = {0, 1, 0, 0, KvLayout::kTokenMajor}, int n_seq = 1);
  Buffers bind(const MemoryPool& pool) const;

 private:
  int max_batch_, context_, slot_rows_, n_seq_;
  bool local_rope_ = false;
  size_t x_, xb_, q_, k_, v_, att_, gate_, up_, cos_, sin_, cos_local_ = 0, sin_local_ = 0, normed_, ids_;
  std::vector<size_t> k_cache_, v_cache_;
  KvGeometry kv_pages_;
  uint64_t kv_bytes_ = 0;
};

// The cache for K and V element types k, v over `context` tokens: capacity 0 (the host fp32
// layout: keys by row, values transposed, what every device reads) when both are f32, else
// token-major rows of those types. The error names the type a head width cannot hold.
Result<KvGeometry> kv_cache_geometry(const ModelConfig& cfg, int context, DType k, DType v);

// The cache in words for -v: "f16 keys, q8_0 values: token-major rows" (then `why`, if given).
std::string describe_kv(const KvGeometry& g, const std::string& why);

// Host-side preparation of a chunk: token ids into b.ids, rope angles for positions
// n_past.. into b.cos / b.sin (and b.cos_local / b.sin_local where local layers rotate apart).
void prepare_chunk(const ModelConfig& cfg, const Buffers& b, const int32_t* tokens, int n, int n_past);

// The ops of one forward chunk (n tokens at n_past), in order. The final norm and the logits
// matmul cover the last row only unless all_logits; logits go to `logits` (n_vocab per row).
// A matmul of a decoder layer (the ops a partition strategy may split between devices); the
// vocabulary projection stays whole.
bool is_layer_matmul(const Model& model, const OpCall& op);

std::vector<OpCall> build_forward(const Model& model, const Buffers& b, int n, int n_past,
                                           float* logits, bool all_logits);

// One sequence's part of a chunk that holds several: its rows [row, row + n) are its tokens at
// positions n_past.., which attend to that sequence's cache alone.
struct SequenceRows {
  int seq = 0;
  int row = 0;
  int n = 0;
  int n_past = 0;
  bool logits = false;  // the logits of its last row are wanted
};

// Host-side preparation of such a chunk: every part's ids and rope rows at its own positions.
void prepare_sequences(const ModelConfig& cfg, const Buffers& b, const int32_t* tokens,
                       std::span<const SequenceRows> parts);

// The ops of a chunk holding several sequences' rows: the projections and FFN run once over all
// rows (a batched decode step reads each weight once for every sequence), the cache append and
// attention per part. The logits of the parts that ask go to `logits`, one n_vocab row each, in
// the parts' order.
std::vector<OpCall> build_sequences_forward(const Model& model, const Buffers& b, std::span<const SequenceRows> parts,
                                            float* logits);

}  // namespace tandem::graph
