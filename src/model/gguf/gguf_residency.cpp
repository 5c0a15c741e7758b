// release_resident(): handing back the pages of bytes a caller keeps its own copy of.
#include "model/gguf/gguf_residency.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "model/gguf/file_stat.h"
#include "model/gguf/gguf.h"

namespace tandem::gguf {
namespace {

struct OpenFiles {
  std::mutex mu;
  std::vector<const GgufFile*> files;
};

OpenFiles& open_files() {
  static OpenFiles* f = new OpenFiles();  // never destroyed: files may close during static teardown
  return *f;
}

}  // namespace

void register_open_file(const GgufFile* file) {
  OpenFiles& o = open_files();
  std::lock_guard<std::mutex> lock(o.mu);
  o.files.push_back(file);
}

void unregister_open_file(const GgufFile* file) {
  OpenFiles& o = open_files();
  std::lock_guard<std::mutex> lock(o.mu);
  o.files.erase(std::remove(o.files.begin(), o.files.end(), file), o.files.end());
}

size_t release_resident(const void* p, size_t n) {
  OpenFiles& o = open_files();
  // Held through the release: the file cannot close (and its copy unmap) underneath it.
  std::lock_guard<std::mutex> lock(o.mu);
  const uint8_t* q = static_cast<const uint8_t*>(p);
  for (const GgufFile* f : o.files) {
    const size_t released = f->release(q, n);
    if (released) return released;
  }
  return 0;
}

size_t GgufFile::release(const uint8_t* p, size_t n) const {
  if (!base_ || p < base_ || n > size_ || size_t(p - base_) > size_ - n) return 0;
  // Whole pages inside the range: a page shared with a neighbouring tensor stays.
  const size_t page = size_t(::sysconf(_SC_PAGESIZE)), begin = size_t(p - base_);
  const size_t a = (begin + page - 1) / page * page, b = (begin + n) / page * page;
  if (b <= a) return 0;
  if (mapped_) {
    // Untouched file pages of a private read-only mapping: dropping them only unmaps them here.
    return ::madvise(const_cast<uint8_t*>(base_) + a, b - a, MADV_DONTNEED) == 0 ? b - a : 0;
  }
  if (!owned_ || fd_ < 0) return 0;
  // The copy starts on a huge-page boundary at file offset 0, so every address in it sits at its
  // own file offset: a mapping of the file there shows the very same bytes. A transparent huge
  // page the range cuts is split; what remains of it holds the neighbours' bytes as before.
  struct stat st;
  if (::fstat(fd_, &st) != 0 || size_t(st.st_size) != size_ ||
      mtime_ns(st) != file_mtime_ns_)
    return 0;  // changed on disk: its pages are no longer these bytes
  // Mapped elsewhere first, then moved over the copy in one step: a failure leaves the copy whole.
  void* fresh = ::mmap(nullptr, b - a, PROT_READ, MAP_PRIVATE, fd_, off_t(a));
  if (fresh == MAP_FAILED) return 0;
  void* at = const_cast<uint8_t*>(base_) + a;
  if (::mremap(fresh, b - a, b - a, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED) {
    ::munmap(fresh, b - a);
    return 0;
  }
  return b - a;
}

}  // namespace tandem::gguf
