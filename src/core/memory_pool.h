// One allocation for everything a forward pass touches (KV cache, activations, scratch), sized
// up front from the model and the context, so steady-state generation never calls malloc and
// the total footprint is known before the first token. Devices that share memory with the host
// map this same block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace tandem {

class MemoryPool {
 public:
  // Phase 1: reserve named regions. Phase 2: allocate() once. Phase 3: get() pointers.
  // reused_by_layers > 0 marks an activation slot: one region every layer of the forward pass
  // works in, in turn (the pool holds a few slots, not a buffer per layer). Returns a handle.
  size_t reserve(std::string name, size_t bytes, int reused_by_layers = 0);
  Status allocate();
  // Gives every region an address with no memory behind it, for planning and simulation: the op
  // graph needs distinct, correctly laid out pointers that nobody dereferences.
  void allocate_address_space_only();
  void* get(size_t handle) const;
  template <class T>
  T* get_as(size_t handle) const { return static_cast<T*>(get(handle)); }

  size_t total_bytes() const { return total_; }
  size_t region_count() const { return regions_.size(); }
  size_t slot_count() const;        // regions reused across layers
  size_t slot_bytes() const;
  int slot_layers() const;          // the most layers any slot serves
  std::string describe() const;     // one line per region and a summary, for `--verbose`

  static constexpr size_t kAlignment = 64;  // a cache line; also what AVX-512 loads like

 private:
  struct Region {
    std::string name;
    size_t offset;
    size_t bytes;
    int reused_by_layers;
  };
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::vector<Region> regions_;
  size_t total_ = 0;
  std::unique_ptr<void, FreeDeleter> block_;
  uintptr_t virtual_base_ = 0;
};

}  // namespace tandem
