#include "runtime/memory_pool.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tandem {

void MemoryPool::FreeDeleter::operator()(void* p) const { std::free(p); }

size_t MemoryPool::reserve(std::string name, size_t bytes) {
  const size_t offset = total_;
  total_ += (bytes + kAlignment - 1) / kAlignment * kAlignment;
  regions_.push_back({std::move(name), offset, bytes});
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

void* MemoryPool::get(size_t handle) const {
  return static_cast<char*>(block_.get()) + regions_[handle].offset;
}

std::string MemoryPool::describe() const {
  std::ostringstream s;
  for (const Region& r : regions_) s << "  " << r.name << ": " << r.bytes << " bytes\n";
  s << "  total: " << total_ << " bytes in one block";
  return s.str();
}

}  // namespace tandem
