#include "core/memory_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tandem {

void MemoryPool::FreeDeleter::operator()(void* p) const { std::free(p); }

size_t MemoryPool::reserve(std::string name, size_t bytes, int reused_by_layers) {
  const size_t offset = total_;
  total_ += (bytes + kAlignment - 1) / kAlignment * kAlignment;
  regions_.push_back({std::move(name), offset, bytes, reused_by_layers});
  return regions_.size() - 1;
}

Status MemoryPool::allocate() {
  void* p = std::aligned_alloc(kAlignment, total_ == 0 ? kAlignment : total_);
  if (!p) {
    return IoError("memory pool: cannot allocate " + std::to_string(total_ >> 20) + " MiB");
  }
  std::memset(p, 0, total_);
  block_.reset(p);
  return Status::Ok();
}

void MemoryPool::allocate_address_space_only() {
  block_.reset();
  virtual_base_ = uintptr_t(1) << 44;  // far from anything the process maps
}

void* MemoryPool::get(size_t handle) const {
  if (virtual_base_) return reinterpret_cast<void*>(virtual_base_ + regions_[handle].offset);
  return static_cast<char*>(block_.get()) + regions_[handle].offset;
}

size_t MemoryPool::slot_count() const {
  size_t n = 0;
  for (const Region& r : regions_) n += r.reused_by_layers > 0;
  return n;
}

size_t MemoryPool::slot_bytes() const {
  size_t n = 0;
  for (const Region& r : regions_) n += r.reused_by_layers > 0 ? r.bytes : 0;
  return n;
}

int MemoryPool::slot_layers() const {
  int n = 0;
  for (const Region& r : regions_) n = std::max(n, r.reused_by_layers);
  return n;
}

std::string MemoryPool::describe() const {
  std::ostringstream s;
  for (const Region& r : regions_) {
    s << "  " << r.name << ": " << r.bytes << " bytes";
    if (r.reused_by_layers > 0) s << " (slot, reused by " << r.reused_by_layers << " layers)";
    s << "\n";
  }
  s << "  " << slot_count() << " activation slots (" << slot_bytes() << " bytes) reused across " << slot_layers()
    << " layers; " << regions_.size() << " regions, " << total_ << " bytes in one block";
  return s.str();
}

}  // namespace tandem
