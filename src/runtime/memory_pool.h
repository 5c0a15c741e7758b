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
  size_t reserve(std::string name, size_t bytes);  // returns a handle
  Status allocate();
  void* get(size_t handle) const;
  template <class T>
  T* get_as(size_t handle) const { return static_cast<T*>(get(handle)); }

  size_t total_bytes() const { return total_; }
  size_t region_count() const { return regions_.size(); }
  std::string describe() const;  // one line per region, for `--verbose`

  static constexpr size_t kAlignment = 64;  // a cache line; also what AVX-512 loads like

 private:
  struct Region {
    std::string name;
    size_t offset;
    size_t bytes;
  };
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::vector<Region> regions_;
  size_t total_ = 0;
  std::unique_ptr<void, FreeDeleter> block_;
};

}  // namespace tandem
