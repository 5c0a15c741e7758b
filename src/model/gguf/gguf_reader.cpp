// GgufFile: opening (a huge-page copy or an mmap), lifetime, and lookups. The format checks live
// in gguf_parse.cpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>

#include "model/gguf/file_stat.h"
#include "model/gguf/gguf.h"
#include "model/gguf/gguf_format.h"
#include "model/gguf/gguf_residency.h"
#include "model/gguf/gguf_value_io.h"
#include "model/gguf/mapping_guard.h"
#include "model/gguf/str_cat.h"

namespace tandem::gguf {
namespace {

// Closes the descriptor on every return path; the mapping stays valid after close.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

constexpr size_t kHugePage = size_t(2) << 20;

std::atomic<Residency>& residency_state() {
  static std::atomic<Residency> r{[] {
    const char* e = std::getenv("TANDEM_MMAP");
    return e && std::strcmp(e, "1") == 0 ? Residency::kMap : Residency::kAuto;
  }()};
  return r;
}

// A copy must leave room for the page cache and everything else the run allocates.
bool fits_in_memory(size_t bytes) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 && bytes <= size_t(pages) * size_t(page) / 2;
}

// Anonymous memory of `rounded` bytes (a whole number of huge pages) starting on a huge-page
// boundary, advised for transparent huge pages; null when the kernel refuses. Mapped directly (not
// malloc'd) so release() can map file pages over parts of it and the destructor unmap it whole.
uint8_t* map_huge_aligned(size_t rounded) {
  void* p = ::mmap(nullptr, rounded + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) ::munmap(p, aligned - start);  // the unaligned head and tail go back
  if (start + kHugePage > aligned) ::munmap(reinterpret_cast<void*>(aligned + rounded), start + kHugePage - aligned);
#ifdef MADV_HUGEPAGE
  ::madvise(reinterpret_cast<void*>(aligned), rounded, MADV_HUGEPAGE);  // advice: without THP the copy still works
#endif
  return reinterpret_cast<uint8_t*>(aligned);
}

// Reads the whole file into fresh huge-page memory of `rounded` bytes; null with `error` set on
// failure.
uint8_t* read_into_huge_pages(int fd, size_t size, size_t rounded, const std::string& path, std::string& error) {
  uint8_t* dst = map_huge_aligned(rounded);
  if (!dst) {
    error = str_cat(path, ": read: cannot allocate ", uint64_t(size), " bytes");
    return nullptr;
  }
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, dst + done, std::min<size_t>(size - done, size_t(1) << 30), off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n == 0 ? str_cat(path, ": read: the file ended at byte ", uint64_t(done), " of ", uint64_t(size),
                               " (changed while reading?)")
                     : str_cat(path, ": read: failed at byte ", uint64_t(done), " (", errno_text(errno), ")");
      ::munmap(dst, rounded);
      return nullptr;
    }
    done += size_t(n);
  }
  return dst;
}

// Whether most of the tensor bytes are of block-quantized types (Q4_0 ... IQ4_XS): the cpu device
// repacks those into its own copy and reads the file's bytes once, so a huge-page copy of the file
// would only cost time (a 620 MB copy: 0.8-3 s of page faults and compaction against 0.3 s for the
// whole start-up from a mapping, measured on tinyllama Q4_0) and memory.
bool mostly_block_quantized(const std::vector<TensorInfo>& tensors) {
  uint64_t quantized = 0, all = 0;
  for (const TensorInfo& t : tensors) {
    all += t.n_bytes;
    if (dtype_traits(t.type).block_size > 1) quantized += t.n_bytes;
  }
  return quantized * 2 > all;
}

}  // namespace

Result<std::shared_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  // O_NONBLOCK: a FIFO would otherwise block open() until a writer came; the mode check below
  // refuses it. Reads of a regular file ignore the flag.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = str_cat(path, ": open: cannot open (", errno_text(err), ")");
    return err == ENOENT ? NotFound(msg) : IoError(msg);
  }
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return IoError(str_cat(path, ": stat: failed (", errno_text(errno), ")"));
  if (!S_ISREG(st.st_mode)) {
    return IoError(str_cat(path, ": open: not a regular file (mode ", uint32_t(st.st_mode), ")"));
  }

  std::shared_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  file->size_ = size_t(st.st_size);
  if (file->size_ > 0) {  // mmap rejects length 0; an empty file fails parse() with a clear message
    // Read-only private mapping: the weights are shared with the page cache, never written.
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return IoError(str_cat(path, ": mmap: failed (", errno_text(errno), ")"));
    file->base_ = static_cast<const uint8_t*>(p);
    file->mapped_ = true;
    file->guard_slot_ = guard_mapping(p, file->size_, path);
  }
  TANDEM_RETURN_IF_ERROR(file->parse());
  const Residency residency = default_residency();
  const bool copy = residency == Residency::kHugePages || residency == Residency::kRead ||
                    (residency == Residency::kAuto && !mostly_block_quantized(file->tensors_));
  if (file->size_ > 0 && copy && (residency == Residency::kRead || fits_in_memory(file->size_))) {
    std::string error;
    const size_t rounded = (file->size_ + kHugePage - 1) / kHugePage * kHugePage;
    uint8_t* bytes = read_into_huge_pages(fd, file->size_, rounded, path, error);
    if (!bytes) return IoError(error);
    for (TensorInfo& t : file->tensors_) t.data = bytes + (t.data - file->base_);
    unguard_mapping(file->guard_slot_);
    file->guard_slot_ = -1;
    ::munmap(const_cast<uint8_t*>(file->base_), file->size_);
    file->mapped_ = false;
    file->base_ = bytes;
    file->owned_ = true;
    file->owned_bytes_ = rounded;
    file->file_mtime_ns_ = mtime_ns(st);
    if (residency != Residency::kRead) {  // kRead: fd_ stays -1, so release() keeps the copy resident
      file->fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      if (file->fd_ >= 0) file->guard_slot_ = guard_mapping(bytes, file->size_, path);
    }
  }
  register_open_file(file.get());
  return file;
}

Result<std::shared_ptr<GgufFile>> GgufFile::from_memory(const uint8_t* data, size_t size,
                                                         std::string name) {
  std::shared_ptr<GgufFile> file(new GgufFile());
  file->path_ = std::move(name);
  file->base_ = data;
  file->size_ = data ? size : 0;
  TANDEM_RETURN_IF_ERROR(file->parse());
  return file;
}

GgufFile::~GgufFile() {
  unregister_open_file(this);
  unguard_mapping(guard_slot_);
  if (mapped_) ::munmap(const_cast<uint8_t*>(base_), size_);
  if (owned_) ::munmap(const_cast<uint8_t*>(base_), owned_bytes_);
  if (fd_ >= 0) ::close(fd_);
}

std::string GgufFile::residency_text() const {
  if (mapped_) return "mapped (shared with the page cache)";
  if (!owned_) return "in the caller's memory";
  return fd_ >= 0 ? "read into huge pages (weights the cpu repacks go back to the file's pages)"
                  : "read into huge pages (never mapped again)";
}

void set_default_residency(Residency r) { residency_state().store(r, std::memory_order_relaxed); }
Residency default_residency() { return residency_state().load(std::memory_order_relaxed); }

const Value* GgufFile::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status missing(const std::string& path, std::string_view key) {
  return NotFound(str_cat(path, ": key '", printable(key), "': missing"));
}

Status wrong_type(const std::string& path, std::string_view key, std::string_view expected,
                  const Value& found) {
  return InvalidArgument(str_cat(path, ": key '", printable(key), "': expected ", expected, " (",
                                 describe_value(found), ")"));
}

}  // namespace

Result<std::string> GgufFile::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(path_, key);
  if (const std::string* s = v->as_string()) return *s;
  return wrong_type(path_, key, "string", *v);
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(path_, key);
  if (auto i = v->as_int()) return *i;
  if (std::holds_alternative<uint64_t>(v->v)) return wrong_type(path_, key, "an integer that fits int64", *v);
  return wrong_type(path_, key, "an integer", *v);
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(path_, key);
  if (auto f = v->as_float()) return *f;
  if (auto i = v->as_int()) return double(*i);
  if (const uint64_t* u = std::get_if<uint64_t>(&v->v)) return double(*u);
  return wrong_type(path_, key, "a number", *v);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(path_, key);
  if (const bool* b = v->as_bool()) return *b;
  return wrong_type(path_, key, "bool", *v);
}

Result<const Array*> GgufFile::get_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(path_, key);
  if (const Array* a = v->as_array()) return a;
  return wrong_type(path_, key, "array", *v);
}

}  // namespace tandem::gguf
